/**
 * Runs of agent test scenarios through the API: each run is a real call through the server's own
 * engine to a scripted caller on the sandbox network, judged when it ends by the scenario's
 * assertions. The `agent_test_run` job follows each run (a chain of short checks, durable across
 * restarts) and sends its result to the run's webhook_url.
 */
import type { Services } from '../services.js';
import type { CallSettings } from '../schemas/call.js';
import type { Call } from '../store/calls.js';
import { OPEN_STATES } from '../store/calls.js';
import type { TestBatchRow, TestRunRow, RunStatus } from '../store/agent-tests.js';
import { fromJson } from '../store/json.js';
import { toCallRecord } from '../calls/record.js';
import { agentSettings, numberSettings } from '../calls/inbound.js';
import { normalizePhone } from '../domain/phone.js';
import { isRecord } from '../domain/records.js';
import { parsePersona, type Persona } from '../carriers/sandbox/persona-format.js';
import type { JobPayloads } from '../jobs/catalog.js';
import { nodesVisited, transcriptText, type CallView } from './expect.js';
import { scoreRubric, testModel } from './judge.js';
import { modelCaller } from './caller.js';
import type { ScriptedLine } from './suite.js';
import {
  chatHistory,
  evaluateAssertion,
  scoreOf,
  type AssertionResult,
  type Judge,
  type StoredAssertion,
} from './scenarios.js';

type Json = Record<string, unknown>;

/** A scenario's fields as stored (what POST /v1/agent-testing/scenarios accepted, assertions normalized). */
export type ScenarioSpec = Json & {
  name: string;
  assertions: StoredAssertion[];
  input_messages?: unknown[] | null;
};

/** How often (clock ms) a run looks whether its call has ended. */
export const RUN_CHECK_MS = 2000;
/** A run with no call after this long (clock ms) was never placed (the server stopped meanwhile). */
const PLACING_GRACE_MS = 120_000;
/** A run whose call has not ended after this many checks (about 2 h) ends as ERROR. */
const MAX_CHECKS = 3600;

/** What a run's result holds besides status and score. */
interface RunResult {
  assertion_results: AssertionResult[];
  chat_history: { role: string; content: string }[];
  transcript: string;
  variables_extracted: Json;
  nodes_visited: string[];
  turn_count: number;
  duration_ms: number | null;
  error_message: string | null;
}

/** The run's options and the scenario as it was when the run started. */
interface RunSettings {
  scenario_name: string;
  /** A caller played by the language model (no input_messages): its prompt, name and line limit. */
  tester?: { prompt: string; name: string | null; max_turns: number | null };
  pathway_id: string | null;
  persona_id: string | null;
  version_number: number | null;
  webhook_url: string | null;
  assertions: StoredAssertion[];
}

/**
 * The Send Call body of the agent under test: the scenario's pathway (at `version_number`, from
 * `start_node_id`), agent, inbound number or inline call, with request_data and the override.
 * Problems are sentences naming the scenario's field.
 */
export async function agentCall(
  services: Services,
  accountId: string,
  spec: Json,
  options: { version_number?: number | undefined; request_data_override?: Json | undefined },
  errors: string[],
): Promise<Json | undefined> {
  const requestData = { ...(spec.request_data as Json | undefined), ...options.request_data_override };
  let settings: Json | undefined;
  if (typeof spec.pathway_id === 'string') {
    settings = {
      pathway_id: spec.pathway_id,
      ...(options.version_number !== undefined && { pathway_version: options.version_number }),
      ...(typeof spec.start_node_id === 'string' && { start_node_id: spec.start_node_id }),
    };
  } else if (typeof spec.agent_id === 'string') {
    const agent = await services.agents.get(accountId, spec.agent_id);
    if (!agent) errors.push('agent_id is not an agent of this account');
    else settings = agentSettings(agent) as Json;
  } else if (typeof spec.phone_number === 'string') {
    const phone = normalizePhone(spec.phone_number);
    const number = phone.ok ? await services.inbound.get(accountId, phone.e164) : undefined;
    if (!number) errors.push('phone_number is not an inbound number of this account');
    else settings = (await numberSettings(services.personas, accountId, number)) as Json;
  } else if (isRecord(spec.call) && Object.keys(spec.call).length > 0) {
    settings = { ...(spec.call as Json) };
  } else {
    errors.push('the agent under test is missing: give pathway_id, agent_id, phone_number (inbound) or call');
  }
  if (!settings) return undefined;
  const own = (settings.request_data as Json | undefined) ?? {};
  // The agent's own webhook is not the test's: the test's result goes to webhook_url.
  const { webhook: _webhook, ...rest } = settings as CallSettings & Json;
  return { ...(spec.call as Json | undefined), ...rest, request_data: { ...own, ...requestData } };
}

