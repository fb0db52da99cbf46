/**
 * Scenarios through the API (docs/agent-tests.md, "Through the API"): the hosted service's
 * assertion types as Openline's expectations (src/agent-tests/expect.ts), the run's score, and
 * the caller's lines of a scenario or of a finished call. Pure functions, no I/O.
 */
import { randomUUID } from 'node:crypto';
import { isRecord } from '../domain/records.js';
import { Value } from '@sinclair/typebox/value';
import { check, nodesVisited, type CallView } from './expect.js';
import { LineTiming, type Expect, type ScriptedLine } from './suite.js';

type Json = Record<string, unknown>;

/** An assertion as stored on a scenario. */
export interface StoredAssertion {
  id: string;
  type: string;
  name: string | null;
  config: Json;
  is_required: boolean;
  weight: number;
  order: number;
}

/** One assertion's outcome on a run. */
export interface AssertionResult {
  assertion_id: string;
  name: string | null;
  type: string;
  target: string;
  expected: unknown;
  passed: boolean;
  message: string;
  is_required: boolean;
  weight: number;
}

/** What a language-model judge says of a call (the LLM_JUDGE assertion). */
export interface JudgeVerdict {
  score: number;
  passed: boolean;
  reason: string;
}

/**
 * The seam for LLM_JUDGE: judges a finished call against a rubric. Undefined when no language
 * model is configured; the assertion then fails saying so.
 */
export type Judge = (input: { rubric: string; pass_score: number; call: CallView }) => Promise<JudgeVerdict>;

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;
const first = (config: Json, keys: string[]): unknown => keys.map((k) => config[k]).find((v) => v !== undefined);
const texts = (value: unknown): string[] | undefined => {
  if (typeof value === 'string' && value.trim() !== '') return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && v.trim() !== ''))
    return value as string[];
  return undefined;
};

interface Kind {
  /** What it reads of the call, as the hosted results name it. */
  target: (config: Json) => string;
  /** The expected value, or a sentence naming what the config lacks. */
  expected: (config: Json) => { value: unknown } | { problem: string };
  /** The expectation that checks it; none for the judge, which the judge seam decides. */
  expect?: (expected: unknown, config: Json) => Expect;
  /** Passes when the expectation fails (NODE_NOT_VISITED, ...). */
  negate?: string;
}

const value = (keys: string[], what: string) => (config: Json) => {
  const found = first(config, keys);
  return found === undefined || found === '' ? { problem: `needs ${what} in config.${keys[0]}` } : { value: found };
};
const textsOf = (keys: string[], what: string) => (config: Json) => {
  const found = texts(first(config, keys));
  return found ? { value: found } : { problem: `needs ${what} in config.${keys[0]}` };
};
const variableName = (config: Json) => text(first(config, ['variable', 'name', 'key'])) ?? '';

/** The hosted assertion types, each as one of Openline's expectations. */
const KINDS: Record<string, Kind> = {
  LLM_JUDGE: {
    target: () => 'transcript',
    expected: (config) => {
      const rubric = text(first(config, ['prompt', 'rubric', 'criteria']));
      return rubric ? { value: rubric } : { problem: 'needs the question for the judge in config.prompt' };
    },
  },
  CONTAINS: {
    target: () => 'transcript',
    expected: textsOf(['value', 'text', 'expected', 'values'], 'the words'),
    expect: (expected) => ({ transcript_contains: expected as string[] }),
  },
  NOT_CONTAINS: {
    target: () => 'transcript',
    expected: textsOf(['value', 'text', 'expected', 'values'], 'the words'),
    expect: (expected) => ({ transcript_not_contains: expected as string[] }),
  },
  REGEX: {
    target: () => 'transcript',
    expected: (config) => {
      const pattern = text(first(config, ['pattern', 'regex', 'value']));
      if (!pattern) return { problem: 'needs a regular expression in config.pattern' };
      const flags = typeof config.flags === 'string' ? config.flags : '';
      try {
        new RegExp(pattern, flags);
      } catch (error) {
        return { problem: `config.pattern is not a valid regular expression (${(error as Error).message})` };
      }
      return { value: `/${pattern}/${flags}` };
    },
    expect: (expected) => ({ transcript_contains: [expected as string] }),
  },
  VARIABLE_EQUALS: {
    target: (config) => `variables.${variableName(config)}`,
    expected: (config) =>
      !variableName(config)
        ? { problem: 'needs the variable name in config.variable' }
        : value(['value', 'expected'], 'the value')(config),
    expect: (expected, config) => ({ variables: { [variableName(config)]: expected } }),
  },
  VARIABLE_EXISTS: {
    target: (config) => `variables.${variableName(config)}`,
    expected: (config) =>
      variableName(config) ? { value: '*' } : { problem: 'needs the variable name in config.variable' },
    expect: (_expected, config) => ({ variables: { [variableName(config)]: '*' } }),
  },
  NODE_VISITED: {
    target: () => 'nodes_visited',
    expected: (config) => {
      const node = text(first(config, ['node', 'node_name', 'node_id', 'expected', 'value']));
      return node ? { value: node } : { problem: 'needs the node name in config.node' };
    },
    expect: (expected) => ({ pathway_nodes: [expected as string] }),
  },
  NODE_NOT_VISITED: {
    target: () => 'nodes_visited',
    expected: (config) => {
      const node = text(first(config, ['node', 'node_name', 'node_id', 'expected', 'value']));
      return node ? { value: node } : { problem: 'needs the node name in config.node' };
    },
    expect: (expected) => ({ pathway_nodes: [expected as string] }),
    negate: 'was visited',
  },
  NODE_SEQUENCE: {
    target: () => 'nodes_visited',
    expected: textsOf(['nodes', 'expected', 'value'], 'the node names in order'),
    expect: (expected) => ({ pathway_nodes: expected as string[] }),
  },
  ENDED_BY: {
    target: () => 'call_ended_by',
    expected: (config) => {
      const who = text(first(config, ['value', 'expected', 'ended_by']))?.toUpperCase();
      return who === 'ASSISTANT' || who === 'USER'
        ? { value: who }
        : { problem: 'needs ASSISTANT or USER in config.value' };
    },
    expect: (expected) => ({ ended_by: expected as 'ASSISTANT' | 'USER' }),
  },
  TRANSFERRED_TO: {
    target: () => 'transferred_to',
    expected: value(['number', 'value', 'expected', 'phone_number'], 'the number'),
    expect: (expected) => ({ transferred_to: String(expected) }),
  },
  ANSWERED_BY: {
    target: () => 'answered_by',
    expected: value(['value', 'expected'], 'human, voicemail, unknown or no-answer'),
    expect: (expected) => ({ answered_by: String(expected) }),
  },
  CALL_STATUS: {
    target: () => 'status',
    expected: value(['value', 'expected', 'status'], 'the status'),
    expect: (expected) => ({ status: String(expected) }),
  },
  MAX_DURATION: {
    target: () => 'call_length',
    expected: (config) => {
      const seconds = first(config, ['seconds', 'max_seconds', 'value']);
      return typeof seconds === 'number' && seconds > 0
        ? { value: seconds }
        : { problem: 'needs a number of seconds over 0 in config.seconds' };
    },
    expect: (expected) => ({ max_duration_s: expected as number }),
  },
};

