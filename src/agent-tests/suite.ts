/**
 * Agent test files (docs/agent-tests.md): YAML or JSON, one file holding many cases. Each case
 * names the agent under test (a Send Call body, optionally a pathway file), the simulated caller
 * (a sandbox persona, a persona file, scripted lines, or a language model with a goal) and what
 * the call must show. Files are checked on load: a mistake is reported with the file and the field.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Type, type Static } from '@sinclair/typebox';
import { Value, type ValueError } from '@sinclair/typebox/value';

const Text = Type.String({ minLength: 1 });

/** The longest pause a scripted line may wait before it is said (a minute of silence ends any call). */
export const MAX_LINE_PAUSE_MS = 60_000;

/**
 * How a scripted line is timed, besides its words: the same fields in a test file's `lines` and
 * in a scenario's `input_messages`.
 */
const lineTiming = {
  /** A pause before the line, in ms (a slow person): the agent may speak again meanwhile. */
  after_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_LINE_PAUSE_MS })),
  /** Said while the agent is speaking: as the agent starts its next words (after_ms into them). */
  interrupt: Type.Optional(Type.Boolean()),
};
export const LineTiming = Type.Object(lineTiming);

/** A scripted caller's line: its words, or its words with timing (`{ say, after_ms, interrupt }`). */
export const ScriptedLine = Type.Union([
  Text,
  Type.Object({ say: Text, ...lineTiming }, { additionalProperties: false }),
]);
export type ScriptedLine = Static<typeof ScriptedLine>;

/** A scripted line as the runner plays it: its words, the pause before them, and whether it talks over the agent. */
export function lineOf(line: ScriptedLine): { say: string; after_ms: number; interrupt: boolean } {
  if (typeof line === 'string') return { say: line, after_ms: 0, interrupt: false };
  return { say: line.say, after_ms: line.after_ms ?? 0, interrupt: line.interrupt === true };
}

export const AgentSpec = Type.Object(
  {
    /** Send Call fields (task, first_sentence, voice, tools, request_data, ...). */
    call: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** A pathway file (as in examples/pathways), relative to the test file: the call follows it. */
    pathway_file: Type.Optional(Text),
    /** An agent of the account on the server (`--server`): its settings place the call. */
    agent_id: Type.Optional(Text),
    /** A pathway of the account on the server (`--server`), at `pathway_version` (default: production). */
    pathway_id: Type.Optional(Text),
    pathway_version: Type.Optional(Type.Integer({ minimum: 0 })),
    /** One of the account's inbound numbers on the server (`--server`): its agent is tested. */
    inbound_number: Type.Optional(Text),
  },
  { additionalProperties: false },
);

export const CallerSpec = Type.Object(
  {
    /** A sandbox number's persona ("0100", "0140", ...). */
    persona: Type.Optional(Type.String({ pattern: '^\\d{4}$' })),
    /** A persona file of your own, relative to the test file. */
    persona_file: Type.Optional(Text),
    /**
     * Scripted: the first line is said on answering, each next one after the agent speaks; a line
     * is words, or `{ say, after_ms, interrupt }` to time it.
     */
    lines: Type.Optional(Type.Array(ScriptedLine, { minItems: 1 })),
    /** Driven by the language model: what the caller wants from the call. */
    goal: Type.Optional(Text),
    /** With `goal`: how the caller talks ("impatient, answers in few words"). */
    personality: Type.Optional(Text),
    /** With `goal`: the most lines the caller says before hanging up. Default 10. */
    max_turns: Type.Optional(Type.Integer({ minimum: 1, maximum: 50 })),
  },
  { additionalProperties: false },
);

/** A custom tool the call must have used: by name, and optionally with these inputs (a subset). */
export const ToolCalled = Type.Union([
  Text,
  Type.Object(
    {
      name: Text,
      /** Inputs the tool was given: a value each (strings compared case-insensitively), or "*" for any. */
      input: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    },
    { additionalProperties: false },
  ),
]);

/** A language model scores the call against the rubric, 0 to 1; the case passes at `pass_score` or more. */
export const Judge = Type.Object(
  {
    rubric: Text,
    pass_score: Type.Number({ minimum: 0, maximum: 1 }),
  },
  { additionalProperties: false },
);