/** Places a run's call: the route's Send Call (the same validation as POST /v1/calls). */
export type PlaceCall = (body: Json) => Promise<{ call_id: string } | { errors: string[] }>;

/**
 * Starts a run: stores it (its caller answers a number of its own from now on), places the call
 * to that number and enqueues the first check. A call the API refused ends the run as ERROR.
 */
export async function startRun(
  services: Services,
  accountId: string,
  scenario: { id: string; spec: ScenarioSpec },
  body: Json,
  lines: ScriptedLine[],
  options: { batch_id: string | null; version_number: number | null; webhook_url: string | null },
  place: PlaceCall,
): Promise<{ run: TestRunRow; errors?: string[] }> {
  const prompt = scenario.spec.tester_persona_prompt;
  const settings: RunSettings = {
    scenario_name: scenario.spec.name,
    ...(lines.length === 0 &&
      typeof prompt === 'string' && {
        tester: {
          prompt,
          name: typeof scenario.spec.tester_persona_name === 'string' ? scenario.spec.tester_persona_name : null,
          max_turns: typeof scenario.spec.max_turns === 'number' ? scenario.spec.max_turns : null,
        },
      }),
    pathway_id: typeof scenario.spec.pathway_id === 'string' ? scenario.spec.pathway_id : null,
    persona_id: typeof scenario.spec.persona_id === 'string' ? scenario.spec.persona_id : null,
    version_number: options.version_number,
    webhook_url: options.webhook_url,
    assertions: scenario.spec.assertions,
  };
  const run = await services.agentTests.createRun(accountId, {
    scenario_id: scenario.id,
    batch_id: options.batch_id,
    caller_lines: lines,
    settings: settings as unknown as Json,
  });
  // The run's job first: whatever happens next (a refused call, a crash), the run gets an end.
  await services.queue.enqueue(
    'agent_test_run',
    { run_id: run.id, check: 1 },
    { runAt: new Date(services.clock.now().getTime() + RUN_CHECK_MS) },
  );
  const placed = await place({ ...body, phone_number: run.caller_number });
  if ('errors' in placed) {
    await services.agentTests.finish(run.id, {
      status: 'ERROR',
      score: null,
      result: { ...emptyResult(), error_message: `the call was refused: ${placed.errors.join('; ')}` },
    });
    return { run, errors: placed.errors };
  }
  await services.agentTests.setCall(run.id, placed.call_id);
  return { run: { ...run, call_id: placed.call_id } };
}

const emptyResult = (): RunResult => ({
  assertion_results: [],
  chat_history: [],
  transcript: '',
  variables_extracted: {},
  nodes_visited: [],
  turn_count: 0,
  duration_ms: null,
  error_message: null,
});

/**
 * What went wrong with a model-played caller, by the number it answered, until its run is judged
 * (in the process that dialed it, which is the one that judges it unless it stopped meanwhile).
 */
const callerProblems = new Map<string, string[]>();

/** The scripted caller of a RUNNING run on `number`, as a sandbox persona (the network's caller lookup). */
export async function runCaller(services: Services, number: string): Promise<Persona | undefined> {
  const run = await services.agentTests.runningOn(number);
  if (!run) return undefined;
  // Loaded when a run's caller is dialed: the runner module brings the whole server with it.
  const { scriptedPersona, modelPersona } = await import('./runner.js');
  const lines = fromJson<ScriptedLine[]>(run.caller_lines, []);
  const id = `agent-test-run-${run.id}`;
  const tester = fromJson<Partial<RunSettings>>(run.settings, {}).tester;
  const model = tester && testModel(services.config);
  if (tester && model) {
    // The tester persona prompt plays the caller: the model writes each line in the process that
    // dials (this one), so a run survives a restart like a scripted one.
    services.sandbox.setLineWriter(
      id,
      modelCaller(
        {
          goal: tester.prompt,
          ...(tester.name && { personality: `${tester.name}` }),
          ...(tester.max_turns && { max_turns: tester.max_turns }),
        },
        model,
        (message) => callerProblems.set(number, [...(callerProblems.get(number) ?? []), message]),
      ),
    );
    return parsePersona(modelPersona(id, number.slice(-4)), `agent test run ${run.id}`);
  }
  return parsePersona(scriptedPersona(id, number.slice(-4), lines), `agent test run ${run.id}`);
}

/**
 * LLM_JUDGE: the configured language model scores the call against the rubric, as the `judge`
 * expectation of test files does (src/agent-tests/judge.ts); none without a model.
 */
