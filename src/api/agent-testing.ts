import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, FreeObject, IdParams, SuccessMessage } from '../schemas/common.js';
import {
  BatchRunBody,
  FromCallBody,
  RunBody,
  RunsQuery,
  Scenario,
  ScenarioCreate,
  ScenarioUpdate,
  SimulationSetBody,
  TestBatch,
  TestRun,
  scenarioFields,
} from '../schemas/agent-testing.js';
import { conflict, notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
import { SCENARIO_TEMPLATES } from '../agent-tests/templates.js';
import { analyzeRun, testModel } from '../agent-tests/judge.js';
import { isRecord } from '../domain/records.js';
import { OPEN_STATES } from '../store/calls.js';
import { fromJson } from '../store/json.js';
import type { ScenarioRow, TestRunRow } from '../store/agent-tests.js';
import { callerLines, inputMessageProblems, normalizeAssertions, userLinesOf } from '../agent-tests/scenarios.js';
import type { ScriptedLine } from '../agent-tests/suite.js';
import {
  agentCall,
  presentBatch,
  presentRun,
  startRun,
  type PlaceCall,
  type ScenarioSpec,
} from '../agent-tests/scenario-runs.js';

const tags = ['Agent testing'];
type Json = Record<string, unknown>;

/** Runs one batch request may start (scenarios times repeat). */
const MAX_BATCH_RUNS = 500;
/** Calls a batch request places at the same time. */
const PLACING_AT_ONCE = 8;

const SCENARIO_KEYS = Object.keys(scenarioFields);

/**
 * A scenario's fields checked and normalized (an update is merged over `previous`): the agent
 * under test exists in the account, the assertions are known types with what they need. Each
 * problem is a sentence naming the field.
 */
async function normalizeScenario(
  services: Services,
  accountId: string,
  body: Json,
  errors: string[],
  previous?: ScenarioSpec,
): Promise<ScenarioSpec> {
  const given = Object.fromEntries(Object.entries(body).filter(([key]) => SCENARIO_KEYS.includes(key)));
  // A scenario names one agent under test: naming a new one replaces the old.
  const agentKeys = ['pathway_id', 'agent_id', 'phone_number', 'call'];
  const base = previous && agentKeys.some((k) => k in given) ? omit(previous, agentKeys) : (previous ?? {});
  const spec = { ...base, ...given } as Json;
  if (typeof spec.pathway_id === 'string') {
    if (!(await services.pathways.get(accountId, spec.pathway_id)))
      errors.push('pathway_id is not a pathway of this account');
  } else if (typeof spec.agent_id === 'string') {
    if (!(await services.agents.get(accountId, spec.agent_id))) errors.push('agent_id is not an agent of this account');
  } else if (typeof spec.phone_number === 'string') {
    await agentCall(services, accountId, spec, {}, errors);
  } else if (isRecord(spec.call) && Object.keys(spec.call).length > 0) {
    const { task, pathway_id: pathwayId, persona_id: personaId } = spec.call;
    if (typeof personaId === 'string') {
      if (!(await services.personas.get(accountId, personaId)))
        errors.push('call.persona_id is not a persona of this account');
    } else if (typeof task !== 'string' && typeof pathwayId !== 'string')
      errors.push('call.task is required (or call.pathway_id, or call.persona_id): the agent under test');
  } else {
    errors.push(
      'pathway_id is required (or agent_id, phone_number of an inbound number, or call: the agent under test)',
    );
  }
  if (Array.isArray(given.input_messages)) errors.push(...inputMessageProblems(given.input_messages as unknown[]));
  const previousIds = new Map((previous?.assertions ?? []).map((a, i) => [i, a.id] as [number, string]));
  const assertions =
    'assertions' in given
      ? // Not a list: the schema's own error names the field; nothing to check here.
        normalizeAssertions(Array.isArray(given.assertions) ? (given.assertions as unknown[]) : [], errors, previousIds)
      : (previous?.assertions ?? []);
  return { ...spec, name: String(spec.name ?? ''), assertions };
}

const omit = (object: Json, keys: string[]): Json =>
  Object.fromEntries(Object.entries(object).filter(([key]) => !keys.includes(key)));

/** A scenario as the API shows it. */
function presentScenario(row: ScenarioRow, latest: TestRunRow | undefined) {
  const spec = fromJson<ScenarioSpec>(row.spec, { name: '', assertions: [] });
  const or = <T>(value: unknown, fallback: T): T => (value === undefined ? fallback : (value as T));
  return {
    id: row.id,
    org_id: row.account_id,
    name: spec.name,
    pathway_id: or<string | null>(spec.pathway_id, null),
    persona_id: or<string | null>(spec.persona_id, null),
    agent_id: or<string | null>(spec.agent_id, null),
    phone_number: or<string | null>(spec.phone_number, null),
    call: or<Json | null>(spec.call, null),
    description: or<string | null>(spec.description, null),
    category: or<string | null>(spec.category, null),
    scenario_type: or<string | null>(spec.scenario_type, null),
    tester_persona_prompt: or<string | null>(spec.tester_persona_prompt, null),
    tester_persona_name: or<string | null>(spec.tester_persona_name, null),
    max_turns: or<number | null>(spec.max_turns, null),
    request_data: or<Json | null>(spec.request_data, null),
    start_node_id: or<string | null>(spec.start_node_id, null),
    bland_tone_enabled: or(spec.bland_tone_enabled, false),
    is_required_for_promotion: or(spec.is_required_for_promotion, false),
    enabled: or(spec.enabled, true),
    input_messages: or<unknown[] | null>(spec.input_messages, null),
    advanced_instructions: or<string | null>(spec.advanced_instructions, null),
    metadata: or<Json | null>(spec.metadata, null),
    assertions: spec.assertions,
    most_recent_run: latest
      ? { id: latest.id, status: latest.status, score: latest.score, completed_at: latest.completed_at }
      : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

async function scenarioOrThrow(services: Services, accountId: string, id: string): Promise<ScenarioRow> {
  const row = await services.agentTests.scenario(accountId, id);
  if (!row) throw notFound('Scenario');
  return row;
}

/**
 * The simulated caller's lines of a scenario (none: the language model plays the caller from
 * tester_persona_prompt), or why it cannot run (naming the field).
 */
function linesOrProblem(services: Services, spec: ScenarioSpec, field: string): ScriptedLine[] | string {
  const lines = callerLines(spec.input_messages);
  if (lines.length > 0) return lines;
  if (typeof spec.tester_persona_prompt === 'string' && spec.tester_persona_prompt.trim() !== '') {
    return testModel(services.config)
      ? []
      : `${field}tester_persona_prompt needs a language model to play the caller (set OPENAI_API_KEY or OPENLINE_LLM_BASE_URL), or give input_messages (the caller's lines)`;
  }
  return `${field}input_messages is required: the simulated caller's lines (or tester_persona_prompt with a language model)`;
}

/** Places a run's call through this server's own Send Call, as the client would (same key, same checks). */
function placeCallAs(app: Api, request: FastifyRequest): PlaceCall {
  return async (body) => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/calls',
      headers: {
        authorization: String(request.headers.authorization ?? ''),
        'content-type': 'application/json',
        ...(typeof request.headers.encrypted_key === 'string' && { encrypted_key: request.headers.encrypted_key }),
      },
      payload: JSON.stringify(body),
    });
    const json = response.json() as { call_id?: string; errors?: string[]; message?: string };
    if (response.statusCode === 200 && json.call_id) return { call_id: json.call_id };
    return { errors: json.errors ?? [json.message ?? `HTTP ${response.statusCode}`] };
  };
}

