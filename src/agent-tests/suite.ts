/**
 * Agent test files (docs/agent-tests.md): YAML or JSON, one file holding many cases. Each case
 * names the agent under test (a Send Call body, optionally a pathway file), the simulated caller
 * (a sandbox persona, a persona file, or scripted lines) and what the call must show. Files are
 * checked on load: a mistake is reported with the file and the field.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

const Text = Type.String({ minLength: 1 });

export const AgentSpec = Type.Object(
  {
    /** Send Call fields (task, first_sentence, voice, tools, request_data, ...). */
    call: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** A pathway file (as in examples/pathways), relative to the test file: the call follows it. */
    pathway_file: Type.Optional(Text),
  },
  { additionalProperties: false },
);

export const CallerSpec = Type.Object(
  {
    /** A sandbox number's persona ("0100", "0140", ...). */
    persona: Type.Optional(Type.String({ pattern: '^\\d{4}$' })),
    /** A persona file of your own, relative to the test file. */
    persona_file: Type.Optional(Text),
    /** Scripted: the first line is said on answering, each next one after the agent speaks. */
    lines: Type.Optional(Type.Array(Text, { minItems: 1 })),
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
    /** Pathway nodes the call must pass, in this order (others may come between). */
    pathway_nodes: Type.Optional(Type.Array(Text)),
    transferred_to: Type.Optional(Text),
    max_duration_s: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** Audio mode: no answered turn may take longer (end of the caller's speech to the agent's first audio). */
    max_turn_latency_ms: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
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

/** A case ready to run: the agent merged with the suite's, paths resolved. */
export interface TestCase {
  suite: string;
  name: string;
  call: Record<string, unknown>;
  pathwayFile?: string;
  caller: CallerSpec;
  expect: Expect;
}

export class SuiteError extends Error {}

/** Reads one test file (.yaml, .yml or .json) into its cases. Throws SuiteError naming the file and field. */
export function loadSuite(file: string): TestCase[] {
  let raw: unknown;
  try {
    const text = fs.readFileSync(file, 'utf8');
    raw = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new SuiteError(`${file}: ${(error as Error).message}`);
  }
  const problem = Value.Errors(SuiteSpec, raw).First();
  if (problem) throw new SuiteError(`${file}: ${problem.path || '/'} ${problem.message}`);
  const suite = raw as Static<typeof SuiteSpec>;
  const dir = path.dirname(file);
  const suiteName = path.basename(file).replace(/\.(ya?ml|json)$/i, '');
  return suite.cases.map((c, i) => {
    const kinds = ['persona', 'persona_file', 'lines'].filter((k) => c.caller[k as keyof CallerSpec] !== undefined);
    if (kinds.length !== 1)
      throw new SuiteError(`${file}: /cases/${i}/caller must have exactly one of persona, persona_file, lines`);
    const agent = { ...suite.agent, ...c.agent };
    const call = { ...suite.agent?.call, ...c.agent?.call };
    if (!agent.pathway_file && typeof call.task !== 'string')
      throw new SuiteError(`${file}: /cases/${i}/agent needs call.task or pathway_file`);
    return {
      suite: suiteName,
      name: c.name,
      call,
      ...(agent.pathway_file && { pathwayFile: path.resolve(dir, agent.pathway_file) }),
      caller: c.caller.persona_file ? { persona_file: path.resolve(dir, c.caller.persona_file) } : c.caller,
      expect: c.expect,
    };
  });
}