export function modelJudge(services: Services, call: CallView): Judge | undefined {
  const model = testModel(services.config);
  if (!model) return undefined;
  return async ({ rubric, pass_score }) => {
    const { score, reason } = await scoreRubric(call, rubric, model);
    return { score, passed: score >= pass_score, reason };
  };
}

const ERROR_STATES = ['queue_error', 'pre_queue_error', 'call_error'];

/** Judges a run's ended call: status, score and every assertion's result. */
export async function judgeCall(
  services: Services,
  row: Call,
  assertions: StoredAssertion[],
): Promise<{ status: RunStatus; score: number | null; result: RunResult }> {
  const transcripts = await services.calls.transcripts(row.id);
  const record = toCallRecord(row, transcripts, {
    publicUrl: services.config.publicUrl,
    endpointUrl: services.config.endpointUrl,
  });
  const call = record as unknown as CallView & { error_message?: string | null; corrected_duration?: string | null };
  const history = chatHistory(call);
  const base: RunResult = {
    ...emptyResult(),
    chat_history: history,
    transcript: transcriptText(call),
    variables_extracted: call.variables ?? {},
    nodes_visited: nodesVisited(call),
    turn_count: history.length,
    duration_ms: call.call_length === null ? null : Math.round(call.call_length * 60_000),
  };
  const problems = callerProblems.get(row.to_number);
  callerProblems.delete(row.to_number);
  if (problems) return { status: 'ERROR', score: null, result: { ...base, error_message: problems.join('; ') } };
  if (ERROR_STATES.includes(row.queue_status) || row.answered_by === 'no-answer') {
    const why = row.error_message ?? (row.answered_by === 'no-answer' ? 'the caller did not answer' : row.queue_status);
    return { status: 'ERROR', score: null, result: { ...base, error_message: `the call failed: ${why}` } };
  }
  const judge = modelJudge(services, call);
  const results: AssertionResult[] = [];
  for (const assertion of assertions) results.push(await evaluateAssertion(assertion, call, judge));
  const failed = results.some((r) => r.is_required && !r.passed);
  return {
    status: failed ? 'FAILED' : 'PASSED',
    score: scoreOf(results),
    result: { ...base, assertion_results: results },
  };
}

/** A run as the API shows it (GET /v1/agent-testing/runs/{id}, webhooks, batch details). */
export function presentRun(row: TestRunRow) {
  const settings = fromJson<Partial<RunSettings>>(row.settings, {});
  const result = { ...emptyResult(), ...fromJson<Partial<RunResult>>(row.result, {}) };
  return {
    id: row.id,
    run_id: row.id,
    scenario_id: row.scenario_id,
    pathway_id: settings.pathway_id ?? null,
    persona_id: settings.persona_id ?? null,
    batch_id: row.batch_id,
    status: row.status,
    overall_score: row.score,
    score: row.score,
    turn_count: result.turn_count,
    duration_ms: result.duration_ms,
    created_at: row.created_at,
    completed_at: row.completed_at,
    version_number: settings.version_number ?? null,
    call_id: row.call_id,
    error_message: result.error_message,
    scenario: { id: row.scenario_id, name: settings.scenario_name ?? '' },
    assertion_results: result.assertion_results,
    chat_history: result.chat_history,
    transcript: result.transcript,
    variables_extracted: result.variables_extracted,
    nodes_visited: result.nodes_visited,
  };
}

/** A batch of runs with its pass rates, overall and per scenario. */
export function presentBatch(batch: TestBatchRow, runs: TestRunRow[]) {
  const settings = fromJson<{ repeat?: number; trigger_source?: string; scenario_ids?: string[] }>(batch.settings, {});
  // The scenarios in the order the batch named them.
  const byScenario = new Map<string, TestRunRow[]>((settings.scenario_ids ?? []).map((id) => [id, []]));
  for (const run of runs) byScenario.set(run.scenario_id, [...(byScenario.get(run.scenario_id) ?? []), run]);
  for (const [id, own] of byScenario) if (own.length === 0) byScenario.delete(id);
  const ended = runs.filter((r) => r.status !== 'RUNNING');
  const passed = runs.filter((r) => r.status === 'PASSED').length;
  const scenarios = [...byScenario.entries()].map(([id, own]) => {
    const ok = own.filter((r) => r.status === 'PASSED').length;
    const done = own.filter((r) => r.status !== 'RUNNING').length;
    return {
      scenario_id: id,
      name: fromJson<Partial<RunSettings>>(own[0]!.settings, {}).scenario_name ?? '',
      runs: own.length,
      passed: ok,
      pass_rate: done ? ok / done : 0,
      done: done === own.length,
    };
  });
  const status =
    ended.length < runs.length
      ? 'RUNNING'
      : runs.some((r) => r.status === 'ERROR')
        ? 'ERROR'
        : runs.some((r) => r.status === 'FAILED')
          ? 'FAILED'
          : 'PASSED';
  return {
    id: batch.id,
    batch_id: batch.id,
    status,
    total_scenarios: scenarios.length,
    passed_scenarios: scenarios.filter((s) => s.done && s.passed === s.runs).length,
    failed_scenarios: scenarios.filter((s) => s.done && s.passed < s.runs).length,
    total_runs: runs.length,
    passed_runs: passed,
    pass_rate: ended.length ? passed / ended.length : 0,
    repeat: settings.repeat ?? 1,
    trigger_source: settings.trigger_source ?? 'api',
    publish_on_pass: false,
    created_at: batch.created_at,
    scenarios: scenarios.map(({ done: _done, ...s }) => s),
    runs: runs.map(presentRun),
  };
}