/** Starts `repeat` runs of each scenario as one batch; every scenario is checked before any run starts. */
async function runBatch(
  app: Api,
  request: FastifyRequest,
  services: Services,
  body: {
    scenario_ids: string[];
    repeat: number;
    version_number?: number | undefined;
    webhook_url?: string | undefined;
    request_data_override?: Json | undefined;
    trigger_source: string;
  },
) {
  const accountId = request.account.id;
  const errors: string[] = [];
  if (body.scenario_ids.length * body.repeat > MAX_BATCH_RUNS)
    errors.push(`scenario_ids: at most ${MAX_BATCH_RUNS} runs per batch (scenarios times repeat)`);
  const planned: PlannedRun[] = [];
  for (const [i, id] of body.scenario_ids.entries()) {
    const row = await services.agentTests.scenario(accountId, id);
    if (!row) {
      errors.push(`scenario_ids[${i}] is not a scenario of this account`);
      continue;
    }
    const spec = fromJson<ScenarioSpec>(row.spec, { name: '', assertions: [] });
    const lines = linesOrProblem(services, spec, `scenario_ids[${i}]: `);
    if (typeof lines === 'string') errors.push(lines);
    const own: string[] = [];
    const call = await agentCall(services, accountId, spec, body, own);
    errors.push(...own.map((e) => `scenario_ids[${i}]: ${e}`));
    if (call && typeof lines !== 'string') planned.push({ id, spec, lines, call });
  }
  assertValid(request, errors);
  return startBatch(app, request, services, planned, {
    repeat: body.repeat,
    version_number: body.version_number ?? null,
    webhook_url: body.webhook_url ?? null,
    settings: { scenario_ids: body.scenario_ids, trigger_source: body.trigger_source },
  });
}

