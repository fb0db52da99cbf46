import vm from 'node:vm';
import { functionName } from '../agent/tools.js';
import type { Expect, ToolCalled } from './suite.js';

/** What the expectations read: the call record as GET /v1/calls/{id} returns it. */
export interface CallView {
  status: string;
  answered_by: string | null;
  call_ended_by: string | null;
  call_length: number | null;
  transferred_to: string | null;
  variables: Record<string, unknown> | null;
  /** The post-call analysis (analysis_schema); null until it is written, or without one. */
  analysis?: Record<string, unknown> | null;
  pathway_logs: string | null;
  transcripts: { user: string; text: string }[];
  latency: { turns: { total_ms: number }[] } | null;
}

/**
 * How long the regular expressions of a test may take on one call, together. A user's pattern
 * with nested repetition (`(a+)+b`) backtracks for hours on a text it nearly matches, and V8
 * cannot run a case-insensitive pattern in linear time: the match runs under vm's watchdog, which
 * stops it. The time is the call's, not each pattern's: a scenario of a hundred such patterns
 * would otherwise hold the server a hundred times as long.
 */
const REGEX_TIMEOUT_MS = 200;
const regexContext = vm.createContext({ re: /$^/, text: '' });
const REGEX_TEST = new vm.Script('re.test(text)');
/** The time a call's patterns took so far (check runs once per expectation of a scenario). */
const regexSpentMs = new WeakMap<CallView, number>();

/** A regular expression of an expectation that ran out of time, or found none left (`tried` false). */
class SlowPattern extends Error {
  constructor(readonly tried: boolean) {
    super('slow pattern');
  }
}

function testWithin(call: CallView, re: RegExp, text: string): boolean {
  const spent = regexSpentMs.get(call) ?? 0;
  if (spent >= REGEX_TIMEOUT_MS) throw new SlowPattern(false);
  Object.assign(regexContext, { re, text });
  const start = performance.now();
  try {
    return (
      REGEX_TEST.runInContext(regexContext, { timeout: Math.max(1, Math.ceil(REGEX_TIMEOUT_MS - spent)) }) === true
    );
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new SlowPattern(true);
    throw error;
  } finally {
    regexSpentMs.set(call, spent + performance.now() - start);
    Object.assign(regexContext, { re: /$^/, text: '' });
  }
}

/**
 * "/words/i" is a regular expression; anything else matches as words, case-insensitively. A
 * regular expression that runs out of the call's time throws SlowPattern.
 */
function matcher(pattern: string, call: CallView): (text: string) => boolean {
  const regex = /^\/(.+)\/([a-z]*)$/.exec(pattern);
  if (regex) {
    const re = new RegExp(regex[1]!, regex[2]!.includes('i') ? regex[2] : `${regex[2]}i`);
    return (text) => testWithin(call, re, text);
  }
  const words = pattern.toLowerCase();
  return (text) => text.toLowerCase().includes(words);
}

/** What `find` gives, or the SlowPattern that stopped it. */
function unlessSlow<T>(find: () => T): T | SlowPattern {
  try {
    return find();
  } catch (error) {
    if (error instanceof SlowPattern) return error;
    throw error;
  }
}

const slowFailure = (expectation: string, pattern: string, slow: SlowPattern) =>
  slow.tried
    ? `${expectation}: "${pattern}" took too long to match (over ${REGEX_TIMEOUT_MS} ms): simplify the regular expression (nested repetition such as (a+)+ backtracks without end)`
    : `${expectation}: "${pattern}" was not tried: the call's regular expressions took their ${REGEX_TIMEOUT_MS} ms before it (simplify the one that took too long)`;

