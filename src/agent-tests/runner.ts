import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { buildServices, type Services } from '../services.js';
import { buildApp } from '../app.js';
import type { Api } from '../api/types.js';
import { check, transcriptText, type CallView } from './expect.js';
import { judgeCall, judgesOf, testModel, type JudgeScore, type TestModel } from './judge.js';
import { modelCaller } from './caller.js';
import { checkModelNeeds, checkWhere, lineOf, SuiteError, type ScriptedLine, type TestCase } from './suite.js';

export interface CaseResult {
  suite: string;
  name: string;
  /** One entry per run (--repeat). */
  runs: {
    passed: boolean;
    failures: string[];
    transcript: string;
    callId: string | null;
    seconds: number;
    /** The judge's scores, a rubric each (`expect.judge` with a language model). */
    judged?: JudgeScore[];
  }[];
}

export interface RunOptions {
  /** The environment the server would run with (a language model, TTS, ...). */
  env: Record<string, string | undefined>;
  /** Runs of each case (a model's answers vary: the report gives the pass rate). */
  repeat?: number;
  /** Real audio on the sandbox (espeak-ng voices, VAD, latency figures) instead of text. */
  audio?: boolean;
  /** Cases at the same time. */
  parallel?: number;
  /** Called as each run finishes. */
  onRun?: (result: CaseResult, run: CaseResult['runs'][number]) => void;
}

/** Sandbox numbers the runner gives its scripted callers: +1 415 555-5000 and up. */
const FIRST_NUMBER = 5000;
const CASE_TIMEOUT_MS = 180_000;
/** How long after its end a call's post-call work (summary, analysis) is waited for. */
const POST_CALL_WAIT_MS = 30_000;

/**
 * A scripted caller as a sandbox persona: the first line on answering, each next one after the
 * agent speaks. A line with `after_ms` is said after that pause (what the agent says meanwhile,
 * its silence prompt, is heard, and the caller then waits for the agent's answer to the line, not
 * for what it said during the pause); one with `interrupt` is said as the agent starts its next
 * words, over them (`after_ms` later). The persona's reply delay comes before each line.
 */
export function scriptedPersona(id: string, number: string, lines: readonly ScriptedLine[]): object {
  const said = lines.map(lineOf);
  const paused = (i: number) => said[i]!.after_ms > 0;
  const after = (i: number) => (i + 1 < said.length ? `s${i + 1}` : paused(i) ? 'end-fresh' : 'end');
  const saying = (i: number): object[] => [
    ...(paused(i) ? [{ pause: said[i]!.after_ms }] : []),
    { say: said[i]!.say },
    { goto: after(i) },
  ];
  // After a paused line, the agent's words of the pause are not its answer to the line.
  const fresh = (i: number) => (i > 0 && paused(i - 1) ? { fresh: true } : {});
  const states: Record<string, object[]> = {};
  said.forEach((line, i) => {
    states[`s${i}`] =
      i === 0 && !line.interrupt
        ? saying(0)
        : [
            {
              listen: {
                on: [line.interrupt ? { speechStart: true, do: saying(i) } : { any: true, do: saying(i) }],
                timeoutMs: 30_000,
                timeout: [{ hangup: true }],
                ...fresh(i),
              },
            },
          ];
  });
  // Lines said: wait for the agent to finish, say goodbye back, or hang up after a silence.
  const end = {
    on: [{ keywords: ['goodbye', 'bye'], do: [{ say: 'Bye!' }, { hangup: true }] }],
    otherwise: [{ goto: 'end' }],
    timeoutMs: 15_000,
    timeout: [{ hangup: true }],
  };
  states.end = [{ listen: end }];
  if (paused(said.length - 1)) states['end-fresh'] = [{ listen: { ...end, fresh: true } }];
  return {
    id,
    number,
    name: `Scripted caller ${id}`,
    description: 'Written by openline test from a case of a test file.',
    ring: { kind: 'answer', afterMs: 1000 },
    replyDelayMs: 400,
    start: 's0',
    states,
  };
}

/**
 * A caller driven by the language model: it improvises (src/carriers/sandbox/persona.ts) a line
 * on answering and each time the agent has spoken, until its line writer hangs up, or after a
 * silence.
 */