/** A scenario ready to run: its caller's lines (none: the language model plays the caller) and its call. */
export interface PlannedRun {
  id: string;
  spec: ScenarioSpec;
  lines: ScriptedLine[];
  call: Json;
}

/** Starts `repeat` runs of each planned scenario as one batch, placing their calls a few at a time. */
export async function startBatch(
  app: Api,
  request: FastifyRequest,
  services: Services,
  planned: PlannedRun[],
  options: { repeat: number; version_number: number | null; webhook_url: string | null; settings: Json },
) {
  const batch = await services.agentTests.createBatch(request.account.id, {
    webhook_url: options.webhook_url,
    settings: { ...options.settings, repeat: options.repeat, version_number: options.version_number },
  });
  const place = placeCallAs(app, request);
  const order = planned.flatMap((scenario) => Array.from({ length: options.repeat }, () => scenario));
  const runs: { run_id: string; scenario_id: string; call_id: string | null }[] = new Array(order.length);
  // Calls are placed a few at a time: a large batch answers in a fraction of the serial time.
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(PLACING_AT_ONCE, order.length) }, async () => {
      while (next < order.length) {
        const i = next++;
        const scenario = order[i]!;
        const { run } = await startRun(
          services,
          request.account.id,
          scenario,
          scenario.call,
          scenario.lines,
          { batch_id: batch.id, version_number: options.version_number, webhook_url: null },
          place,
        );
        runs[i] = { run_id: run.id, scenario_id: scenario.id, call_id: run.call_id };
      }
    }),
  );
  return { batch, runs };
}

