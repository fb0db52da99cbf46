import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { ErrorResponse, IdParams, Nullable, StringEnum, SuccessMessage, errorResponses } from '../schemas/common.js';
import { SendCallBody } from '../schemas/call.js';
import { CallRecord, CallSummary, QUEUE_STATUSES } from '../schemas/call-record.js';
import { ANSWERED_BY } from '../amd/answered-by.js';
import { normalizeCallSettings, toolResolver, type CallRequest, type PersonaRoute } from '../schemas/call-request.js';
import { overlaySettings, personaSettings } from '../schemas/persona.js';
import { normalizeQueryPhone } from '../domain/phone.js';
import { ApiError, conflict, notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
import { credentialFromHeader, encryptedKeyHeader } from '../security/credentials.js';
import { CallReferenceChecker } from './call-references.js';
import { toCallRecord, toCallSummary } from '../calls/record.js';
import { stopCall } from '../calls/stop.js';
import { OPEN_STATES, type Call, type CallFilter } from '../store/calls.js';
import { LAST_EVENT } from '../calls/events.js';
import { errorMessage } from '../domain/records.js';
import { OpenPerAccount } from './open-per-account.js';

/**
 * Event streams an account may hold open at once (in this process): each reads its call every
 * second, so a key's few thousand requests a minute must not leave thousands of them reading.
 */
export const MAX_EVENT_STREAMS = 100;
/** How long an event stream waits, at most, for a call's last event once it sees the call ended. */
const END_WAIT_MS = 250;
const END_WAITS = 12;

const tags = ['Calls'];

const ListQuery = Type.Object({
  to_number: Type.Optional(Type.String()),
  from_number: Type.Optional(Type.String()),
  batch_id: Type.Optional(Type.String()),
  campaign_id: Type.Optional(Type.String()),
  answered_by: Type.Optional(StringEnum(ANSWERED_BY)),
  queue_status: Type.Optional(
    StringEnum([...QUEUE_STATUSES, 'completed'], {
      description: '`completed` (the status of a call that ended well) is `complete`',
    }),
  ),
  completed: Type.Optional(Type.Boolean({ description: 'Ended (true) or still queued, ringing or live (false)' })),
  created_after: Type.Optional(Type.String({ description: 'ISO 8601 date or time' })),
  created_before: Type.Optional(Type.String({ description: 'ISO 8601 date or time' })),
  // The hosted API's names for the same window, both ends included.
  start_date: Type.Optional(Type.String({ description: 'Created at or after (ISO 8601 date or time)' })),
  end_date: Type.Optional(
    Type.String({
      description: 'Created at or before (ISO 8601; a date alone is its midnight UTC, so that day is not included)',
    }),
  ),
  created_at: Type.Optional(
    Type.String({ description: 'Created on this day (UTC; a date, or a time whose day is meant)' }),
  ),
  inbound: Type.Optional(Type.Boolean()),
  pathway_id: Type.Optional(Type.String({ description: 'Calls that follow this pathway' })),
  duration_gt: Type.Optional(Type.Number({ description: 'call_length (minutes) above this' })),
  duration_lt: Type.Optional(Type.Number({ description: 'call_length (minutes) below this' })),
  ascending: Type.Optional(Type.Boolean({ description: 'Oldest first; default newest first' })),
  sort_by: Type.Optional(
    Type.String({
      description: 'Taken as sent; calls always come in order of creation (`ascending` for oldest first)',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 1000 })),
  cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page' })),
  // The hosted API's range: from (inclusive) and to (exclusive) positions in the sorted result.
  from: Type.Optional(Type.Integer({ minimum: 0, description: 'Skip this many calls (the hosted range start)' })),
  to: Type.Optional(Type.Integer({ minimum: 0, description: 'Stop before this position (the hosted range end)' })),
});

const AnalyzeBody = Type.Object(
  {
    goal: Type.String({ minLength: 1 }),
    questions: Type.Array(
      Type.Union([Type.Array(Type.String(), { minItems: 1, maxItems: 2 }), Type.String({ minLength: 1 })]),
      {
        minItems: 1,
        description:
          '[[question, answer type]]; a question given alone (a string, or [question]) is answered as a string',
      },
    ),
  },
  { additionalProperties: true },
);

function encodeCursor(created_at: string, id: string): string {
  return Buffer.from(`${created_at}|${id}`).toString('base64url');
}

function decodeCursor(cursor: string): { created_at: string; id: string } {
  const [created_at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!created_at || !id || Number.isNaN(Date.parse(created_at)))
    throw validationError(['cursor is not a cursor of this list']);
  return { created_at, id };
}

/** A time parameter as an exclusive bound: `shiftMs` moves it (an inclusive end made exclusive). */
function isoParam(value: string | undefined, field: string, errors: string[], shiftMs = 0): string | undefined {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  if (Number.isNaN(time)) {
    errors.push(`${field} must be an ISO 8601 date or time`);
    return undefined;
  }
  return new Date(time + shiftMs).toISOString();
}

/** The hosted `created_at` filter: the UTC day of the value, as exclusive bounds around it. */
function dayParam(value: string | undefined, errors: string[]): { after?: string; before?: string } {
  if (value === undefined) return {};
  const time = Date.parse(value);
  if (Number.isNaN(time)) {
    errors.push('created_at must be an ISO 8601 date or time');
    return {};
  }
  const midnight = Date.parse(new Date(time).toISOString().slice(0, 10));
  return {
    after: new Date(midnight - 1).toISOString(),
    before: new Date(midnight + 86_400_000).toISOString(),
  };
}

/** The later of two ISO times (either may be absent). */
const later = (a?: string, b?: string) => (a === undefined || (b !== undefined && b > a) ? b : a);
/** The earlier of two ISO times (either may be absent). */
const earlier = (a?: string, b?: string) => (a === undefined || (b !== undefined && b < a) ? b : a);

const written = new WeakMap<object, string>();

/** How call records name this server: its public URL and endpoint_url. */
const recordOptionsOf = (services: Services) => ({
  publicUrl: services.config.publicUrl,
  endpointUrl: services.config.endpointUrl,
});

/** JSON of a record object, kept while that object lives (records of unchanged calls are reused). */
function stringifyOnce(data: unknown): string {
  if (typeof data !== 'object' || data === null) return JSON.stringify(data);
  let text = written.get(data);
  if (text === undefined) {
    text = JSON.stringify(data);
    written.set(data, text);
  }
  return text;
}

/**
 * A Send Call body with its persona's production version filling in what it does not set (and
 * the persona's tools and knowledge bases before its own); a persona not of the account is a
 * problem in `errors`.
 */
async function withPersonaOf(
  services: Services,
  accountId: string,
  body: SendCallBody,
  errors: string[],
): Promise<SendCallBody & { persona_routes?: PersonaRoute[] }> {
  if (typeof body.persona_id !== 'string' || body.persona_id.trim() === '') return body;
  const persona = await services.personas.get(accountId, body.persona_id.trim());
  if (!persona) {
    errors.push('persona_id is not a persona of this account');
    return body;
  }
  const settings = personaSettings(persona.production);
  return {
    ...overlaySettings(settings, body),
    persona_id: persona.id,
    persona_routes: settings.persona_routes,
  };
}

/** Calls: seed 4.1-4.3 and CONTRACT.md sections 5 and 9. */
export default async function routes(app: Api, services: Services): Promise<void> {
  const recordOptions = recordOptionsOf(services);

  app.post(
    '/calls',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Send Call',
        description:
          'Places an outbound AI call (seed 4.1). Every problem of the body is reported at once in `errors`.',
        body: SendCallBody,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            call_id: Type.String(),
            batch_id: Nullable(Type.String()),
            warnings: Type.Optional(
              Type.Array(Type.String(), {
                description: 'Present when the call differs from the request (an unknown voice)',
              }),
            ),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const errors: string[] = [];
      const accountId = request.account.id;
      const body = await withPersonaOf(services, accountId, (request.body ?? {}) as SendCallBody, errors);
      const normalized = await normalizeCallSettings(body, toolResolver(services, accountId), errors, {
        requirePhone: true,
        // A persona gives the task; one that is not the account's is its own problem.
        requireTask: !(typeof body.persona_id === 'string' && body.persona_id.trim() !== ''),
      });
      const ownCarrier = encryptedKeyHeader(request) !== undefined;
      await new CallReferenceChecker(services, accountId, { ownCarrier }).check(normalized, errors);
      if (normalized.phone_number && (await services.blocked.get(accountId, normalized.phone_number))) {
        errors.push(
          `phone_number ${normalized.phone_number} is on this account's blocked list (DELETE /v1/blocked_numbers/{number} unblocks it)`,
        );
      }
      assertValid(request, errors);
      const credential = await credentialFromHeader(request, services);
      const call = await services.calls.create(accountId, {
        request: normalized as CallRequest,
        credential_id: credential?.encrypted_key ?? null,
        // The account's own carrier from the start, even when the call never reaches it.
        ...(credential && { carrier: credential.provider }),
      });
      await services.queue.enqueue(
        'dial',
        { call_id: call.id },
        call.scheduled_at ? { runAt: new Date(call.scheduled_at) } : {},
      );
      return {
        status: 'success' as const,
        message: 'Call successfully queued.',
        call_id: call.id,
        batch_id: call.batch_id,
        ...(normalized.warnings?.length ? { warnings: normalized.warnings } : {}),
      };
    },
  );

  app.get(
    '/calls',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'List calls',
        description: 'Newest first unless ascending=true. Pass next_cursor as cursor for the next page.',
        querystring: ListQuery,
        response: {
          200: Type.Object({
            count: Type.Integer({ description: 'Calls in this page' }),
            total_count: Type.Integer({ description: 'Calls that match the filters, over all pages' }),
            calls: Type.Array(CallSummary),
            next_cursor: Nullable(Type.String()),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const q = request.query;
      const errors: string[] = [];
      const phone = (field: 'to_number' | 'from_number'): string | undefined => {
        const value = q[field];
        if (value === undefined) return undefined;
        const r = normalizeQueryPhone(value);
        if (!r.ok) errors.push(`${field} ${r.reason}`);
        return r.ok ? r.e164 : undefined;
      };
      const day = dayParam(q.created_at, errors);
      const filter: CallFilter = {
        to_number: phone('to_number'),
        from_number: phone('from_number'),
        batch_id: q.batch_id,
        campaign_id: q.campaign_id,
        answered_by: q.answered_by,
        queue_status: q.queue_status === 'completed' ? 'complete' : q.queue_status,
        completed: q.completed,
        // Exclusive bounds: start_date's time is included (one ms before it), and so is end_date's
        // (one ms after it). A date alone is its midnight (UTC): as on the hosted API, whose clients
        // ask for one day's calls with start_date=D&end_date=D+1, that next day is not included.
        created_after: later(
          later(isoParam(q.created_after, 'created_after', errors), isoParam(q.start_date, 'start_date', errors, -1)),
          day.after,
        ),
        created_before: earlier(
          earlier(isoParam(q.created_before, 'created_before', errors), isoParam(q.end_date, 'end_date', errors, 1)),
          day.before,
        ),
        inbound: q.inbound,
        pathway_id: q.pathway_id,
        longer_than: q.duration_gt,
        shorter_than: q.duration_lt,
        ascending: q.ascending ?? false,
        // One more than asked, to know whether a next page exists.
        limit: Math.max(0, Math.min(q.limit ?? 1000, q.to === undefined ? Infinity : q.to - (q.from ?? 0))) + 1,
        ...(q.from !== undefined && { offset: q.from }),
      };
      assertValid(request, errors);
      if (q.cursor) filter.after = decodeCursor(q.cursor);
      const [rows, total] = await Promise.all([
        services.calls.list(request.account.id, filter),
        services.calls.count(request.account.id, filter),
      ]);
      const page = rows.slice(0, filter.limit - 1);
      const last = page[page.length - 1];
      const more = rows.length > page.length && last !== undefined;
      return {
        count: page.length,
        total_count: total,
        calls: page.map(toCallSummary),
        next_cursor: more ? encodeCursor(last.created_at, last.id) : null,
      };
    },
  );

  app.get(
    '/calls/active',
    {
      schema: {
        tags,
        summary: 'List active calls',
        description: 'The calls of the account that are queued (scheduled ones too), ringing or live, newest first.',
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            count: Type.Integer(),
            calls: Type.Array(CallSummary),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const open = await Promise.all(
        OPEN_STATES.map((queue_status) =>
          services.calls.list(request.account.id, { queue_status, ascending: false, limit: 1000 }),
        ),
      );
      const calls = open
        .flat()
        .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id))
        .map(toCallSummary);
      return { status: 'success' as const, count: calls.length, calls };
    },
  );

  app.post(
    '/calls/active/stop',
    {
      schema: {
        tags,
        summary: 'Stop all active calls',
        description: 'Stops every queued, scheduled and live call of the account.',
        response: {
          200: Type.Object({ status: Type.Literal('success'), message: Type.String(), num_calls: Type.Integer() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const open = await services.calls.listOpen(request.account.id);
      let stopped = 0;
      for (const call of open) if ((await stopCall(services, call)) === 'stopped') stopped++;
      return {
        status: 'success' as const,
        message: 'Stopping active calls. This may take some time...',
        num_calls: stopped,
      };
    },
  );

  app.get(
    '/calls/:id',
    {
      schema: { tags, summary: 'Call Details', params: IdParams, response: { 200: CallRecord, ...errorResponses } },
      // The record is built to its schema; plain JSON.stringify writes it faster than the schema
      // serializer does for its free-form parts, and an unchanged record is written once.
      serializerCompiler: () => stringifyOnce,
    },
    async (request) => {
      const call = await services.calls.get(request.account.id, request.params.id);
      if (!call) throw notFound('Call');
      return toCallRecord(call, await services.calls.transcripts(call.id), recordOptions);
    },
  );

  app.post(
    '/calls/:id/stop',
    {
      schema: {
        tags,
        summary: 'Stop a call',
        description: 'Cancels a scheduled or queued call, or hangs up a live one. 409 when the call already ended.',
        params: IdParams,
        response: { 200: SuccessMessage, 409: ErrorResponse, ...errorResponses },
      },
    },
    async (request) => {
      const call = await services.calls.get(request.account.id, request.params.id);
      if (!call) throw notFound('Call');
      if (
        !(OPEN_STATES as readonly string[]).includes(call.queue_status) ||
        (await stopCall(services, call)) === 'ended'
      ) {
        throw conflict('Call has already ended');
      }
      return { status: 'success' as const, message: 'Call ended successfully.' };
    },
  );

  // The hosted API names it GET /v1/event_stream/{call_id}.
  const streams = new OpenPerAccount(MAX_EVENT_STREAMS);
  for (const url of ['/calls/:id/events', '/event_stream/:id']) {
    app.get(
      url,
      {
        schema: {
          tags,
          summary: "A call's events",
          description:
            "The call's events so far, as a JSON list, oldest first: `level` is the event's kind (`queue`, " +
            '`call`, `tool`, `dynamic_data`, `latency`: the webhook_events categories), `category` is `info`, ' +
            '`performance` (latency) or `error`, with `message`, `call_id` and `timestamp`, as the hosted event ' +
            'stream answers. Asked for `text/event-stream` (the Accept header, as a browser EventSource sends ' +
            'it), server-sent events until the call ends instead: `status` (queue_status and status, at once and ' +
            'on each change), `transcript` (each new line), the event kinds as they happen in the process ' +
            'running the call (their data carries `category`: the kind, `level` and `timestamp`), and `end` with ' +
            'the final status. Comment lines keep the connection alive every 15 s.',
          params: IdParams,
          response: {
            200: Type.Union([
              Type.Array(
                Type.Object({
                  id: Type.Integer(),
                  call_id: Type.String(),
                  level: Type.String({ description: 'queue, call, tool, dynamic_data or latency' }),
                  category: StringEnum(['info', 'performance', 'error'] as const),
                  log_level: Type.String(),
                  message: Type.String(),
                  timestamp: Type.String(),
                }),
              ),
              Type.Unsafe<NodeJS.ReadableStream>({ type: 'string', description: 'text/event-stream' }),
            ]),
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        const accountId = request.account.id;
        const first = await services.calls.get(accountId, request.params.id);
        if (!first) throw notFound('Call');
        if (!/\btext\/event-stream\b/i.test(request.headers.accept ?? ''))
          return (await services.calls.events(first.id)).map((event) => ({
            id: event.id,
            call_id: event.call_id,
            level: event.category,
            category:
              event.log_level === 'error'
                ? ('error' as const)
                : event.category === 'latency'
                  ? ('performance' as const)
                  : ('info' as const),
            log_level: event.log_level,
            message: event.message,
            timestamp: event.at,
          }));
        const release = streams.take(accountId);
        if (!release)
          throw new ApiError(
            'RATE_LIMITED',
            `an account has at most ${MAX_EVENT_STREAMS} event streams open at once: close one first`,
          );
        const stream = new PassThrough();
        const send = (event: string, data: unknown) => {
          if (!stream.writableEnded) stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        };
        let lastLine = 0;
        let lastEvent = 0;
        let lastStatus = '';
        let timer: NodeJS.Timeout | undefined;
        let polling = false;
        let again = false;
        // A call's last event ("Closing call stream.") is recorded just after its
        // status: a stream that saw the call open waits a moment for it before it ends.
        const openAtStart = (OPEN_STATES as readonly string[]).includes(first.queue_status);
        let endEventSeen = false;
        let endWaits = 0;
        // An event of the call in this process: its status, transcript and events are read at once.
        const unsubscribe = services.callEvents.subscribe(first.id, () => {
          if (polling) again = true;
          else {
            clearTimeout(timer);
            void poll().catch(finish);
          }
        });
        const finish = () => {
          clearTimeout(timer);
          clearInterval(keepAlive);
          unsubscribe();
          release();
          if (!stream.writableEnded) stream.end();
        };
        const keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), 15_000);
        const poll = async (): Promise<void> => {
          polling = true;
          again = false;
          const call = await services.calls.get(accountId, first.id);
          if (!call) return finish();
          for (const line of await services.calls.transcripts(call.id)) {
            if (line.id <= lastLine) continue;
            lastLine = line.id;
            send('transcript', { id: line.id, created_at: line.created_at, user: line.user, text: line.text });
          }
          const status = `${call.queue_status}/${call.status}`;
          if (status !== lastStatus) {
            lastStatus = status;
            send('status', { call_id: call.id, queue_status: call.queue_status, status: call.status });
          }
          // Every stored event, from the call's first (a stream opened late misses none, whichever
          // process ran the call); `level` and `timestamp` are the hosted names for category and at.
          for (const { id, ...event } of await services.calls.events(call.id, lastEvent)) {
            lastEvent = id;
            send(event.category, { ...event, level: event.category, timestamp: event.at });
            if (event.category === 'call' && event.message === LAST_EVENT) endEventSeen = true;
          }
          if (!(OPEN_STATES as readonly string[]).includes(call.queue_status)) {
            if (openAtStart && !endEventSeen && endWaits++ < END_WAITS) {
              polling = false;
              timer = setTimeout(() => void poll().catch(finish), again ? 0 : END_WAIT_MS);
              return;
            }
            send('end', { call_id: call.id, queue_status: call.queue_status, status: call.status });
            return finish();
          }
          polling = false;
          if (stream.writableEnded) return;
          timer = setTimeout(() => void poll().catch(finish), again ? 0 : 1000);
        };
        reply.raw.on('close', finish);
        void poll().catch(finish);
        return reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('x-accel-buffering', 'no')
          .send(stream);
      },
    );
  }

  app.get(
    '/calls/:id/correct',
    {
      schema: {
        tags,
        summary: 'Get the corrected transcript',
        description:
          'The transcript as timed segments, as the hosted API answers it: `corrected` (start and end in ' +
          'seconds from the answer, speaker 1 the other side and 2 the agent) and the older `aligned` form. ' +
          "Openline's transcript is already final, so the segments are its lines.",
        params: IdParams,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            corrected: Type.Array(
              Type.Object({
                start: Type.Number(),
                end: Type.Number(),
                text: Type.String(),
                speaker: Type.Integer({ description: '1: the other side, 2: the agent' }),
                speaker_label: Type.String({ description: 'user or assistant' }),
                confidence: Nullable(Type.Number(), {
                  description: '1 for the agent (its own words); null where the recogniser gave none',
                }),
              }),
            ),
            aligned: Type.Array(
              Type.Object({
                id: Type.Integer({ description: 'The line of the call record transcripts' }),
                created_at: Type.String(),
                speaker: Type.String(),
                user: Type.String({ description: 'The role, as the hosted docs name it (same as speaker)' }),
                text: Type.String(),
                c_id: Type.String({ description: 'The call id' }),
              }),
            ),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const call = await services.calls.get(request.account.id, request.params.id);
      if (!call) throw notFound('Call');
      const lines = (await services.calls.transcripts(call.id)).filter(
        (t) => t.user === 'user' || t.user === 'assistant',
      );
      const origin = Date.parse(call.started_at ?? call.created_at);
      const seconds = (iso: string) => Math.max(0, Math.round(Date.parse(iso) - origin) / 1000);
      const callEnd = call.ended_at ? seconds(call.ended_at) : undefined;
      const corrected = lines.map((line, i) => {
        const start = seconds(line.created_at);
        const next = lines[i + 1];
        return {
          start,
          end: Math.max(start, next ? seconds(next.created_at) : (callEnd ?? start)),
          text: line.text,
          speaker: line.user === 'assistant' ? 2 : 1,
          speaker_label: line.user,
          confidence: line.user === 'assistant' ? 1 : null,
        };
      });
      // The hosted docs' aligned lines are transcript lines ({id, created_at, text, user, c_id});
      // `speaker` is kept for clients of the earlier form.
      const aligned = lines.map((line) => ({
        id: line.id,
        created_at: line.created_at,
        speaker: line.user,
        user: line.user,
        text: line.text,
        c_id: call.id,
      }));
      return { status: 'success' as const, message: 'Corrected transcript', corrected, aligned };
    },
  );

  app.get(
    '/calls/:id/recording',
    {
      schema: {
        tags,
        summary: 'Call recording',
        description: 'The WAV recording of a call made with record=true; 404 CALL_RECORDING_NOT_FOUND otherwise.',
        params: IdParams,
        response: {
          200: Type.Unsafe<NodeJS.ReadableStream>({ type: 'string', format: 'binary', description: 'audio/wav' }),
          404: ErrorResponse,
          401: ErrorResponse,
        },
      },
    },
    async (request, reply) => {
      const call = await services.calls.get(request.account.id, request.params.id);
      if (!call) throw notFound('Call');
      const file = call.recording_path ? path.resolve(services.config.dataDir, call.recording_path) : undefined;
      if (!file || !fs.existsSync(file)) throw new ApiError('CALL_RECORDING_NOT_FOUND', 'This call has no recording');
      return reply.type('audio/wav').send(fs.createReadStream(file));
    },
  );

  app.post(
    '/calls/:id/analyze',
    {
      schema: {
        tags,
        summary: 'Analyze a call',
        description: 'Answers questions about an ended call: {goal, questions:[[question, type]]}.',
        params: IdParams,
        body: AnalyzeBody,
        response: {
          200: Type.Object({
            status: Type.String(),
            message: Type.String(),
            answers: Type.Array(Type.Unknown(), { description: 'One per question, in order, typed as asked' }),
            credits_used: Type.Number(),
          }),
          409: ErrorResponse,
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const call = await endedCall(services, request.account.id, request.params.id);
      const questions = request.body.questions.map((q) => (typeof q === 'string' ? [q] : q));
      if (!services.postCall.hasModel) {
        // A fresh install has no model: the client's code path goes on, with an answer per question.
        return {
          status: 'success',
          message:
            'No language model is configured, so the questions were not answered: set OPENAI_API_KEY or OPENLINE_LLM_BASE_URL',
          answers: questions.map(() => null),
          credits_used: 0,
        };
      }
      try {
        const answers = await services.postCall.analyze(call, request.body.goal, questions);
        // Self-hosted: no credits are consumed; the field stays for wire compatibility.
        return { status: 'success', message: 'Call analyzed successfully', answers, credits_used: 0 };
      } catch (error) {
        // The model failed or gave nothing usable: the provider's failure, not the server's.
        const reason = errorMessage(error);
        throw new ApiError('PROVIDER_UNAVAILABLE', `Call analysis failed: ${reason}`);
      }
    },
  );
}

/**
 * The hosted API's first call-details endpoint, `POST /logs` with `{call_id}` (outside /v1): the
 * same record as `GET /v1/calls/{id}`.
 */
export async function registerLogsAlias(app: Api, services: Services): Promise<void> {
  const recordOptions = recordOptionsOf(services);
  app.post(
    '/logs',
    {
      schema: {
        tags: ['Calls'],
        summary: 'Call Details (the legacy POST /logs form)',
        body: Type.Object({ call_id: Type.String({ minLength: 1 }) }, { additionalProperties: true }),
        response: { 200: CallRecord, ...errorResponses },
      },
      serializerCompiler: () => stringifyOnce,
    },
    async (request) => {
      const call = await services.calls.get(request.account.id, request.body.call_id);
      if (!call) throw notFound('Call');
      return toCallRecord(call, await services.calls.transcripts(call.id), recordOptions);
    },
  );
}

/** One of the account's calls that has ended (to be analyzed): 404 for none, 409 while it runs. */
export async function endedCall(services: Services, accountId: string, id: string): Promise<Call> {
  const call = await services.calls.get(accountId, id);
  if (!call) throw notFound('Call');
  if ((OPEN_STATES as readonly string[]).includes(call.queue_status)) throw conflict('Call has not ended yet');
  return call;
}