/** Other names clients use for the same types. */
const ALIASES: Record<string, string> = {
  TRANSCRIPT_CONTAINS: 'CONTAINS',
  TRANSCRIPT_NOT_CONTAINS: 'NOT_CONTAINS',
  DOES_NOT_CONTAIN: 'NOT_CONTAINS',
  REGEX_MATCH: 'REGEX',
  VARIABLE_EXTRACTED: 'VARIABLE_EQUALS',
  VARIABLE_EQUAL: 'VARIABLE_EQUALS',
  VARIABLE_SET: 'VARIABLE_EXISTS',
  NODE_REACHED: 'NODE_VISITED',
  NODE_TRAVERSED: 'NODE_VISITED',
  NODE_PATH: 'NODE_SEQUENCE',
  NODES_VISITED_IN_ORDER: 'NODE_SEQUENCE',
  CALL_ENDED_BY: 'ENDED_BY',
  TRANSFER: 'TRANSFERRED_TO',
  STATUS: 'CALL_STATUS',
  LLM: 'LLM_JUDGE',
  JUDGE: 'LLM_JUDGE',
};

export const ASSERTION_TYPES = Object.keys(KINDS);

const kindName = (type: string): string => {
  const upper = type
    .trim()
    .toUpperCase()
    .replace(/[\s-]+/g, '_');
  return ALIASES[upper] ?? upper;
};

/**
 * Checks and normalizes a scenario's assertions: each problem is a sentence naming the field
 * (`assertions[1].config.pattern ...`). Empty objects mean "not given" and are dropped.
 */
export function normalizeAssertions(
  input: unknown[],
  errors: string[],
  keep: ReadonlyMap<number, string> = new Map(),
): StoredAssertion[] {
  const out: StoredAssertion[] = [];
  input.forEach((raw, i) => {
    if (!isRecord(raw) || Object.keys(raw).length === 0) return;
    const type = kindName(String(raw.type ?? ''));
    const kind = KINDS[type];
    if (!kind) {
      errors.push(`assertions[${i}].type must be one of: ${ASSERTION_TYPES.join(', ')}`);
      return;
    }
    const config = isRecord(raw.config) ? raw.config : {};
    const expected = kind.expected(config);
    if ('problem' in expected) {
      errors.push(`assertions[${i}] (${type}) ${expected.problem}`);
      return;
    }
    out.push({
      id: typeof raw.id === 'string' && raw.id !== '' ? raw.id : (keep.get(i) ?? randomUUID()),
      type,
      name: typeof raw.name === 'string' && raw.name !== '' ? raw.name : null,
      config,
      is_required: raw.is_required !== false,
      weight: typeof raw.weight === 'number' ? raw.weight : 1,
      order: typeof raw.order === 'number' ? raw.order : i,
    });
  });
  return out.sort((a, b) => a.order - b.order);
}

