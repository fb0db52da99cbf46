import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { ErrorResponse, errorResponses, IdParams, Nullable } from '../schemas/common.js';
import {
  CAMPAIGN_TRANSITIONS,
  CampaignCreateBody,
  CampaignDetail,
  CampaignSummary,
  WEEKDAYS,
  type CampaignAction,
  type CampaignConfig,
  type StoredStep,
} from '../schemas/campaign.js';
import type { CallSettings } from '../schemas/call.js';
import { normalizeCallSettings, toolResolver } from '../schemas/call-request.js';
import { normalizePhone } from '../domain/phone.js';
import { parseStartTime } from '../domain/start-time.js';
import { conflict, notFound } from '../errors.js';
import { assertValid, formatValidationErrors } from './validation.js';
import { CallReferenceChecker } from './call-references.js';
import { isRecord } from '../domain/records.js';
import type { CampaignNumberInput } from '../store/campaigns.js';
import { slicer } from '../slices.js';

const tags = ['Campaigns'];

// Campaign bodies carry up to 100,000 numbers: more than the default body limit allows.
export const CAMPAIGN_BODY_LIMIT = 16 * 1024 * 1024;

const DAY_SECONDS = 86_400;

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

function schemaErrors(request: FastifyRequest): string[] {
  const failed = request.validationError as
    (Error & { validation?: ErrorObject[]; validationContext?: string }) | undefined;
  return failed?.validation ? formatValidationErrors(failed.validation, failed.validationContext) : [];
}

const NUMBER_FORMS = 'must be a phone number (string or number) or an object {phone_number, request_data, metadata}';

/** Why a campaign number entry has the wrong shape, or undefined when its shape is right. */
function numberShapeProblem(entry: unknown, i: number): string | undefined {
  if (typeof entry === 'string' || typeof entry === 'number') return undefined;
  if (!isRecord(entry)) return `numbers[${i}] ${NUMBER_FORMS}`;
  const phone = entry.phone_number;
  if (phone === undefined) return `numbers[${i}].phone_number is required`;
  if (typeof phone !== 'string' && typeof phone !== 'number')
    return `numbers[${i}].phone_number must be a string or a number`;
  for (const key of ['request_data', 'metadata'] as const) {
    if (entry[key] !== undefined && !isRecord(entry[key])) return `numbers[${i}].${key} must be an object`;
  }
  return undefined;
}

/**
 * Checks every number's shape, normalizes it to E.164 and rejects duplicates, naming both
 * positions. Up to 100,000 numbers: the work is done in slices (the schema validator leaves these
 * items to this function), so other requests are answered meanwhile.
 */
async function normalizeNumbers(input: unknown, errors: string[]): Promise<CampaignNumberInput[]> {
  if (!Array.isArray(input)) return [];
  const result: CampaignNumberInput[] = [];
  const firstAt = new Map<string, number>();
  const problems: string[] = [];
  const slice = slicer();
  for (let i = 0; i < input.length; i++) {
    if (i % 256 === 0) await slice();
    const entry: unknown = input[i];
    const shape = numberShapeProblem(entry, i);
    if (shape) {
      problems.push(shape);
      continue;
    }
    const record = isRecord(entry) ? entry : undefined;
    const phone = normalizePhone((record ? record.phone_number : entry) as string | number);
    if (!phone.ok) {
      problems.push(`numbers[${i}]${record ? '.phone_number' : ''} ${phone.reason}`);
      continue;
    }
    const first = firstAt.get(phone.e164);
    if (first !== undefined) {
      problems.push(`numbers[${i}] duplicates numbers[${first}] (${phone.e164})`);
      continue;
    }
    firstAt.set(phone.e164, i);
    result.push({
      phone_number: phone.e164,
      request_data: isRecord(record?.request_data) ? record.request_data : null,
      metadata: isRecord(record?.metadata) ? record.metadata : null,
    });
  }
  // assertValid lists the first problems and counts the rest.
  errors.push(...problems);
  return result;
}

/** What CAMPAIGN_TRANSITIONS' API actions answer. */
const ACTIONS = {
  pause: { verb: 'paused', message: 'Campaign paused' },
  resume: { verb: 'resumed', message: 'Campaign resumed' },
  stop: { verb: 'stopped', message: 'Campaign stopped; numbers not yet called are skipped' },
} as const satisfies Partial<Record<CampaignAction, { verb: string; message: string }>>;

