import { createHash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, FreeObject, IdParams, Nullable, StringEnum } from '../schemas/common.js';
import { callSettingsProperties, PhoneInput, type CallSettings } from '../schemas/call.js';
import { CallSummary } from '../schemas/call-record.js';
import { normalizeCallSettings, toolResolver, type CallRequest } from '../schemas/call-request.js';
import { notFound } from '../errors.js';
import { assertValid } from './validation.js';
import { CallReferenceChecker } from './call-references.js';
import { isRecord } from '../domain/records.js';
import { toCallSummary } from '../calls/record.js';
import { stopCall } from '../calls/stop.js';
import { OPEN_STATES, type Call } from '../store/calls.js';
import type { BatchRow } from '../store/batches.js';
import { slicer } from '../slices.js';

const tags = ['Batches'];

/** Calls a batch may hold: each is stored and queued by the request that creates the batch. */
const MAX_CALLS = 10_000;

type Json = Record<string, unknown>;

/** One call of a batch: the shared settings, then the call's own (request_data merged key by key). */
function mergeCall(shared: Json, own: Json): Json {
  const requestData = { ...(isRecord(shared.request_data) ? shared.request_data : {}) };
  if (isRecord(own.request_data)) Object.assign(requestData, own.request_data);
  const metadata =
    isRecord(shared.metadata) || isRecord(own.metadata)
      ? { ...(isRecord(shared.metadata) ? shared.metadata : {}), ...(isRecord(own.metadata) ? own.metadata : {}) }
      : undefined;
  return { ...shared, ...own, request_data: requestData, ...(metadata ? { metadata } : {}) };
}

/**
 * Creates a batch: every call is checked first (nothing is created when one is wrong, each problem
 * named by its place), then stored with the batch's id as `batch_id` and queued like Send Call's
 * calls, in slices so that large batches leave the server responsive. The calls go out through the
 * same call engine and queue as every call, within the account's concurrent-call limit.
 */
async function createBatch(
  request: FastifyRequest,
  services: Services,
  accountId: string,
  calls: Json[],
  field: string,
  batch: { label: string | null; settings: Json },
  errors: string[],
): Promise<BatchRow> {
  const slice = slicer();
  const references = new CallReferenceChecker(services, accountId, { ownCarrier: false });
  const requests: CallRequest[] = [];
  for (let i = 0; i < calls.length; i++) {
    if (i % 100 === 0) await slice();
    const own: string[] = [];
    const normalized = await normalizeCallSettings(
      calls[i] as CallSettings & { phone_number?: unknown },
      toolResolver(services, accountId),
      own,
      { requirePhone: true, requireTask: true },
    );
    await references.check(normalized, own);
    errors.push(...own.map((e) => `${field}[${i}]: ${e}`));
    if (own.length === 0) requests.push(normalized as CallRequest);
  }
  // Only when every call was valid do the requests line up with their places.
  const blocked =
    errors.length > 0
      ? new Set<string>()
      : await services.blocked.blockedAmong(
          accountId,
          requests.map((r) => r.phone_number),
        );
  requests.forEach((r, i) => {
    if (blocked.has(r.phone_number))
      errors.push(`${field}[${i}]: phone_number ${r.phone_number} is on this account's blocked list`);
  });
  assertValid(request, errors);
  const id = services.batches.newId();
  const row = await services.batches.create(accountId, { id, ...batch, call_count: requests.length });
  for (let i = 0; i < requests.length; i++) {
    if (i % 100 === 0) await slice();
    const call = await services.calls.create(accountId, { request: requests[i]!, batch_id: id });
    await services.queue.enqueue(
      'dial',
      { call_id: call.id },
      call.scheduled_at ? { runAt: new Date(call.scheduled_at) } : {},
    );
  }
  return row;
}

/** Calls shown as a batch's `call_objects` preview in lists. */
const PREVIEW_CALLS = 5;

/**
 * What a batch looks like in lists and details: Openline's counters, and the hosted API's fields
 * (`id`, `description`, `base_prompt`, `call_params`, `call_objects`) that its clients read.
 */