const same = (actual: unknown, wanted: unknown): boolean => {
  if (wanted === '*') return actual !== undefined && actual !== null && actual !== '';
  if (typeof wanted === 'string' && typeof actual === 'string')
    return actual.trim().toLowerCase() === wanted.trim().toLowerCase();
  if (typeof wanted === 'number' && typeof actual === 'string') return Number(actual) === wanted;
  if (typeof wanted === 'boolean' && typeof actual === 'string') return actual.toLowerCase() === String(wanted);
  return JSON.stringify(actual) === JSON.stringify(wanted);
};

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Whether `actual` has every field of `wanted`, nested objects field by field, values as `same` compares them. */
function includes(actual: unknown, wanted: unknown): boolean {
  if (isObject(wanted) && isObject(actual))
    return Object.entries(wanted).every(([key, value]) => includes(actual[key], value));
  return same(actual, wanted);
}

/** A custom tool the call used, as its record notes it: `Tool <name> called with <input as JSON>`. */
export interface ToolCall {
  name: string;
  /** Undefined when the record does not say (a call recorded before inputs were noted). */
  input: unknown;
}

/** The custom tools a call used, in order, read from its record's agent-action lines. */
export function toolCalls(call: CallView): ToolCall[] {
  const found: ToolCall[] = [];
  for (const line of call.transcripts) {
    if (line.user !== 'agent-action') continue;
    const m = /^Tool (.+?) called(?: with (.*))?$/s.exec(line.text);
    if (!m) continue;
    let input: unknown;
    try {
      input = m[2] === undefined ? undefined : JSON.parse(m[2]);
    } catch {
      continue;
    }
    found.push({ name: m[1]!, input });
  }
  return found;
}

/** A tool's name as written in a test and as the record has it: any case, or its function name (Book_Appointment). */
const sameTool = (a: string, b: string): boolean =>
  a.trim().toLowerCase() === b.trim().toLowerCase() || functionName(a).toLowerCase() === functionName(b).toLowerCase();

const shown = (input: unknown): string => (input === undefined ? 'no recorded input' : JSON.stringify(input));

function checkToolCalled(calls: ToolCall[], wanted: ToolCalled): string | null {
  const { name, input } = typeof wanted === 'string' ? { name: wanted, input: undefined } : wanted;
  const named = calls.filter((c) => sameTool(c.name, name));
  if (named.length === 0)
    return `tools_called: ${name} was not called (tools called: ${[...new Set(calls.map((c) => c.name))].join(', ') || 'none'})`;
  if (input === undefined || named.some((c) => includes(c.input, input))) return null;
  return `tools_called: ${name} was called, but not with ${JSON.stringify(input)} (it got ${named.map((c) => shown(c.input)).join('; ')})`;
}

/**
 * The message the agent left on a voicemail: what it said after the engine noted, once the
 * greeting and the beep were over, that it was leaving one (the agent-action line "Voicemail
 * detected: leaving a message"). Undefined when it left none.
 */
export function voicemailMessage(call: CallView): string | undefined {
  const at = call.transcripts.findIndex(
    (t) => t.user === 'agent-action' && /^Voicemail detected: leaving a message/.test(t.text),
  );
  if (at < 0) return undefined;
  const said = call.transcripts
    .slice(at + 1)
    .filter((t) => t.user === 'assistant' && t.text.trim() !== '')
    .map((t) => t.text.trim());
  return said.length > 0 ? said.join(' ') : undefined;
}

function checkVoicemailLeft(call: CallView, wanted: boolean): string | null {
  const message = call.answered_by === 'voicemail' ? voicemailMessage(call) : undefined;
  if (!wanted)
    return message === undefined ? null : `voicemail_left: the agent left a message on a voicemail ("${message}")`;
  if (message !== undefined) return null;
  if (call.answered_by !== 'voicemail')
    return `voicemail_left: no voicemail answered (answered_by ${call.answered_by ?? 'null'}), so no message was left`;
  const hungUp = call.transcripts.some(
    (t) => t.user === 'agent-action' && /^Voicemail detected: hanging up/.test(t.text),
  );
  return `voicemail_left: a voicemail answered, but the agent left no message${
    hungUp ? ' (it hung up after the greeting: the call has no voicemail_message)' : ''
  }`;
}