export const Expect = Type.Object(
  {
    status: Type.Optional(Text),
    answered_by: Type.Optional(Text),
    ended_by: Type.Optional(Type.Union([Type.Literal('ASSISTANT'), Type.Literal('USER')])),
    /** Words or /regular expressions/ the transcript must contain (case-insensitive). */
    transcript_contains: Type.Optional(Type.Array(Text)),
    transcript_not_contains: Type.Optional(Type.Array(Text)),
    /** Variables the call must end with: a value, or "*" for any. */
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** Fields the post-call analysis (analysis_schema) must have: a value, or "*" for any. */
    analysis: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** true: a voicemail answered and the agent left a message after its greeting; false: no message was left. */
    voicemail_left: Type.Optional(Type.Boolean()),
    /** Pathway nodes the call must pass, in this order (others may come between). */
    pathway_nodes: Type.Optional(Type.Array(Text)),
    /** Pathway edges the call must follow, in this order: "From node -> To node", or an edge's label. */
    pathway_edges: Type.Optional(Type.Array(Text, { minItems: 1 })),
    transferred_to: Type.Optional(Text),
    max_duration_s: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** Audio mode: no answered turn may take longer (end of the caller's speech to the agent's first audio). */
    max_turn_latency_ms: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** Custom tools the call used, each by name and optionally with inputs. */
    tools_called: Type.Optional(Type.Array(ToolCalled, { minItems: 1 })),
    /** Custom tools the call must not have used. */
    tools_not_called: Type.Optional(Type.Array(Text, { minItems: 1 })),
    /** One rubric or several, each scored by the configured language model. */
    judge: Type.Optional(Type.Union([Judge, Type.Array(Judge, { minItems: 1 })])),
  },
  { additionalProperties: false },
);

export const CaseSpec = Type.Object(
  {
    name: Text,
    agent: Type.Optional(AgentSpec),
    caller: CallerSpec,
    expect: Expect,
  },
  { additionalProperties: false },
);