async function present(services: Services, row: BatchRow, calls?: Call[]) {
  const counts = await services.batches.counts(row.account_id, row.id);
  const count = (states: readonly string[]) => states.reduce((n, s) => n + (counts[s] ?? 0), 0);
  const open = count(OPEN_STATES);
  const settings = JSON.parse(row.settings) as Json;
  const { base_prompt: basePrompt, ...callParams } = settings;
  const preview =
    calls?.slice(0, PREVIEW_CALLS) ??
    (await services.calls.list(row.account_id, { batch_id: row.id, ascending: true, limit: PREVIEW_CALLS }));
  return {
    batch_id: row.id,
    id: row.id,
    label: row.label,
    description: row.label,
    created_at: row.created_at,
    call_count: row.call_count,
    queued: count(['new', 'queued']),
    in_progress: count(['allocated', 'started']),
    completed: count(['complete']),
    failed: count(['complete_error', 'call_error', 'queue_error', 'pre_queue_error']),
    status: open > 0 ? (row.stopped_at ? 'stopping' : 'in_progress') : row.stopped_at ? 'stopped' : 'completed',
    settings,
    // A /v1 batch's prompt as sent; for a /v2 batch, as the hosted API shows it, its `global` as JSON.
    base_prompt: typeof basePrompt === 'string' ? basePrompt : JSON.stringify(settings),
    call_params: callParams,
    call_objects: preview.map((call) => ({ call_id: call.id, phone_number: call.to_number })),
  };
}

const BatchInfo = Type.Object({
  batch_id: Type.String(),
  id: Type.String({ description: 'The batch id again, as the hosted /v2 answers name it' }),
  label: Nullable(Type.String()),
  description: Nullable(Type.String({ description: 'The label, as the hosted /v2 answers name it' })),
  created_at: Type.String(),
  call_count: Type.Integer(),
  queued: Type.Integer(),
  in_progress: Type.Integer(),
  completed: Type.Integer({ description: 'Calls that ended (queue_status complete)' }),
  failed: Type.Integer({ description: 'Calls that ended in an error state' }),
  status: Type.String({ description: 'in_progress, completed, stopping or stopped' }),
  settings: FreeObject({ description: 'The settings every call shares, as sent' }),
  base_prompt: Type.String({ description: "/v1: the base_prompt sent; /v2: the batch's global settings as JSON" }),
  call_params: FreeObject({ description: 'The settings every call shares, without base_prompt' }),
  call_objects: Type.Array(Type.Object({ call_id: Type.String(), phone_number: Type.String() }), {
    description: `The first ${PREVIEW_CALLS} calls of the batch`,
  }),
});

/**
 * Stops every queued and live call of the batch. A batch whose calls have all ended is left as it
 * is (completed, not relabelled stopped).
 */
async function stopBatch(services: Services, accountId: string, id: string): Promise<number> {
  const open = [];
  for (const queue_status of OPEN_STATES) {
    open.push(
      ...(await services.calls.list(accountId, { batch_id: id, queue_status, ascending: true, limit: MAX_CALLS })),
    );
  }
  if (open.length === 0) return 0;
  await services.batches.markStopped(accountId, id);
  let stopped = 0;
  for (const call of open) if ((await stopCall(services, call)) === 'stopped') stopped++;
  return stopped;
}

async function batchOrThrow(services: Services, accountId: string, id: string): Promise<BatchRow> {
  const row = await services.batches.get(accountId, id);
  if (!row) throw notFound('Batch');
  return row;
}

/** The hosted list's paging: `limit` batches, after skipping `offset` of them (newest first). */
const ListPage = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Default 1000' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, description: 'Batches to skip; default 0' })),
});

/** One page of the account's batches, newest first, as the lists show them. */
async function listPage(services: Services, accountId: string, page: Static<typeof ListPage>) {
  const offset = page.offset ?? 0;
  const rows = await services.batches.list(accountId, offset + (page.limit ?? 1000));
  return Promise.all(rows.slice(offset).map((row) => present(services, row)));
}