/** A step of the call's pathway_logs, the fields the expectations read. */
interface PathwayStep {
  event?: string;
  node_id?: string;
  node_name?: string;
  chosen_edge?: { label?: string; target?: string } | null;
}

/** The steps of a call's pathway, from its pathway_logs (none without a pathway). */
function pathwaySteps(call: CallView): PathwayStep[] {
  try {
    const steps: unknown = call.pathway_logs ? JSON.parse(call.pathway_logs) : [];
    return Array.isArray(steps) ? (steps as PathwayStep[]) : [];
  } catch {
    return [];
  }
}

/** The nodes a call's pathway entered, by name, in order. */
export function nodesVisited(call: CallView): string[] {
  return pathwaySteps(call)
    .filter((s) => s.event === 'entered')
    .map((s) => String(s.node_name));
}

/** An edge a call's pathway followed: from and to a node, by name, and the edge's label when the log has it. */
export interface EdgeFollowed {
  from: string;
  to: string;
  label: string | null;
}

/**
 * The edges a call's pathway followed, in order: each node entered after another, with the label
 * of the edge chosen to get there (a jump to a global node has the node's global label; a step
 * taken without the caller, after a webhook, has none). The way back from a global node is not
 * an edge.
 */
export function edgesFollowed(call: CallView): EdgeFollowed[] {
  const edges: EdgeFollowed[] = [];
  let at: PathwayStep | undefined;
  let chosen: PathwayStep['chosen_edge'] = null;
  for (const step of pathwaySteps(call)) {
    if (step.event === 'entered') {
      if (at)
        edges.push({
          from: String(at.node_name),
          to: String(step.node_name),
          label: chosen?.target === step.node_id && chosen?.label ? chosen.label : null,
        });
      at = step;
      chosen = null;
    } else if (step.event === 'returned') {
      at = step;
      chosen = null;
    } else if (step.chosen_edge) {
      chosen = step.chosen_edge;
    }
  }
  return edges;
}

const edgeName = (edge: EdgeFollowed): string => `${edge.from} -> ${edge.to}${edge.label ? ` [${edge.label}]` : ''}`;

/** Whether a followed edge is the one a test names: "From -> To" by node names, or else the edge's label. */
function isEdge(edge: EdgeFollowed, wanted: string): boolean {
  const arrow = /^(.+?)\s*->\s*(.+)$/.exec(wanted.trim());
  if (arrow) return edge.from === arrow[1]!.trim() && edge.to === arrow[2]!.trim();
  return edge.label !== null && edge.label.trim() === wanted.trim();
}

/** The transcript as the report shows it: one "role: words" line each. */
export function transcriptText(call: CallView): string {
  return call.transcripts.map((t) => `${t.user}: ${t.text}`).join('\n');
}

/**
 * Checks one call against a case's expectations. Returns what failed, each a sentence naming the
 * expectation, what was wanted and what the call showed; empty when the case passed.
 */