/** The hosted agent-testing endpoints (/v1/agent-testing/...): scenarios, runs, batches. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.get(
    '/agent-testing/scenarios',
    {
      schema: {
        tags,
        summary: 'List test scenarios',
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            scenarios: Type.Array(Scenario),
            data: Type.Array(Scenario, { description: 'The same list, where the hosted API’s CLI reads it' }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const rows = await services.agentTests.scenarios(request.account.id);
      const latest = await services.agentTests.latestRuns(
        request.account.id,
        rows.map((r) => r.id),
      );
      const scenarios = rows.map((r) => presentScenario(r, latest.get(r.id)));
      return { status: 'success' as const, scenarios, data: scenarios };
    },
  );

  app.post(
    '/agent-testing/scenarios',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create a test scenario',
        description:
          'The agent under test is a pathway (`pathway_id`, `start_node_id`), or, in Openline, an agent (`agent_id`), ' +
          "an inbound number of the account (`phone_number`) or an inline Send Call body (`call`). The simulated caller says `input_messages`' user lines.",
        body: ScenarioCreate,
        response: { 200: Scenario, ...errorResponses },
      },
    },
    async (request) => {
      const errors: string[] = [];
      const spec = await normalizeScenario(services, request.account.id, (request.body ?? {}) as Json, errors);
      assertValid(request, errors);
      const row = await services.agentTests.createScenario(request.account.id, spec);
      return presentScenario(row, undefined);
    },
  );

  app.get(
    '/agent-testing/templates',
    {
      schema: {
        tags,
        summary: 'List scenario templates',
        description:
          'Callers every agent meets (asks who is calling, wants a person, wrong number, ...), with scripted lines and ' +
          'assertions, to clone onto a pathway or a persona.',
        response: {
          200: Type.Object({
            data: Type.Array(
              Type.Object({
                id: Type.String(),
                name: Type.String(),
                category: Type.String(),
                description: Type.String(),
                input_messages: Type.Array(Type.Unknown()),
                assertions: Type.Array(FreeObject()),
              }),
            ),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async () => ({ data: [...SCENARIO_TEMPLATES], errors: null }),
  );

  app.post(
    '/agent-testing/templates/:id/clone',
    {
      schema: {
        tags,
        summary: 'Clone a scenario template',
        description:
          'A new scenario from the template, testing `pathway_id`, `persona_id` or (in Openline) `agent_id`; `name` ' +
          'replaces the template’s.',
        params: IdParams,
        body: Type.Object(
          {
            pathway_id: Type.Optional(Type.String({ minLength: 1 })),
            persona_id: Type.Optional(Type.String({ minLength: 1 })),
            agent_id: Type.Optional(Type.String({ minLength: 1 })),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          },
          { additionalProperties: true },
        ),
        response: { 200: Scenario, ...errorResponses },
      },
    },
    async (request) => {
      const template = SCENARIO_TEMPLATES.find((t) => t.id === request.params.id);
      if (!template) throw notFound('Scenario template');
      const { pathway_id: pathwayId, persona_id: personaId, agent_id: agentId, name } = request.body;
      const agent = pathwayId
        ? { pathway_id: pathwayId }
        : personaId
          ? { call: { persona_id: personaId } }
          : agentId
            ? { agent_id: agentId }
            : {};
      const errors: string[] = [];
      const spec = await normalizeScenario(
        services,
        request.account.id,
        {
          name: name ?? template.name,
          description: template.description,
          category: template.category,
          scenario_type: 'template',
          input_messages: template.input_messages,
          assertions: template.assertions,
          metadata: { template_id: template.id },
          ...agent,
        },
        errors,
      );
      assertValid(request, errors);
      const row = await services.agentTests.createScenario(request.account.id, spec);
      return presentScenario(row, undefined);
    },
  );

  /** The most recent runs analytics read (a pathway's testing history). */
  const ANALYTICS_RUNS = 1000;
  for (const enhanced of [false, true])
    app.get(
      enhanced ? '/agent-testing/analytics/:id/enhanced' : '/agent-testing/analytics/:id',
      {
        schema: {
          tags,
          summary: enhanced ? "A pathway's testing analytics, with its nodes" : "A pathway's testing analytics",
          description:
            'Over the pathway’s latest 1,000 runs: how many passed, failed or could not run, the pass rate and average ' +
            'score, per scenario and per day' +
            (enhanced
              ? '; and how often each node was visited, and the node failing runs most often ended in (the weakest link).'
              : '.'),
          params: IdParams,
          response: { 200: FreeObject(), ...errorResponses },
        },
      },
      async (request) => {
        const accountId = request.account.id;
        const pathwayId = request.params.id;
        if (!(await services.pathways.get(accountId, pathwayId))) throw notFound('Pathway');
        const { rows } = await services.agentTests.runs(accountId, {
          pathway_id: pathwayId,
          limit: ANALYTICS_RUNS,
          offset: 0,
        });
        const runs = rows.map(presentRun).filter((r) => r.pathway_id === pathwayId);
        const ended = runs.filter((r) => r.status !== 'RUNNING');
        const count = (status: string) => ended.filter((r) => r.status === status).length;
        const rate = (list: typeof runs) =>
          list.length ? list.filter((r) => r.status === 'PASSED').length / list.length : null;
        const scores = ended.map((r) => r.overall_score).filter((x): x is number => typeof x === 'number');
        const groups = <K extends string>(key: (r: (typeof runs)[number]) => K) => {
          const map = new Map<K, typeof runs>();
          for (const r of ended) map.set(key(r), [...(map.get(key(r)) ?? []), r]);
          return map;
        };
        const byScenario = [...groups((r) => r.scenario_id)].map(([id, own]) => ({
          scenario_id: id,
          name: own[0]!.scenario.name,
          runs: own.length,
          passed: own.filter((r) => r.status === 'PASSED').length,
          pass_rate: rate(own),
          last_run_at: own[0]!.created_at,
        }));
        const byDay = [...groups((r) => r.created_at.slice(0, 10))]
          .map(([day, own]) => ({ day, runs: own.length, pass_rate: rate(own) }))
          .sort((a, b) => a.day.localeCompare(b.day));
        const base = {
          pathway_id: pathwayId,
          total_runs: runs.length,
          running: runs.length - ended.length,
          passed: count('PASSED'),
          failed: count('FAILED'),
          errored: count('ERROR'),
          pass_rate: rate(ended),
          average_score: scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : null,
          scenarios: byScenario,
          trend: byDay,
        };
        if (!enhanced) return base;
        const visits = new Map<string, number>();
        const lastOfFailed = new Map<string, number>();
        for (const r of ended) {
          for (const node of new Set(r.nodes_visited)) visits.set(node, (visits.get(node) ?? 0) + 1);
          const last = r.nodes_visited.at(-1);
          if (r.status === 'FAILED' && last) lastOfFailed.set(last, (lastOfFailed.get(last) ?? 0) + 1);
        }
        const weakest = [...lastOfFailed].sort((a, b) => b[1] - a[1])[0];
        return {
          ...base,
          node_visits: [...visits]
            .sort((a, b) => b[1] - a[1])
            .map(([node, runsVisiting]) => ({ node, runs: runsVisiting, share: runsVisiting / ended.length })),
          weakest_link: weakest ? { node: weakest[0], failed_runs_ending_there: weakest[1] } : null,
        };
      },
    );

  // Also under the hosted API's name, /scenarios/generate (its CLI's `bland scenario generate --call-id`).
  for (const url of ['/agent-testing/scenarios/from-call', '/agent-testing/scenarios/generate'] as const)
    app.post(
      url,
      {
        attachValidation: true,
        schema: {
          tags,
          hide: url.endsWith('generate'),
          summary: 'Create a test scenario from a finished call',
          description:
            "The caller's lines of the call become the scenario's input_messages; the call's pathway (or its " +
            'settings as an inline Send Call body) is the agent under test, or `persona_id`. Any scenario field in the body overrides.',
          body: FromCallBody,
          response: { 200: Scenario, ...errorResponses },
        },
      },
      async (request) => {
        assertValid(request);
        const accountId = request.account.id;
        const { call_id, persona_id: personaId, ...overrides } = request.body as Json & { call_id: string };
        const call = await services.calls.get(accountId, call_id);
        if (!call) throw notFound('Call');
        if ((OPEN_STATES as readonly string[]).includes(call.queue_status))
          throw conflict('The call has not ended yet: a scenario is made from a finished call');
        const lines = userLinesOf(await services.calls.transcripts(call.id));
        const settings: Json = { ...call.request };
        const agent =
          typeof personaId === 'string'
            ? { call: { persona_id: personaId } }
            : typeof settings.pathway_id === 'string'
              ? {
                  pathway_id: settings.pathway_id,
                  ...(typeof settings.start_node_id === 'string' && { start_node_id: settings.start_node_id }),
                }
              : { call: replayableSettings(settings) };
        const errors: string[] = [];
        if (lines.length === 0 && overrides.input_messages === undefined)
          errors.push('call_id: the call has no words of the caller to replay');
        const spec = await normalizeScenario(
          services,
          accountId,
          {
            name: `Replay of call ${call.id}`,
            description: `The caller of call ${call.id}, replayed`,
            ...agent,
            ...(isRecord(settings.request_data) && Object.keys(settings.request_data).length > 0
              ? { request_data: settings.request_data }
              : {}),
            input_messages: lines.map((content) => ({ role: 'user', content })),
            metadata: {
              source_call_id: call.id,
              ...(typeof settings.pathway_version === 'number' && { source_pathway_version: settings.pathway_version }),
            },
            ...overrides,
          },
          errors,
        );
        assertValid(request, errors);
        const row = await services.agentTests.createScenario(accountId, spec);
        return presentScenario(row, undefined);
      },
    );

  app.get(
    '/agent-testing/scenarios/:id',
    {
      schema: {
        tags,
        summary: 'Get a test scenario',
        params: IdParams,
        response: { 200: Scenario, ...errorResponses },
      },
    },
    async (request) => {
      const row = await scenarioOrThrow(services, request.account.id, request.params.id);
      const latest = await services.agentTests.latestRuns(request.account.id, [row.id]);
      return presentScenario(row, latest.get(row.id));
    },
  );

  app.put(
    '/agent-testing/scenarios/:id',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Update a test scenario',
        description: 'The fields given replace the stored ones; `assertions`, when given, replaces the list.',
        params: IdParams,
        body: ScenarioUpdate,
        response: { 200: Scenario, ...errorResponses },
      },
    },
    async (request) => {
      const row = await scenarioOrThrow(services, request.account.id, request.params.id);
      const errors: string[] = [];
      const previous = fromJson<ScenarioSpec>(row.spec, { name: '', assertions: [] });
      const spec = await normalizeScenario(services, request.account.id, request.body as Json, errors, previous);
      assertValid(request, errors);
      const updated = await services.agentTests.updateScenario(request.account.id, row.id, spec);
      const latest = await services.agentTests.latestRuns(request.account.id, [row.id]);
      return presentScenario(updated!, latest.get(row.id));
    },
  );

  app.delete(
    '/agent-testing/scenarios/:id',
    {
      schema: {
        tags,
        summary: 'Delete a test scenario',
        description: 'Its runs stay readable.',
        params: IdParams,
        response: { 200: SuccessMessage, ...errorResponses },
      },
    },
    async (request) => {
      if (!(await services.agentTests.deleteScenario(request.account.id, request.params.id)))
        throw notFound('Scenario');
      return { status: 'success' as const, message: 'Scenario deleted' };
    },
  );

  app.post(
    '/agent-testing/scenarios/:id/run',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Run a test scenario',
        description:
          'Places a real call on the sandbox network from the agent under test to a scripted caller who says the ' +
          "scenario's lines; when it ends, the assertions judge it. Poll GET /v1/agent-testing/runs/{run_id}, or " +
          'give webhook_url (signed like call webhooks).',
        params: IdParams,
        body: RunBody,
        response: {
          200: Type.Object({ run_id: Type.String(), status: Type.String(), call_id: Type.String() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const row = await scenarioOrThrow(services, accountId, request.params.id);
      const spec = fromJson<ScenarioSpec>(row.spec, { name: '', assertions: [] });
      const body = (request.body ?? {}) as {
        version_number?: number;
        request_data_override?: Json;
        webhook_url?: string;
      };
      const errors: string[] = [];
      const lines = linesOrProblem(services, spec, '');
      if (typeof lines === 'string') errors.push(lines);
      const call = await agentCall(services, accountId, spec, body, errors);
      assertValid(request, errors);
      const started = await startRun(
        services,
        accountId,
        { id: row.id, spec },
        call!,
        lines as ScriptedLine[],
        { batch_id: null, version_number: body.version_number ?? null, webhook_url: body.webhook_url ?? null },
        placeCallAs(app, request),
      );
      if (started.errors) throw validationError(started.errors, 'The call of the run was refused');
      return { run_id: started.run.id, status: 'RUNNING', call_id: started.run.call_id! };
    },
  );

  const runsList = Type.Object({ runs: Type.Array(TestRun), total_count: Type.Integer() });

  app.get(
    '/agent-testing/runs',
    {
      schema: {
        tags,
        summary: 'List test runs',
        description: 'Newest first; filters: scenario_id, pathway_id, batch_id, status; limit (1-100) and offset.',
        querystring: RunsQuery,
        response: { 200: runsList, ...errorResponses },
      },
    },
    async (request) => {
      const q = request.query;
      const { rows, total } = await services.agentTests.runs(request.account.id, {
        scenario_id: q.scenario_id,
        pathway_id: q.pathway_id,
        batch_id: q.batch_id,
        status: q.status?.toUpperCase(),
        limit: q.limit ?? 50,
        offset: q.offset ?? 0,
      });
      return { runs: rows.map(presentRun), total_count: total };
    },
  );

  app.get(
    '/agent-testing/scenarios/:id/runs',
    {
      schema: {
        tags,
        summary: "List a scenario's runs",
        params: IdParams,
        querystring: RunsQuery,
        response: { 200: runsList, ...errorResponses },
      },
    },
    async (request) => {
      const row = await scenarioOrThrow(services, request.account.id, request.params.id);
      const { rows, total } = await services.agentTests.runs(request.account.id, {
        scenario_id: row.id,
        status: request.query.status?.toUpperCase(),
        limit: request.query.limit ?? 50,
        offset: request.query.offset ?? 0,
      });
      return { runs: rows.map(presentRun), total_count: total };
    },
  );

  app.get(
    '/agent-testing/runs/:id',
    {
      schema: {
        tags,
        summary: 'Get a test run',
        description:
          'Status (RUNNING, PASSED, FAILED, ERROR), score, each assertion with its message, the call and its transcript.',
        params: IdParams,
        response: { 200: TestRun, ...errorResponses },
      },
    },
    async (request) => {
      const run = await services.agentTests.run(request.account.id, request.params.id);
      if (!run) throw notFound('Test run');
      return presentRun(run);
    },
  );

  app.post(
    '/agent-testing/runs/:id/analyze',
    {
      schema: {
        tags,
        summary: 'Analyze a failed test run',
        description:
          'Which assertions failed and why, and the node the call ended in; with a language model configured, also ' +
          'its reading of the root cause and a suggested fix (`analyzed_by: "llm"`). A run still going is a 409.',
        params: IdParams,
        response: { 200: FreeObject(), 409: errorResponses[400], ...errorResponses },
      },
    },
    async (request) => {
      const row = await services.agentTests.run(request.account.id, request.params.id);
      if (!row) throw notFound('Test run');
      if (row.status === 'RUNNING') throw conflict('The run has not ended yet');
      const run = presentRun(row);
      const analysis = await analyzeRun(run, testModel(services.config));
      return { status: 'success', run_id: run.run_id, run_status: run.status, ...analysis };
    },
  );

  app.post(
    '/agent-testing/batch-run',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Run several test scenarios',
        description:
          'One run of each scenario (or `repeat` runs: pass rates for language models); GET /v1/agent-testing/batches/{id} ' +
          'gives the pass rates. webhook_url gets the batch once every run ended.',
        body: BatchRunBody,
        response: {
          200: Type.Object({
            batch_id: Type.String(),
            status: Type.String(),
            runs: Type.Array(Type.Object({ run_id: Type.String(), scenario_id: Type.String() })),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      assertValid(request);
      const body = request.body;
      const { batch, runs } = await runBatch(app, request, services, {
        ...body,
        repeat: body.repeat ?? 1,
        trigger_source: 'api',
      });
      return { batch_id: batch.id, status: 'RUNNING', runs };
    },
  );

  app.post(
    '/agent-testing/simulation-sets',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Run each scenario several times',
        description:
          'A batch with `simulations_per_scenario` runs of each scenario: its pass rates show flaky behaviour.',
        body: SimulationSetBody,
        response: {
          200: Type.Object({
            simulation_set_id: Type.String(),
            batch_id: Type.String(),
            status: Type.String(),
            simulations_per_scenario: Type.Integer(),
            total_runs: Type.Integer(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      assertValid(request);
      const body = request.body;
      const { batch, runs } = await runBatch(app, request, services, {
        scenario_ids: body.scenario_ids,
        repeat: body.simulations_per_scenario,
        version_number: body.version_number,
        webhook_url: body.webhook_url,
        trigger_source: 'simulation_set',
      });
      return {
        simulation_set_id: batch.id,
        batch_id: batch.id,
        status: 'PENDING',
        simulations_per_scenario: body.simulations_per_scenario,
        total_runs: runs.length,
      };
    },
  );

  const batchDetails = async (accountId: string, id: string) => {
    const batch = await services.agentTests.batch(accountId, id);
    if (!batch) throw notFound('Test batch');
    return presentBatch(batch, await services.agentTests.batchRuns(accountId, batch.id));
  };

  app.get(
    '/agent-testing/batches',
    {
      schema: {
        tags,
        summary: 'List test batches',
        response: { 200: Type.Object({ batches: Type.Array(TestBatch) }), ...errorResponses },
      },
    },
    async (request) => {
      const rows = await services.agentTests.batches(request.account.id);
      const batches = [];
      for (const row of rows)
        batches.push(presentBatch(row, await services.agentTests.batchRuns(request.account.id, row.id)));
      return { batches };
    },
  );

  app.get(
    '/agent-testing/batches/:id',
    {
      schema: {
        tags,
        summary: 'Get a test batch',
        description: 'Its runs, pass rates overall and per scenario, and its status once every run ended.',
        params: IdParams,
        response: { 200: TestBatch, ...errorResponses },
      },
    },
    async (request) => batchDetails(request.account.id, request.params.id),
  );

  app.get(
    '/agent-testing/simulation-sets/:id',
    {
      schema: {
        tags,
        summary: 'Get a simulation set',
        params: IdParams,
        response: {
          200: Type.Object({ ...TestBatch.properties, simulation_set_id: Type.String() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const batch = await batchDetails(request.account.id, request.params.id);
      return { ...batch, simulation_set_id: batch.id };
    },
  );
}

/** The Send Call settings of a finished call that make its agent again (not its number, time or webhook). */
function replayableSettings(request: Json): Json {
  const keep = [
    'task',
    'first_sentence',
    'voice',
    'model',
    'language',
    'temperature',
    'interruption_threshold',
    'wait_for_greeting',
    'block_interruptions',
    'transfer_phone_number',
    'transfer_list',
    'max_duration',
    'keywords',
    'voicemail_message',
  ];
  return Object.fromEntries(
    Object.entries(request).filter(([key, value]) => keep.includes(key) && value !== null && value !== undefined),
  );
}