/** A batch of the account and its calls, oldest first (404 for another account's). */
async function batchWithCalls(services: Services, accountId: string, id: string) {
  const row = await batchOrThrow(services, accountId, id);
  const calls = await services.calls.list(accountId, { batch_id: row.id, ascending: true, limit: MAX_CALLS });
  return { row, calls };
}

const V1Body = Type.Object(
  {
    ...callSettingsProperties,
    base_prompt: Type.Optional(
      Type.String({ description: 'The task of every call; {{variables}} come from call_data' }),
    ),
    label: Type.Optional(Type.String()),
    test_mode: Type.Optional(
      Type.Boolean({ description: 'Only the first entry of call_data is called (try the batch on yourself)' }),
    ),
    call_data: Type.Array(
      Type.Object(
        { phone_number: PhoneInput },
        { additionalProperties: true, description: 'phone_number, and variables for the prompt' },
      ),
      { minItems: 1, maxItems: MAX_CALLS },
    ),
  },
  { additionalProperties: true },
);

const AnalyzeBatchBody = Type.Object({
  goal: Type.String(),
  questions: Type.Array(Type.Array(Type.String(), { minItems: 1, maxItems: 2 }), { minItems: 1, maxItems: 50 }),
});

/** The hosted API's first batches (/v1/batches). */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/batches',
    {
      schema: {
        tags,
        summary: 'Send a batch of calls',
        description:
          'Every Send Call setting at the top level applies to every call; `base_prompt` is their task; each ' +
          'entry of `call_data` is one call: its phone_number, and its other keys as request_data variables.',
        body: V1Body,
        response: {
          200: Type.Object({ status: Type.Literal('success'), message: Type.String(), batch_id: Type.String() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { call_data, base_prompt, label, test_mode, ...shared } = request.body as Json & { call_data: Json[] };
      const settings: Json = { ...shared, ...(typeof base_prompt === 'string' ? { task: base_prompt } : {}) };
      // As the hosted API does: in test mode only the first call is made.
      const entries = test_mode === true ? call_data.slice(0, 1) : call_data;
      const calls = entries.map(({ phone_number, ...variables }) =>
        mergeCall(settings, { phone_number, request_data: variables }),
      );
      const row = await createBatch(
        request,
        services,
        request.account.id,
        calls,
        'call_data',
        { label: typeof label === 'string' ? label : null, settings: { base_prompt, ...shared } },
        [],
      );
      return { status: 'success' as const, message: 'success', batch_id: row.id };
    },
  );

  app.get(
    '/batches',
    {
      schema: {
        tags,
        summary: 'List batches',
        description: 'Newest first. The list is under `batches` and, as the hosted API answers, under `data`.',
        querystring: ListPage,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            batches: Type.Array(BatchInfo),
            data: Type.Array(BatchInfo),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const batches = await listPage(services, request.account.id, request.query);
      return { status: 'success' as const, batches, data: batches, errors: null };
    },
  );

  app.get(
    '/batches/:id',
    {
      schema: {
        tags,
        summary: 'Batch details',
        description: 'The batch and its calls (GET /v1/calls?batch_id= lists them too).',
        params: IdParams,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            batch: BatchInfo,
            calls: Type.Array(CallSummary),
            batch_params: Type.Object(
              {
                id: Type.String(),
                campaign_id: Type.Null(),
                label: Nullable(Type.String()),
                base_prompt: Type.String(),
                created_at: Type.String(),
                call_params: FreeObject(),
              },
              { description: 'The batch as the hosted API describes it' },
            ),
            call_data: Type.Array(CallSummary, { description: 'The calls again, under the hosted name' }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { row, calls } = await batchWithCalls(services, request.account.id, request.params.id);
      const batch = await present(services, row, calls);
      const summaries = calls.map(toCallSummary);
      const { id, label, base_prompt, created_at, call_params } = batch;
      return {
        status: 'success' as const,
        batch,
        calls: summaries,
        batch_params: { id, campaign_id: null, label, base_prompt, created_at, call_params },
        call_data: summaries,
      };
    },
  );

  app.post(
    '/batches/:id/stop',
    {
      schema: {
        tags,
        summary: 'Stop a batch',
        description: 'Cancels its queued calls and hangs up its live ones.',
        params: IdParams,
        response: {
          200: Type.Object({ status: Type.Literal('success'), message: Type.String(), num_calls: Type.Integer() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const row = await batchOrThrow(services, request.account.id, request.params.id);
      const stopped = await stopBatch(services, request.account.id, row.id);
      return { status: 'success' as const, message: 'Batch stopped', num_calls: stopped };
    },
  );

  app.post(
    '/batches/:id/analyze',
    {
      schema: {
        tags,
        summary: 'Analyze the calls of a batch',
        description:
          'The questions of Analyze Call over every ended call of the batch: answers by call id. Without a ' +
          'language model every answer is null.',
        params: IdParams,
        body: AnalyzeBatchBody,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            answers: Type.Record(Type.String(), Type.Array(Type.Unknown())),
            credits_used: Type.Number({ description: 'Always 0: no credits on a self-hosted server' }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { calls } = await batchWithCalls(services, request.account.id, request.params.id);
      const ended = calls.filter((c) => !(OPEN_STATES as readonly string[]).includes(c.queue_status));
      const { goal, questions } = request.body;
      const answers: Record<string, unknown[]> = {};
      for (const call of ended) {
        answers[call.id] = services.postCall.hasModel
          ? await services.postCall.analyze(call, goal, questions).catch(() => questions.map(() => null))
          : questions.map(() => null);
      }
      const message = services.postCall.hasModel
        ? `Analyzed ${ended.length} ended call(s) of the batch`
        : 'No language model is configured, so the questions were not answered: set OPENAI_API_KEY or OPENLINE_LLM_BASE_URL';
      return { status: 'success' as const, message, answers, credits_used: 0 };
    },
  );
}

const V2Body = Type.Object(
  {
    global: Type.Optional(
      Type.Object(callSettingsProperties, {
        additionalProperties: true,
        description: 'Send Call settings every call shares (task or pathway_id, never phone_number)',
      }),
    ),
    call_objects: Type.Array(
      Type.Object(
        { phone_number: PhoneInput, ...callSettingsProperties },
        { additionalProperties: true, description: 'One call: phone_number and any setting of its own' },
      ),
      { minItems: 1, maxItems: MAX_CALLS },
    ),
    label: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** The answer shape of the hosted API's /v2 endpoints: {data, errors}. */
const V2 = <T extends Parameters<typeof Type.Object>[0]>(data: T) =>
  Type.Object({ data: Type.Object(data), errors: Nullable(Type.Array(Type.String())) });

const BatchLogEntry = Type.Object({
  id: Type.String(),
  batch_id: Type.String(),
  org_id: Type.String({ description: "The batch's account" }),
  event_type: Type.String({ description: 'lifecycle (created, stopped) or complete (every call ended)' }),
  timestamp: Type.String(),
  payload: FreeObject({
    description: 'lifecycle: {message, state_change}; complete: {calls_total, calls_failed, calls_successful}',
  }),
});
type BatchLogEntry = Static<typeof BatchLogEntry>;

/** A stable id for one event of a batch, in the UUID form the hosted API's log ids have. */
function logId(batchId: string, event: string): string {
  const hex = createHash('sha256').update(`${batchId}:${event}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The events of a batch's life, oldest first, from what is stored: its creation (every call was
 * checked and queued then), its stop, and its completion once no call is open.
 */
function batchLog(row: BatchRow, calls: Call[]): BatchLogEntry[] {
  const entry = (event: string, event_type: string, timestamp: string, payload: Json): BatchLogEntry => ({
    id: logId(row.id, event),
    batch_id: row.id,
    org_id: row.account_id,
    event_type,
    timestamp,
    payload,
  });
  const n = row.call_count;
  const log = [
    entry('created', 'lifecycle', row.created_at, {
      message: `Requested: ${n}. Validated: ${n}. Dispatched: ${n}.`,
      state_change: 'in_progress',
    }),
  ];
  if (row.stopped_at) {
    log.push(entry('stopped', 'lifecycle', row.stopped_at, { message: 'Batch stopped', state_change: 'stopped' }));
  }
  if (calls.every((c) => !(OPEN_STATES as readonly string[]).includes(c.queue_status))) {
    const failed = calls.filter((c) => c.queue_status !== 'complete').length;
    const ends = calls.map((c) => c.ended_at ?? c.updated_at).sort();
    log.push(
      entry('complete', 'complete', ends.at(-1) ?? row.created_at, {
        calls_total: n,
        calls_failed: failed,
        calls_successful: calls.length - failed,
      }),
    );
  }
  return log.sort((a, b) => a.timestamp.localeCompare(b.timestamp));
}

/** The hosted API's newer batches (/v2/batches). */
export async function batchesV2(app: Api, services: Services): Promise<void> {
  app.post(
    '/batches/create',
    {
      schema: {
        tags,
        summary: 'Create a batch (v2)',
        description: '`global` holds what every call shares; each of `call_objects` is one call with its own settings.',
        body: V2Body,
        response: { 200: V2({ batch_id: Type.String() }), ...errorResponses },
      },
    },
    async (request) => {
      const { global = {}, call_objects, label } = request.body as Json & { global?: Json; call_objects: Json[] };
      const { phone_number: _ignored, ...shared } = global;
      const calls = call_objects.map((own) => mergeCall(shared, own));
      const row = await createBatch(
        request,
        services,
        request.account.id,
        calls,
        'call_objects',
        { label: typeof label === 'string' ? label : null, settings: shared },
        [],
      );
      return { data: { batch_id: row.id }, errors: null };
    },
  );

  app.get(
    '/batches/list',
    {
      schema: {
        tags,
        summary: 'List batches (v2)',
        description: 'Newest first.',
        querystring: ListPage,
        response: {
          200: Type.Object({ data: Type.Array(BatchInfo), errors: Nullable(Type.Array(Type.String())) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ data: await listPage(services, request.account.id, request.query), errors: null }),
  );

  app.get(
    '/batches/:id',
    {
      schema: {
        tags,
        summary: 'Batch details (v2)',
        params: IdParams,
        response: { 200: V2({ ...BatchInfo.properties, calls: Type.Array(CallSummary) }), ...errorResponses },
      },
    },
    async (request) => {
      const { row, calls } = await batchWithCalls(services, request.account.id, request.params.id);
      return { data: { ...(await present(services, row, calls)), calls: calls.map(toCallSummary) }, errors: null };
    },
  );

  app.get(
    '/batches/:id/logs',
    {
      schema: {
        tags,
        summary: 'Batch logs (v2)',
        description:
          'The events of the batch: `lifecycle` when it was created (and stopped), `complete` once every call ' +
          'ended, with its counts. Newest first unless `direction=asc`; `skip` and `take` page them.',
        params: IdParams,
        querystring: Type.Object({
          take: Type.Optional(Type.Integer({ minimum: 0 })),
          skip: Type.Optional(Type.Integer({ minimum: 0 })),
          direction: Type.Optional(StringEnum(['asc', 'desc'] as const)),
        }),
        response: {
          200: Type.Object({ data: Type.Array(BatchLogEntry), errors: Nullable(Type.Array(Type.String())) }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { row, calls } = await batchWithCalls(services, request.account.id, request.params.id);
      const { take, skip = 0, direction = 'desc' } = request.query;
      const log = batchLog(row, calls);
      if (direction === 'desc') log.reverse();
      return { data: log.slice(skip, take === undefined ? undefined : skip + take), errors: null };
    },
  );

  app.post(
    '/batches/:id/stop',
    {
      schema: {
        tags,
        summary: 'Stop a batch (v2)',
        params: IdParams,
        response: { 200: V2({ batch_id: Type.String(), num_calls: Type.Integer() }), ...errorResponses },
      },
    },
    async (request) => {
      const row = await batchOrThrow(services, request.account.id, request.params.id);
      const stopped = await stopBatch(services, request.account.id, row.id);
      return { data: { batch_id: row.id, num_calls: stopped }, errors: null };
    },
  );
}