export function check(call: CallView, expect: Expect): string[] {
  const failures: string[] = [];
  const transcript = transcriptText(call);
  if (expect.status !== undefined && call.status !== expect.status)
    failures.push(`status: wanted ${expect.status}, the call ended ${call.status}`);
  if (expect.answered_by !== undefined && call.answered_by !== expect.answered_by)
    failures.push(`answered_by: wanted ${expect.answered_by}, got ${call.answered_by ?? 'null'}`);
  if (expect.ended_by !== undefined && call.call_ended_by !== expect.ended_by)
    failures.push(`ended_by: wanted ${expect.ended_by}, got ${call.call_ended_by ?? 'null'}`);
  for (const pattern of expect.transcript_contains ?? []) {
    const said = unlessSlow(() => matcher(pattern, call)(transcript));
    if (said instanceof SlowPattern) failures.push(slowFailure('transcript_contains', pattern, said));
    else if (!said) failures.push(`transcript_contains: "${pattern}" was not said`);
  }
  for (const pattern of expect.transcript_not_contains ?? []) {
    const matches = matcher(pattern, call);
    const line = unlessSlow(() => call.transcripts.find((t) => matches(`${t.user}: ${t.text}`)));
    if (line instanceof SlowPattern) failures.push(slowFailure('transcript_not_contains', pattern, line));
    else if (line) failures.push(`transcript_not_contains: "${pattern}" was said (${line.user}: "${line.text}")`);
  }
  for (const [name, wanted] of Object.entries(expect.variables ?? {})) {
    const actual = call.variables?.[name];
    if (!same(actual, wanted))
      failures.push(
        `variables.${name}: wanted ${JSON.stringify(wanted)}, got ${actual === undefined ? 'nothing' : JSON.stringify(actual)}`,
      );
  }
  for (const [name, wanted] of Object.entries(expect.analysis ?? {})) {
    const actual = call.analysis?.[name];
    if (!same(actual, wanted))
      failures.push(
        `analysis.${name}: wanted ${JSON.stringify(wanted)}, got ${
          actual !== undefined
            ? JSON.stringify(actual)
            : call.analysis
              ? 'nothing'
              : 'nothing (the call has no analysis: it needs an analysis_schema and a language model)'
        }`,
      );
  }
  if (expect.voicemail_left !== undefined) {
    const failure = checkVoicemailLeft(call, expect.voicemail_left);
    if (failure) failures.push(failure);
  }
  if (expect.pathway_nodes) {
    const visited = nodesVisited(call);
    let at = 0;
    for (const wanted of expect.pathway_nodes) {
      const found = visited.indexOf(wanted, at);
      if (found < 0) {
        failures.push(
          `pathway_nodes: "${wanted}" was not reached${at > 0 ? ` after "${visited[at - 1]}"` : ''} (nodes: ${visited.join(' > ') || 'none'})`,
        );
        break;
      }
      at = found + 1;
    }
  }
  if (expect.pathway_edges) {
    const followed = edgesFollowed(call);
    let at = 0;
    for (const wanted of expect.pathway_edges) {
      const found = followed.findIndex((edge, i) => i >= at && isEdge(edge, wanted));
      if (found < 0) {
        failures.push(
          `pathway_edges: "${wanted}" was not followed${at > 0 ? ` after "${edgeName(followed[at - 1]!)}"` : ''} (edges: ${followed.map(edgeName).join('; ') || 'none'})`,
        );
        break;
      }
      at = found + 1;
    }
  }
  if (expect.transferred_to !== undefined && call.transferred_to !== expect.transferred_to)
    failures.push(`transferred_to: wanted ${expect.transferred_to}, got ${call.transferred_to ?? 'no transfer'}`);
  if (expect.max_duration_s !== undefined) {
    const seconds = (call.call_length ?? 0) * 60;
    if (seconds > expect.max_duration_s)
      failures.push(`max_duration_s: the call took ${seconds.toFixed(1)} s, over ${expect.max_duration_s} s`);
  }
  if (expect.tools_called || expect.tools_not_called) {
    const calls = toolCalls(call);
    for (const wanted of expect.tools_called ?? []) {
      const failure = checkToolCalled(calls, wanted);
      if (failure) failures.push(failure);
    }
    for (const name of expect.tools_not_called ?? []) {
      const used = calls.find((c) => sameTool(c.name, name));
      if (used) failures.push(`tools_not_called: ${name} was called (with ${shown(used.input)})`);
    }
  }
  if (expect.max_turn_latency_ms !== undefined) {
    const turns = call.latency?.turns ?? [];
    if (turns.length === 0) failures.push('max_turn_latency_ms: no turn was timed (latency needs audio mode: --audio)');
    const slowest = Math.max(0, ...turns.map((t) => t.total_ms));
    if (slowest > expect.max_turn_latency_ms)
      failures.push(
        `max_turn_latency_ms: a turn took ${Math.round(slowest)} ms, over ${expect.max_turn_latency_ms} ms`,
      );
  }
  return failures;
}
