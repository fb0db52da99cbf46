/**
 * The language model's side of pathways: structured choices through function calls (which edge
 * or global node, whether the node's condition is met, the values of extractVars) and speech for
 * prompt nodes. Every function throws LlmError on failure; the runner falls back to the offline
 * model's choice so a call never stalls on a model.
 */
import { complete, LlmError, type ChatMessage, type LlmProvider, type LlmTool } from '../providers/llm/types.js';
import type { ExtractVarType } from './offline.js';
import { isRecord } from '../domain/records.js';

export interface PathwayLlm {
  provider: LlmProvider;
  /** The model id for the call's model tier; a node's modelOptions.modelName overrides it. */
  model: string;
}

export interface ModelSettings {
  model: string;
  temperature?: number;
  /** Told when the model's first token arrives (the turn's latency keeps the first of the turn). */
  onFirstToken?: () => void;
  /** Cancels the request (the call ended). */
  signal?: AbortSignal;
}

export interface RouteOption {
  id: string;
  /** "edge" leaves the current node; "global" jumps to a global node. */
  kind: 'edge' | 'global';
  label: string;
  description?: string;
  /** The edge's variable conditions as text: it is taken only when they hold. */
  onlyWhen?: string;
}

export interface RouteDecision {
  /** An option id, or null to stay on the node. */
  choice: string | null;
  reason: string;
  /** Whether the node's condition is met (true when the node has none). */
  conditionMet: boolean;
  /** Values of the node's extractVars found in the conversation (typed; only those given). */
  extracted: Record<string, string | number | boolean>;
}

const STAY = 'stay';

function parseArguments(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The arguments of the one function the model was asked to call, or of a JSON reply in text. */
async function callFunction(
  llm: PathwayLlm,
  settings: ModelSettings,
  messages: ChatMessage[],
  tool: LlmTool,
): Promise<Record<string, unknown>> {
  const reply = await complete(
    llm.provider,
    {
      model: settings.model,
      messages,
      tools: [tool],
      ...(settings.temperature !== undefined && { temperature: settings.temperature }),
      ...(settings.signal && { signal: settings.signal }),
    },
    { ...(settings.onFirstToken && { onFirst: settings.onFirstToken }) },
  );
  const call = reply.toolCalls.find((c) => c.name === tool.name);
  if (call) return parseArguments(call.arguments);
  const json = /\{[^]*\}/.exec(reply.text);
  if (json) return parseArguments(json[0]);
  throw new LlmError(`the model did not call ${tool.name}`, true);
}

/**
 * Which way the conversation goes after the caller's words: one of the options or stay, with a
 * reason; with a condition, also whether it is met (the node is kept until it is); with
 * extractVars, their values, in the same function call (one round trip per turn).
 */
export async function chooseRoute(
  llm: PathwayLlm,
  settings: ModelSettings,
  context: {
    system: string;
    history: ChatMessage[];
    heard: string;
    condition?: string;
    options: RouteOption[];
    vars?: readonly [string, ExtractVarType, string][];
  },
): Promise<RouteDecision> {
  const ids = context.options.map((o) => o.id);
  const properties: Record<string, unknown> = {
    route: {
      type: 'string',
      enum: [...ids, STAY],
      description: `The id of the path to take, or "${STAY}" to remain on the current step`,
    },
    reason: { type: 'string', description: 'One short sentence: why this path' },
  };
  const vars = context.vars ?? [];
  if (vars.length > 0) {
    properties.variables = {
      type: 'object',
      description: 'What the caller has said for these fields so far. Leave out a field not given; never guess.',
      properties: Object.fromEntries(
        vars.map(([name, type, description]) => [name, { type: JSON_TYPES[type], description }]),
      ),
      additionalProperties: false,
    };
  }
  if (context.condition) {
    properties.condition_met = {
      type: 'boolean',
      description: `Whether this is now true: ${context.condition}`,
    };
  }
  const tool: LlmTool = {
    name: 'choose_route',
    description:
      vars.length > 0
        ? 'Save what the caller said and choose where the conversation goes next.'
        : 'Choose where the conversation goes next, from what the caller just said.',
    parameters: {
      type: 'object',
      properties,
      required: ['route', 'reason', ...(context.condition ? ['condition_met'] : [])],
      additionalProperties: false,
    },
  };
  const lines = context.options.map(
    (o) =>
      `- ${o.id}: ${o.kind === 'global' ? '(global, any time) ' : ''}${o.label}${o.description ? ` (${o.description})` : ''}${o.onlyWhen ? ` [only when ${o.onlyWhen}]` : ''}`,
  );
  const instruction = [
    `The caller just said: "${context.heard}".`,
    'Choose the path whose label best fits what the caller said, or stay if none fits yet.',
    ...(context.condition
      ? [`The current step must not be left until this condition is met: ${context.condition}`]
      : []),
    'Paths:',
    ...(lines.length ? lines : ['(none: stay)']),
    'Call choose_route.',
  ].join('\n');
  const args = await callFunction(
    llm,
    settings,
    [{ role: 'system', content: context.system }, ...context.history, { role: 'system', content: instruction }],
    tool,
  );
  const route = typeof args.route === 'string' ? args.route : STAY;
  const reason = typeof args.reason === 'string' && args.reason.trim() ? args.reason.trim() : 'chosen by the model';
  const conditionMet = context.condition ? args.condition_met === true : true;
  const given = isRecord(args.variables) ? args.variables : {};
  const extracted: Record<string, string | number | boolean> = {};
  for (const [name, type] of vars) {
    const value = coerce(given[name], type);
    if (value !== undefined) extracted[name] = value;
  }
  return { choice: ids.includes(route) ? route : null, reason, conditionMet, extracted };
}

const JSON_TYPES: Record<ExtractVarType, string> = {
  string: 'string',
  integer: 'integer',
  number: 'number',
  boolean: 'boolean',
};

/** Coerces what the model wrote to the declared type; undefined when it does not fit. */
function coerce(value: unknown, type: ExtractVarType): string | number | boolean | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  switch (type) {
    case 'string':
      return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
    case 'integer':
    case 'number': {
      const n =
        typeof value === 'number' ? value : typeof value === 'string' ? Number(value.replace(/[$,]/g, '')) : NaN;
      if (!Number.isFinite(n)) return undefined;
      return type === 'integer' ? Math.round(n) : n;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'yes') return true;
      if (value === 'false' || value === 'no') return false;
      return undefined;
  }
}

/** Speech for a prompt node: the model's words for the caller, as one short spoken reply. */
export async function generateLine(
  llm: PathwayLlm,
  settings: ModelSettings,
  context: { system: string; history: ChatMessage[]; instruction: string },
): Promise<string> {
  const reply = await complete(
    llm.provider,
    {
      model: settings.model,
      messages: [
        { role: 'system', content: context.system },
        ...context.history,
        { role: 'system', content: context.instruction },
      ],
      ...(settings.temperature !== undefined && { temperature: settings.temperature }),
      ...(settings.signal && { signal: settings.signal }),
    },
    { ...(settings.onFirstToken && { onFirst: settings.onFirstToken }) },
  );
  const text = reply.text.trim();
  if (!text) throw new LlmError('the model answered with no words', true);
  return text;
}