/** Attempts of a run's webhook before it is given up (each a retry of the run's job). */
const WEBHOOK_ATTEMPTS = 5;

/**
 * The `agent_test_run` job: one look at a run. While its call is live, the next look is enqueued;
 * once it ended, the call is judged, the result stored and the webhooks sent.
 */
export async function checkRun(services: Services, job: JobPayloads['agent_test_run'], attempt = 1): Promise<void> {
  const store = services.agentTests;
  let run = await store.runById(job.run_id);
  if (!run) return;
  if (run.status === 'RUNNING') {
    const call = run.call_id ? await services.calls.byId(run.call_id) : undefined;
    // A run whose call is still being placed (a large batch places its calls a few at a time).
    const placing = !run.call_id && services.clock.now().getTime() - Date.parse(run.created_at) < PLACING_GRACE_MS;
    const live = call && (OPEN_STATES as readonly string[]).includes(call.queue_status);
    if ((placing || live) && job.check < MAX_CHECKS) {
      await services.queue.enqueue(
        'agent_test_run',
        { run_id: run.id, check: job.check + 1 },
        { runAt: new Date(services.clock.now().getTime() + RUN_CHECK_MS) },
      );
      return;
    }
    const settings = fromJson<Partial<RunSettings>>(run.settings, {});
    const outcome = !call
      ? {
          status: 'ERROR' as const,
          score: null,
          result: {
            ...emptyResult(),
            error_message: 'the run has no call: it was not placed (the server stopped meanwhile?)',
          },
        }
      : (OPEN_STATES as readonly string[]).includes(call.queue_status)
        ? {
            status: 'ERROR' as const,
            score: null,
            result: { ...emptyResult(), error_message: 'the call did not end in time' },
          }
        : await judgeCall(services, call, settings.assertions ?? []);
    await store.finish(run.id, outcome);
    run = (await store.runById(run.id))!;
  }
  await sendRunWebhook(services, run, attempt);
  if (run.batch_id) await sendBatchWebhook(services, run.account_id, run.batch_id);
}

async function sendRunWebhook(services: Services, run: TestRunRow, attempt: number): Promise<void> {
  const url = fromJson<Partial<RunSettings>>(run.settings, {}).webhook_url;
  if (!url || run.webhook_status === 'delivered') return;
  const failure = await services.webhooks.post(
    run.account_id,
    url,
    `agent_test_run_${run.id}`,
    JSON.stringify(presentRun(run)),
  );
  await services.agentTests.setRunWebhookStatus(run.id, failure === null ? 'delivered' : `failed: ${failure}`);
  // Thrown, the job is tried again later (its policy's backoff): the run is final, so only the webhook is.
  if (failure !== null && attempt < WEBHOOK_ATTEMPTS) throw new Error(`agent test run webhook failed: ${failure}`);
}

async function sendBatchWebhook(services: Services, accountId: string, batchId: string): Promise<void> {
  const batch = await services.agentTests.batch(accountId, batchId);
  if (!batch?.webhook_url || batch.webhook_status !== null) return;
  const runs = await services.agentTests.batchRuns(accountId, batchId);
  if (runs.some((r) => r.status === 'RUNNING')) return;
  if (!(await services.agentTests.claimBatchWebhook(batchId))) return;
  const failure = await services.webhooks.post(
    accountId,
    batch.webhook_url,
    `agent_test_batch_${batch.id}`,
    JSON.stringify(presentBatch(batch, runs)),
  );
  await services.agentTests.setBatchWebhookStatus(batchId, failure === null ? 'delivered' : `failed: ${failure}`);
}