export function modelPersona(id: string, number: string): object {
  return {
    id,
    number,
    name: `Model-driven caller ${id}`,
    description: 'Written by openline test from a case with a caller goal.',
    ring: { kind: 'answer', afterMs: 1000 },
    replyDelayMs: 400,
    start: 'open',
    states: {
      open: [{ improvise: true }, { goto: 'talk' }],
      talk: [
        {
          listen: {
            on: [{ any: true, do: [{ improvise: true }, { goto: 'talk' }] }],
            timeoutMs: 30_000,
            timeout: [{ hangup: true }],
          },
        },
      ],
    },
  };
}

/** The persona id of a case's own caller (scripted, model-driven or from a file). */
const personaId = (index: number) => `agent-test-${index}`;

/** Who answers each case: a persona file per scripted, model-driven or file caller, in a folder of this run. */
function writePersonas(cases: TestCase[], dir: string): string[] {
  return cases.map((c, i) => {
    if (c.caller.persona) return `+1415555${c.caller.persona}`;
    const number = String(FIRST_NUMBER + i);
    const id = personaId(i);
    const persona = c.caller.lines
      ? scriptedPersona(id, number, c.caller.lines)
      : c.caller.goal !== undefined
        ? modelPersona(id, number)
        : { ...(JSON.parse(fs.readFileSync(c.caller.persona_file!, 'utf8')) as object), id, number };
    fs.writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(persona));
    return `+1415555${number}`;
  });
}

type Json = Record<string, unknown>;

/** One request to an Openline server's API, as a client sends it: the in-process server or `--server`. */
export type Client = (
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  body?: unknown,
) => Promise<{ status: number; body: Json }>;

/** The in-process server as a client. */
function injectClient(app: Api, key: string): Client {
  return async (method, url, body) => {
    const r = await app.inject({
      method,
      url,
      headers: { authorization: key, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { payload: JSON.stringify(body) }),
    });
    return { status: r.statusCode, body: r.json() as Json };
  };
}

/** What the server said when it refused a request: its errors, or its message. */
const refusal = (body: Json): string => JSON.stringify(body.errors ?? body.message ?? body);

/** A case's call as placed: its id, or why the server refused it. */
type Placed = { callId: string } | { refused: string };

/** One pathway per pathway file, created on the server and shared by the cases that name it. */
async function createPathways(client: Client, cases: TestCase[]): Promise<Map<string, string>> {
  const pathways = new Map<string, string>();
  for (const file of new Set(cases.flatMap((c) => (c.pathwayFile ? [c.pathwayFile] : [])))) {
    const spec = JSON.parse(fs.readFileSync(file, 'utf8')) as Json;
    const r = await client('POST', '/v1/pathway/create', {
      name: spec.name ?? path.basename(file),
      nodes: spec.nodes,
      edges: spec.edges,
    });
    if (r.status !== 200) throw new Error(`${file}: ${refusal(r.body)}`);
    pathways.set(file, String(r.body.pathway_id));
  }
  return pathways;
}

/**
 * Runs every case (`repeat` times each, `parallel` at once): `place` places its call, the call's
 * record is read through the API until it has ended, and judged by the case's expectations (and
 * the model, for `judge`).
 */
async function runEach(
  client: Client,
  cases: TestCase[],
  options: RunOptions,
  model: TestModel | undefined,
  place: (c: TestCase, index: number) => Promise<Placed>,
  callerErrors: string[][],
  pollMs: number,
): Promise<CaseResult[]> {
  const results: CaseResult[] = cases.map((c) => ({ suite: c.suite, name: c.name, runs: [] }));
  const jobs = cases.flatMap((c, i) => Array.from({ length: options.repeat ?? 1 }, () => i));
  const runOne = async (i: number) => {
    const c = cases[i]!;
    const started = Date.now();
    const placed = await place(c, i);
    let run: CaseResult['runs'][number];
    if ('refused' in placed) {
      run = {
        passed: false,
        failures: [`the call was refused: ${placed.refused}`],
        transcript: '',
        callId: null,
        seconds: 0,
      };
    } else {
      const { callId } = placed;
      let call: CallView | undefined;
      let ended: number | undefined;
      while (Date.now() - started < CASE_TIMEOUT_MS) {
        const r = await client('GET', `/v1/calls/${callId}`);
        if (r.body.completed === true) {
          ended ??= Date.now();
          call = r.body as unknown as CallView;
          // The analysis comes with the post-call work (its summary, or the analysis, is written),
          // a moment after the call's end: a case that checks it waits for it, for a while.
          const postCallDone = r.body.summary != null || r.body.analysis != null;
          if (!c.expect.analysis || postCallDone || Date.now() - ended > POST_CALL_WAIT_MS) break;
        }
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
      const judged = call ? await judgeCall(call, judgesOf(c.expect.judge), model) : undefined;
      const failures = call
        ? [...check(call, c.expect), ...judged!.failures]
        : [`the call did not end within ${CASE_TIMEOUT_MS / 1000} s`];
      failures.unshift(...callerErrors[i]!.splice(0));
      run = {
        passed: failures.length === 0,
        failures,
        ...(judged?.scores.length && { judged: judged.scores }),
        transcript: call ? transcriptText(call) : '',
        callId,
        seconds: (Date.now() - started) / 1000,
      };
    }
    results[i]!.runs.push(run);
    options.onRun?.(results[i]!, run);
  };
  const parallel = Math.max(1, options.parallel ?? 8);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, jobs.length) }, async () => {
      while (next < jobs.length) await runOne(jobs[next++]!);
    }),
  );
  return results;
}