/** Judges one assertion against a finished call. */
export async function evaluateAssertion(
  assertion: StoredAssertion,
  call: CallView,
  judge: Judge | undefined,
): Promise<AssertionResult> {
  const kind = KINDS[assertion.type]!;
  const expected = kind.expected(assertion.config);
  const base = {
    assertion_id: assertion.id,
    name: assertion.name,
    type: assertion.type,
    target: kind.target(assertion.config),
    expected: 'value' in expected ? expected.value : null,
    is_required: assertion.is_required,
    weight: assertion.weight,
  };
  if (!kind.expect) {
    const threshold = first(assertion.config, ['threshold', 'pass_score']);
    const passScore = typeof threshold === 'number' ? threshold : 0.7;
    if (!judge)
      return {
        ...base,
        passed: false,
        message:
          'LLM_JUDGE needs a language model: set OPENAI_API_KEY or OPENLINE_LLM_BASE_URL (the offline model cannot judge)',
      };
    try {
      const verdict = await judge({ rubric: String(base.expected), pass_score: passScore, call });
      return {
        ...base,
        passed: verdict.passed,
        message: `score ${verdict.score.toFixed(2)} (pass at ${passScore}): ${verdict.reason}`,
      };
    } catch (error) {
      return { ...base, passed: false, message: `the judge failed: ${(error as Error).message}` };
    }
  }
  const failures = check(call, kind.expect(base.expected, assertion.config));
  if (kind.negate) {
    const passed = failures.length > 0;
    return {
      ...base,
      passed,
      message: passed
        ? `"${String(base.expected)}" was not visited`
        : `"${String(base.expected)}" ${kind.negate} (nodes: ${nodesVisited(call).join(' > ')})`,
    };
  }
  return { ...base, passed: failures.length === 0, message: failures.join('; ') || 'passed' };
}

/** Passed weight over all weight (1 with no assertions). */
export function scoreOf(results: AssertionResult[]): number {
  const total = results.reduce((sum, r) => sum + r.weight, 0);
  if (total === 0) return results.every((r) => r.passed) ? 1 : 0;
  return results.reduce((sum, r) => sum + (r.passed ? r.weight : 0), 0) / total;
}

/** The hosted chat history: the caller is `user`, the agent `assistant`. */
export function chatHistory(call: CallView): { role: string; content: string }[] {
  return call.transcripts
    .filter((t) => t.user === 'user' || t.user === 'assistant')
    .map((t) => ({ role: t.user, content: t.text }));
}

const callerRoles = ['user', 'caller', 'human'];

/** Whether an input message is the caller's (a string, or an object whose role is `user` or missing). */
const isCallers = (message: unknown): message is string | Json =>
  typeof message === 'string' ||
  (isRecord(message) && callerRoles.includes(typeof message.role === 'string' ? message.role.toLowerCase() : 'user'));

/**
 * The caller's lines of a scenario's input_messages: strings, or objects whose role is `user` (or
 * missing) with `content` (or `text`, `message`), timed by `after_ms` and `interrupt` when the
 * object has them (as a test file's lines are). Messages of other roles are the agent's and skipped.
 */
export function callerLines(messages: unknown[] | null | undefined): ScriptedLine[] {
  const lines: ScriptedLine[] = [];
  for (const message of messages ?? []) {
    if (!isCallers(message)) continue;
    if (typeof message === 'string') {
      if (message.trim() !== '') lines.push(message.trim());
      continue;
    }
    const words = text(first(message, ['content', 'text', 'message']));
    if (!words) continue;
    const timing = {
      ...(typeof message.after_ms === 'number' && { after_ms: message.after_ms }),
      ...(typeof message.interrupt === 'boolean' && { interrupt: message.interrupt }),
    };
    lines.push(Object.keys(timing).length > 0 ? { say: words.trim(), ...timing } : words.trim());
  }
  return lines;
}

/**
 * What is wrong with the timing of a scenario's input_messages (`after_ms`, `interrupt` on a
 * caller's message, checked as a test file's lines are), each a sentence naming the field.
 */
export function inputMessageProblems(messages: unknown[]): string[] {
  const problems: string[] = [];
  messages.forEach((message, i) => {
    if (!isCallers(message) || typeof message === 'string') return;
    const timing = {
      ...('after_ms' in message && { after_ms: message.after_ms }),
      ...('interrupt' in message && { interrupt: message.interrupt }),
    };
    const problem = Value.Errors(LineTiming, timing).First();
    if (problem) problems.push(`input_messages[${i}].${problem.path.slice(1)}: ${problem.message}`);
  });
  return problems;
}

/**
 * A finished call's caller, as a scripted caller: what the person said, one line per turn (lines
 * said one after another with no agent words between are one turn).
 */
export function userLinesOf(transcripts: { user: string; text: string }[]): string[] {
  const lines: string[] = [];
  let previous: string | undefined;
  for (const t of transcripts) {
    if (t.user === 'user' && t.text.trim() !== '') {
      if (previous === 'user') lines[lines.length - 1] += ` ${t.text.trim()}`;
      else lines.push(t.text.trim());
      previous = 'user';
    } else if (t.user === 'assistant') {
      previous = 'assistant';
    }
  }
  return lines;
}