export const SuiteSpec = Type.Object(
  {
    /** The agent of every case that names none (a case's own `agent` fields win). */
    agent: Type.Optional(AgentSpec),
    cases: Type.Array(CaseSpec, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type AgentSpec = Static<typeof AgentSpec>;
export type CallerSpec = Static<typeof CallerSpec>;
export type Expect = Static<typeof Expect>;
export type ToolCalled = Static<typeof ToolCalled>;
export type Judge = Static<typeof Judge>;

/** A case ready to run: the agent merged with the suite's, paths resolved. */
export interface TestCase {
  suite: string;
  name: string;
  /** Where the case is written, for messages: "tests/lead.yaml: /cases/2". */
  source?: string;
  call: Record<string, unknown>;
  pathwayFile?: string;
  /** The agent under test as it lives on a server (`--server`): an agent, a pathway or an inbound number. */
  onServer?: ServerAgent;
  caller: CallerSpec;
  expect: Expect;
}

/** An agent under test that only a running server has (`openline test --server`). */
export type ServerAgent =
  { agent_id: string } | { pathway_id: string; pathway_version?: number } | { inbound_number: string };

export class SuiteError extends Error {}

/** The fields that name what is tested (besides `call`): a case's own replace its suite's. */
const SOURCES = ['pathway_file', 'agent_id', 'pathway_id', 'inbound_number'] as const;

/** The kinds of caller; a case has exactly one. */
const CALLER_KINDS = ['persona', 'persona_file', 'lines', 'goal'] as const;

/** How to give `openline test` a language model, for messages. */
export const MODEL_HINT =
  'set OPENAI_API_KEY (and OPENLINE_LLM_MODEL), or OPENLINE_LLM_BASE_URL for an OpenAI-compatible server';

/**
 * Cases that cannot run without a language model (a caller driven by one): a SuiteError naming
 * the first such case's field, when no model is configured.
 */
export function checkModelNeeds(cases: TestCase[], hasModel: boolean): void {
  const needy = cases.find((c) => c.caller.goal !== undefined);
  if (needy && !hasModel)
    throw new SuiteError(
      `${needy.source ?? `case "${needy.name}": `}/caller/goal: a caller driven by a language model needs one: ${MODEL_HINT}`,
    );
}

/** What the case's `onServer` agent is called in its file: "agent_id", "pathway_id" or "inbound_number". */
export const serverField = (agent: ServerAgent): string => Object.keys(agent)[0]!;

/**
 * Cases that cannot run where they are asked to: an agent, pathway or inbound number of a server
 * without `--server`, and on a server, a persona file (the server cannot read it) or a sandbox
 * persona calling an agent id (a scenario run plays scripted or model-driven callers only).
 * A SuiteError naming the first such case's field.
 */
export function checkWhere(cases: TestCase[], server: boolean): void {
  for (const c of cases) {
    const at = c.source ?? `case "${c.name}": `;
    if (!server && c.onServer)
      throw new SuiteError(
        `${at}/agent/${serverField(c.onServer)}: names an agent under test on an Openline server: run with --server URL (and --api-key KEY or OPENLINE_API_KEY)`,
      );
    if (server && c.caller.persona_file !== undefined)
      throw new SuiteError(
        `${at}/caller/persona_file: a persona file of your own runs only in process (without --server); on a server give lines, goal or a sandbox persona`,
      );
    if (server && c.caller.persona !== undefined && c.onServer && 'agent_id' in c.onServer)
      throw new SuiteError(
        `${at}/caller/persona: on a server, an agent_id is tested with a caller of lines or goal (a sandbox persona can call an inbound_number, a pathway or a call)`,
      );
  }
}

/**
 * The most precise of a value's errors: for a union (a line that is words or an object), the
 * error of the alternative that got furthest into the value, so that the message names the field
 * (`/cases/0/caller/lines/1/after` Unexpected property), not just the line.
 */
export function precise(error: ValueError): ValueError {
  let best: ValueError | undefined;
  for (const alternative of error.errors) {
    const first = alternative.First();
    if (!first) continue;
    const found = precise(first);
    if (!best || found.path.length > best.path.length) best = found;
  }
  return best ?? error;
}

/** Reads one test file (.yaml, .yml or .json) into its cases. Throws SuiteError naming the file and field. */
export function loadSuite(file: string): TestCase[] {
  let raw: unknown;
  try {
    const text = fs.readFileSync(file, 'utf8');
    raw = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new SuiteError(`${file}: ${(error as Error).message}`);
  }
  const first = Value.Errors(SuiteSpec, raw).First();
  const problem = first && precise(first);
  if (problem) throw new SuiteError(`${file}: ${problem.path || '/'} ${problem.message}`);
  const suite = raw as Static<typeof SuiteSpec>;
  const dir = path.dirname(file);
  const suiteName = path.basename(file).replace(/\.(ya?ml|json)$/i, '');
  return suite.cases.map((c, i) => {
    const kinds = CALLER_KINDS.filter((k) => c.caller[k] !== undefined);
    if (kinds.length !== 1)
      throw new SuiteError(`${file}: /cases/${i}/caller must have exactly one of ${CALLER_KINDS.join(', ')}`);
    const goalOnly = (['personality', 'max_turns'] as const).find((k) => c.caller[k] !== undefined);
    if (goalOnly && c.caller.goal === undefined)
      throw new SuiteError(
        `${file}: /cases/${i}/caller/${goalOnly} goes with goal (a caller driven by a language model)`,
      );
    const own = SOURCES.some((k) => c.agent?.[k] !== undefined) || c.agent?.pathway_version !== undefined;
    const agent = own ? { ...c.agent } : { ...suite.agent, ...c.agent };
    const where = own || !suite.agent ? `/cases/${i}/agent` : '/agent';
    const call = { ...suite.agent?.call, ...c.agent?.call };
    const sources = SOURCES.filter((k) => agent[k] !== undefined);
    if (sources.length > 1)
      throw new SuiteError(`${file}: ${where} names ${sources.join(' and ')}: give one agent under test`);
    if (agent.pathway_version !== undefined && agent.pathway_id === undefined)
      throw new SuiteError(`${file}: ${where}/pathway_version goes with pathway_id`);
    if (sources.length === 0 && typeof call.task !== 'string')
      throw new SuiteError(
        `${file}: /cases/${i}/agent needs call.task, pathway_file, agent_id, pathway_id or inbound_number`,
      );
    const onServer: ServerAgent | undefined =
      agent.agent_id !== undefined
        ? { agent_id: agent.agent_id }
        : agent.pathway_id !== undefined
          ? {
              pathway_id: agent.pathway_id,
              ...(agent.pathway_version !== undefined && { pathway_version: agent.pathway_version }),
            }
          : agent.inbound_number !== undefined
            ? { inbound_number: agent.inbound_number }
            : undefined;
    return {
      suite: suiteName,
      name: c.name,
      source: `${file}: /cases/${i}`,
      call,
      ...(agent.pathway_file && { pathwayFile: path.resolve(dir, agent.pathway_file) }),
      ...(onServer && { onServer }),
      caller: c.caller.persona_file ? { persona_file: path.resolve(dir, c.caller.persona_file) } : c.caller,
      expect: c.expect,
    };
  });
}