/**
 * Runs test cases as real calls: a server in this process (in-memory storage, the sandbox network
 * with the cases' callers, the configured language model or the offline one), each case placed
 * with POST /v1/calls and judged on its call record (and by the model, for `judge`). Throws a
 * SuiteError when a case needs a language model and none is configured, or names an agent that
 * only a running server has (`runOnServer`).
 */
export async function runCases(cases: TestCase[], options: RunOptions): Promise<CaseResult[]> {
  checkWhere(cases, false);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-test-'));
  const numbers = writePersonas(cases, dir);
  const base = loadConfig({
    ...options.env,
    DATA_DIR: ':memory:',
    OPENLINE_SANDBOX_PERSONAS: [options.env.OPENLINE_SANDBOX_PERSONAS, dir].filter(Boolean).join(':'),
    OPENLINE_SANDBOX_AUDIO: options.audio ? '1' : '0',
    OPENLINE_SIP_LISTEN: 'off',
    OPENLINE_RATE_LIMIT_PER_MINUTE: '0',
    OPENLINE_ALLOW_PRIVATE_URLS: 'true',
  });
  // Offline text calls run on an accelerated clock. Audio plays in real time (its timing is what
  // is tested), and so do calls with a language model: its answers take real time, and on a fast
  // clock the agent or the caller would give up on a silence that is only the model thinking.
  // OPENLINE_TIME_SCALE, when set, wins for text calls (a fast local model may run faster).
  const timeScale = options.audio
    ? 1
    : options.env.OPENLINE_TIME_SCALE !== undefined
      ? base.timeScale
      : base.llm
        ? 1
        : 20;
  const config: Config = { ...base, timeScale, dataDir: ':memory:', twilio: undefined };
  const model = testModel(config);
  let services: Services | undefined;
  try {
    checkModelNeeds(cases, model !== undefined);
    services = await buildServices(config);
    const app = await buildApp(services);
    await services.startWorkers();
    const { key } = await services.accounts.create('agent tests');
    const client = injectClient(app, key);
    // What went wrong with a model-driven caller, per case, for its report.
    const callerErrors = cases.map((): string[] => []);
    cases.forEach((c, i) => {
      if (c.caller.goal !== undefined && model)
        services!.sandbox.setLineWriter(
          personaId(i),
          modelCaller(c.caller, model, (message) => callerErrors[i]!.push(message)),
        );
    });
    const pathways = await createPathways(client, cases);
    const place = async (c: TestCase, i: number): Promise<Placed> => {
      const body = {
        ...c.call,
        phone_number: numbers[i],
        ...(c.pathwayFile && { pathway_id: pathways.get(c.pathwayFile) }),
      };
      const placed = await client('POST', '/v1/calls', body);
      return placed.status === 200 ? { callId: String(placed.body.call_id) } : { refused: refusal(placed.body) };
    };
    return await runEach(client, cases, options, model, place, callerErrors, 100);
  } finally {
    await services?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A scripted line as a scenario's input message: the hosted `{role, content}`, with its timing fields if any. */
const inputMessage = (line: ScriptedLine): Json =>
  typeof line === 'string' ? { role: 'user', content: line } : { role: 'user', content: line.say, ...omitSay(line) };
const omitSay = ({ say: _say, ...timing }: Exclude<ScriptedLine, string>) => timing;

/**
 * The agent-testing scenario of a case with a scripted or model-driven caller: the agent under
 * test as a scenario names it, and the caller's lines (`input_messages`) or goal
 * (`tester_persona_prompt`, played by the server's language model). It has no assertions: the
 * case's expectations judge the call here.
 */
function scenarioOf(c: TestCase, pathwayId: string | undefined): Json {
  const agent = c.onServer;
  return {
    name: `openline test: ${c.suite} › ${c.name}`,
    ...(Object.keys(c.call).length > 0 && { call: c.call }),
    ...(agent && 'agent_id' in agent && { agent_id: agent.agent_id }),
    ...(agent && 'pathway_id' in agent && { pathway_id: agent.pathway_id }),
    ...(agent && 'inbound_number' in agent && { phone_number: agent.inbound_number }),
    ...(pathwayId && { pathway_id: pathwayId }),
    ...(c.caller.lines
      ? { input_messages: c.caller.lines.map(inputMessage) }
      : {
          tester_persona_prompt: c.caller.goal,
          ...(c.caller.personality && { tester_persona_name: c.caller.personality }),
          ...(c.caller.max_turns && { max_turns: c.caller.max_turns }),
        }),
    assertions: [],
  };
}

/**
 * Runs test cases on a running Openline server (`openline test --server`), through its public API
 * as the account of `apiKey`: a case with scripted lines or a goal becomes an agent-testing
 * scenario, run once per repeat (the server's own scripted caller on a number of the run's own,
 * or its language model playing the goal); a sandbox persona calls an inbound number with POST
 * /v1/sandbox/inbound, and is called by a pathway or an inline agent with POST /v1/calls. Each
 * call's record is judged here, as in process. The scenarios and pathways made for the run are
 * deleted at the end. A SuiteError when the server does not answer as Openline does; what the
 * client throws (an unreachable server, a refused key) is thrown on.
 */
export async function runOnServer(cases: TestCase[], client: Client, options: RunOptions): Promise<CaseResult[]> {
  checkWhere(cases, true);
  const probe = await client('GET', '/v1/agent-testing/scenarios');
  if (probe.status !== 200)
    throw new SuiteError(`--server: the server does not answer as an Openline server (HTTP ${probe.status})`);
  const model = testModel(loadConfig(options.env));
  const pathways = await createPathways(client, cases);
  const scenarios = new Map<number, Promise<string | Placed>>();
  const scenario = (c: TestCase, i: number): Promise<string | Placed> => {
    if (!scenarios.has(i))
      scenarios.set(
        i,
        client('POST', '/v1/agent-testing/scenarios', scenarioOf(c, c.pathwayFile && pathways.get(c.pathwayFile))).then(
          (r) => (r.status === 200 ? String(r.body.id) : { refused: refusal(r.body) }),
        ),
      );
    return scenarios.get(i)!;
  };
  const version = (c: TestCase) => (c.onServer && 'pathway_id' in c.onServer ? c.onServer.pathway_version : undefined);
  const place = async (c: TestCase, i: number): Promise<Placed> => {
    let r;
    if (c.caller.persona === undefined) {
      const id = await scenario(c, i);
      if (typeof id !== 'string') return id;
      const v = version(c);
      r = await client('POST', `/v1/agent-testing/scenarios/${id}/run`, v === undefined ? {} : { version_number: v });
    } else if (c.onServer && 'inbound_number' in c.onServer) {
      r = await client('POST', '/v1/sandbox/inbound', {
        from: `+1415555${c.caller.persona}`,
        to: c.onServer.inbound_number,
      });
    } else {
      const v = version(c);
      r = await client('POST', '/v1/calls', {
        ...c.call,
        phone_number: `+1415555${c.caller.persona}`,
        ...(c.onServer && 'pathway_id' in c.onServer && { pathway_id: c.onServer.pathway_id }),
        ...(v !== undefined && { pathway_version: v }),
        ...(c.pathwayFile && { pathway_id: pathways.get(c.pathwayFile) }),
      });
    }
    return r.status === 200 ? { callId: String(r.body.call_id) } : { refused: refusal(r.body) };
  };
  try {
    return await runEach(
      client,
      cases,
      options,
      model,
      place,
      cases.map(() => []),
      250,
    );
  } finally {
    for (const id of await Promise.all(scenarios.values()))
      if (typeof id === 'string') await client('DELETE', `/v1/agent-testing/scenarios/${id}`).catch(() => undefined);
    for (const id of pathways.values()) await client('DELETE', `/v1/pathway/${id}`).catch(() => undefined);
  }
}