/** Campaigns: seed 2.7, 4.7, 4.8 and CONTRACT.md section 9. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/campaigns',
    {
      attachValidation: true,
      bodyLimit: Math.max(services.config.bodyLimitBytes, CAMPAIGN_BODY_LIMIT),
      schema: {
        tags,
        summary: 'Create a campaign',
        description:
          'Stores the campaign and its numbers (state pending). Every Send Call setting applies to every call; ' +
          'a number given as an object adds its own request_data and metadata. The campaign starts active.',
        body: CampaignCreateBody,
        response: {
          200: Type.Object({ status: Type.Literal('success'), campaign_id: Type.String() }),
          ...errorResponses,
          413: ErrorResponse,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const raw: Record<string, unknown> = isRecord(request.body) ? request.body : {};
      // Schema problems first, so that normalizeCallSettings does not repeat them.
      const errors = schemaErrors(request);

      const numbers = await normalizeNumbers(raw.numbers, errors);
      const blocked = await services.blocked.blockedAmong(
        accountId,
        numbers.map((n) => n.phone_number),
      );
      for (const phone of blocked) errors.push(`numbers contains ${phone}, which is on this account's blocked list`);

      const steps: Record<string, unknown>[] = Array.isArray(raw.sequences) ? raw.sequences.filter(isRecord) : [];
      const stepsChooseOwn = steps.some((s) => nonEmpty(s.task) || nonEmpty(s.pathway_id));
      const { phone_number: _ignored, ...settingsBody } = raw;
      const settings = await normalizeCallSettings(
        settingsBody as CallSettings,
        toolResolver(services, accountId),
        errors,
        { requirePhone: false, requireTask: !stepsChooseOwn },
      );

      const sequence = isRecord(raw.sequence) ? raw.sequence : {};
      const retries = typeof sequence.retries === 'number' ? sequence.retries : 0;
      const waitPeriod = typeof sequence.wait_period === 'number' ? sequence.wait_period : 1;

      // A step that names its own task or pathway uses only that; a step naming neither inherits both.
      const stepInputs = steps.length > 0 ? steps : [{}];
      const plan = stepInputs.map((s, i) => {
        const own = nonEmpty(s.task) || nonEmpty(s.pathway_id);
        const task = own ? (nonEmpty(s.task) ? s.task : null) : settings.task;
        const pathwayId = own ? (nonEmpty(s.pathway_id) ? s.pathway_id : null) : settings.pathway_id;
        if (stepsChooseOwn && !nonEmpty(task) && !pathwayId) {
          errors.push(`sequences[${i}] needs a task or a pathway_id (none here and none at the top level)`);
        }
        // The campaign's start_time is when the first step may begin.
        const start =
          typeof s.start_time === 'string'
            ? (parseStartTime(s.start_time)?.toISOString() ?? null)
            : i === 0
              ? settings.start_time
              : null;
        const delay = typeof s.delay === 'number' ? s.delay : i === 0 ? 0 : waitPeriod * DAY_SECONDS;
        return { task, pathwayId, start, delay, at: own ? `sequences[${i}].` : '' };
      });

      // Every pathway named must be the account's (the version and start node every call uses
      // with it); its name labels the step.
      const references = new CallReferenceChecker(services, accountId, { ownCarrier: false });
      const labels = new Map<string, string>();
      for (const step of plan) {
        if (!step.pathwayId || labels.has(step.pathwayId)) continue;
        const call = { ...settings, pathway_id: step.pathwayId, from: null };
        const pathway = await references.check(call, errors, step.at);
        if (pathway) labels.set(step.pathwayId, pathway.name);
      }
      await references.check({ from: settings.from }, errors);

      const window = isRecord(raw.calling_window) ? raw.calling_window : undefined;
      if (window && typeof window.start === 'string' && window.start === window.end) {
        errors.push('calling_window.end must differ from calling_window.start');
      }

      assertValid(request, errors);

      const body = request.body;
      const pacing = body.pacing ?? {};
      const config: CampaignConfig = {
        stop_when_answer: body.stop_when_answer ?? false,
        auto_mark_complete: body.auto_mark_complete ?? true,
        pacing: { max_concurrent: pacing.max_concurrent ?? 10, calls_per_minute: pacing.calls_per_minute ?? 60 },
        calling_window: body.calling_window
          ? {
              start: body.calling_window.start,
              end: body.calling_window.end,
              days: body.calling_window.days ?? [...WEEKDAYS],
              timezone: body.calling_window.timezone ?? settings.timezone,
            }
          : null,
        retries,
        wait_period: waitPeriod,
      };
      const sequences: StoredStep[] = plan.map((step, i) => ({
        seqId: randomUUID(),
        step: i,
        type: 'send_call',
        task: nonEmpty(step.task) ? step.task : null,
        pathway_id: step.pathwayId,
        start_time: step.start,
        delay: step.delay,
        pathway: step.pathwayId ? [{ value: step.pathwayId, label: labels.get(step.pathwayId) ?? '' }] : [],
      }));
      // Per-step fields live in sequences; request_data holds what every call shares.
      const { phone_number: _p, task: _t, pathway_id: _pw, start_time: _s, ...request_data } = settings;
      const campaignId = await services.campaigns.create(accountId, {
        name: body.name,
        request_data,
        sequences,
        config,
        from_number: settings.from,
        numbers,
      });
      return { status: 'success' as const, campaign_id: campaignId };
    },
  );

  app.get(
    '/campaigns',
    {
      schema: {
        tags,
        summary: 'List campaigns',
        description: 'Counters come from the calls placed for each campaign.',
        response: {
          200: Type.Object({ status: Type.Literal('success'), campaigns: Type.Array(CampaignSummary) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ status: 'success' as const, campaigns: await services.campaigns.list(request.account.id) }),
  );

  const details = async (request: FastifyRequest<{ Params: { id: string } }>) => {
    const campaign = await services.campaigns.get(request.account.id, request.params.id);
    if (!campaign) throw notFound('Campaign');
    return { status: 'success' as const, count: 1, campaigns: [campaign] };
  };
  const detailsSchema = (summary: string) => ({
    tags,
    summary,
    params: IdParams,
    response: {
      200: Type.Object({
        status: Type.Literal('success'),
        count: Type.Integer({ description: 'Campaigns returned (always 1)' }),
        campaigns: Type.Array(CampaignDetail),
      }),
      ...errorResponses,
    },
  });
  // The seed's Campaign Details is a POST without a body; GET is the same read.
  app.post('/campaigns/:id', { schema: detailsSchema('Campaign details') }, details);
  app.get('/campaigns/:id', { schema: detailsSchema('Campaign details (GET form)') }, details);

  app.get(
    '/campaigns/:id/progress',
    {
      schema: {
        tags,
        summary: 'Campaign progress',
        description:
          'Numbers by state (pending: waiting for their next attempt or step; dialing: a call under way; done: ' +
          'sequence finished; skipped: stopped before being dialled; finished = done + skipped) and calls by outcome ' +
          '(placed; live; completed; failed: queue or call errors; answered by a person; and answered_by ' +
          'voicemail, unknown, no-answer). Read by `openline campaign watch`.',
        params: IdParams,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            campaign_id: Type.String(),
            campaign_state: Type.String(),
            numbers: Type.Object({
              total: Type.Integer(),
              pending: Type.Integer(),
              dialing: Type.Integer(),
              done: Type.Integer(),
              skipped: Type.Integer(),
              finished: Type.Integer(),
              called: Type.Integer({ description: 'Numbers called at least once' }),
              waiting_retry: Type.Integer({ description: 'Pending numbers waiting for a retry at a later time' }),
              next_retry_at: Nullable(Type.String({ description: 'When the first of them is due' })),
            }),
            calls: Type.Object({
              placed: Type.Integer(),
              live: Type.Integer(),
              completed: Type.Integer(),
              failed: Type.Integer(),
              answered: Type.Integer({
                description:
                  'A person answered: answered_by human, or without detection a connected call that completed',
              }),
              voicemail: Type.Integer(),
              unknown: Type.Integer(),
              no_answer: Type.Integer(),
            }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const progress = await services.campaigns.progress(request.account.id, request.params.id);
      if (!progress) throw notFound('Campaign');
      return { status: 'success' as const, ...progress };
    },
  );

  for (const action of Object.keys(ACTIONS) as (keyof typeof ACTIONS)[]) {
    const { verb, message } = ACTIONS[action];
    const allowed = CAMPAIGN_TRANSITIONS[action].from.join(' or ');
    const article = /^[aeiou]/.test(allowed) ? 'an' : 'a';
    app.post(
      `/campaigns/:id/${action}`,
      {
        schema: {
          tags,
          summary: `${action[0]?.toUpperCase()}${action.slice(1)} a campaign`,
          description: `Allowed when the campaign is ${allowed}; it becomes ${CAMPAIGN_TRANSITIONS[action].to}.`,
          params: IdParams,
          response: {
            200: Type.Object({
              status: Type.Literal('success'),
              message: Type.String(),
              campaign_state: Type.String(),
            }),
            ...errorResponses,
            409: ErrorResponse,
          },
        },
      },
      async (request) => {
        const result = await services.campaigns.transition(request.account.id, request.params.id, action);
        if (result.ok) return { status: 'success' as const, message, campaign_state: result.state };
        if (result.reason === 'not_found') throw notFound('Campaign');
        throw conflict(`Campaign is ${result.state}; only ${article} ${allowed} campaign can be ${verb}`);
      },
    );
  }
}
