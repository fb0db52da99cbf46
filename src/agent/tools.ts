import { Ajv, type ValidateFunction } from 'ajv';
import type { CallTool } from '../schemas/call-request.js';
import { readPath, renderJsonTemplate, renderTemplate } from '../domain/template.js';
import { OutboundError, type OutboundClient } from '../outbound/http.js';

/** Seed 2.5 default. */
export const DEFAULT_TOOL_TIMEOUT_MS = 10_000;
/**
 * The seed says a very large timeout (e.g. 99999999) means "wait indefinitely"; a call still must
 * not hang on a dead server forever, so the wait is capped at ten minutes.
 */
export const MAX_TOOL_TIMEOUT_MS = 10 * 60_000;

export interface ToolResult {
  ok: boolean;
  /** New call variables: the `response` mapping, or `{ data }` with the whole body. */
  variables: Record<string, unknown>;
  /** A short text of what came back, for an agent to say or a transcript note. */
  spokenResult: string;
  /** Why the tool failed or was skipped (timeout, HTTP 500, input mismatch ...). */
  error: string | null;
  /** The input did not match input_schema: the tool was not used at all (seed 7.5). */
  skipped?: boolean;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

// strict: false because the seed allows `example` and other non-standard keywords; formats are
// hints in user schemas, not something to reject a call's input over.
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, coerceTypes: true });
const compiled = new WeakMap<object, ValidateFunction | null>();
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/**
 * Turns the seed's loose schema forms into JSON Schema: a property given as a string is either a
 * type name ("string") or a format hint ("YYYY-MM-DD"), which accepts anything; `required` that
 * is not a list of names is dropped; `example(s)` are documentation only.
 */
export function looseSchema(schema: unknown): Json {
  if (typeof schema === 'string') return TYPES.has(schema.toLowerCase()) ? { type: schema.toLowerCase() } : {};
  if (!isObject(schema)) return {};
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'example' || key === 'examples') continue;
    if (key === 'properties' && isObject(value)) {
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, looseSchema(v)]));
    } else if (key === 'items') {
      out.items = looseSchema(value);
    } else if (key === 'required') {
      if (Array.isArray(value) && value.every((v) => typeof v === 'string')) out.required = value;
    } else if (key === 'type') {
      const types = (Array.isArray(value) ? value : [value]).filter(
        (t): t is string => typeof t === 'string' && TYPES.has(t),
      );
      if (types.length) out.type = types.length === 1 ? types[0] : types;
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Null when the input matches (or the schema cannot be compiled even loosely), else why not. */
export function inputMismatch(schema: Json | undefined, input: unknown): string | null {
  if (!schema || Object.keys(schema).length === 0) return null;
  let validate = compiled.get(schema);
  if (validate === undefined) {
    try {
      validate = ajv.compile(looseSchema(schema));
    } catch {
      // A schema we cannot read cannot reject anything: the tool stays usable.
      validate = null;
    }
    compiled.set(schema, validate);
  }
  if (!validate || validate(structuredClone(input))) return null;
  return (validate.errors ?? [])
    .map((e) => `${e.instancePath || 'input'} ${e.message ?? 'is invalid'}`.trim())
    .join('; ');
}

/**
 * A small JSONPath subset, enough for response mappings: `$`, `.name`, `['name']`, `["name"]`,
 * `[0]`; the leading `$.` may be left out. Undefined when any step is missing.
 */
export function jsonPath(source: unknown, path: string): unknown {
  let rest = path.trim();
  if (rest.startsWith('$')) rest = rest.slice(1);
  let value: unknown = source;
  const step = /^(?:\.?([^.[\]]+)|\[\s*(\d+)\s*\]|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\])/;
  while (rest.length > 0) {
    const m = step.exec(rest);
    if (!m) return undefined;
    rest = rest.slice(m[0].length);
    if (value === null || typeof value !== 'object') return undefined;
    const key = m[1] ?? m[3] ?? m[4];
    if (m[2] !== undefined) {
      if (!Array.isArray(value)) return undefined;
      value = value[Number(m[2])];
    } else if (key !== undefined) {
      value = (value as Json)[key];
    }
  }
  return value;
}

/**
 * Renders a tool's templates. A string that is exactly one placeholder (`"{{input}}"`,
 * `"{{input.count}}"`) becomes the value itself, so a JSON body keeps numbers and objects as
 * such; any other string gets the text substitution of renderTemplate.
 */
export function renderValue(value: unknown, variables: Json): unknown {
  if (typeof value === 'string') {
    const whole = /^\{\{\s*([\w$-]+(?:\.[\w$-]+)*)\s*\}\}$/.exec(value);
    if (whole) {
      const found = readPath(variables, whole[1]!);
      if (found !== undefined) return found;
    }
    return renderTemplate(value, variables);
  }
  if (Array.isArray(value)) return value.map((v) => renderValue(v, variables));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderValue(v, variables)]));
  return value;
}

/** A value as header or message text: strings as they are, objects as JSON, nothing as ''. */
export const text = (v: unknown): string =>
  v === undefined || v === null
    ? ''
    : typeof v === 'string'
      ? v
      : typeof v === 'object'
        ? JSON.stringify(v)
        : String(v);

/** A sentence-sized text of a result: a message-like field, else short `name: value` pairs. */
export function summarize(value: unknown, max = 240): string {
  let out: string;
  if (isObject(value)) {
    const message = ['message', 'text', 'result', 'status'].map((k) => value[k]).find((v) => typeof v === 'string');
    out =
      typeof message === 'string'
        ? message
        : Object.entries(value)
            .filter(([, v]) => v !== null && typeof v !== 'object')
            .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${text(v)}`)
            .join(', ') || JSON.stringify(value);
  } else {
    out = text(value);
  }
  out = out.replace(/\s+/g, ' ').trim();
  return out.length > max ? `${out.slice(0, max - 3)}...` : out;
}

export interface PreparedRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** The request a tool makes for this input: url, query, headers and body rendered; GET has no body. */
export function prepareToolRequest(tool: CallTool, input: unknown, variables: Json): PreparedRequest {
  const scope: Json = { ...variables, input };
  const url = new URL(renderTemplate(tool.url, scope));
  for (const [key, value] of Object.entries(isObject(tool.query) ? tool.query : {})) {
    url.searchParams.set(key, text(renderValue(value, scope)));
  }
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(isObject(tool.headers) ? tool.headers : {})) {
    headers[key] = text(renderValue(value, scope));
  }
  const method = tool.method === 'POST' ? 'POST' : 'GET';
  if (method === 'GET' || tool.body === undefined) return { method, url: url.toString(), headers };
  return { method, url: url.toString(), headers, body: templatedBody(tool.body, scope, headers) };
}

const parsesAsJson = (body: string): boolean => {
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
};

/**
 * A request body from its template (custom tools, pathway webhook nodes): a string is rendered as
 * text (JSON text with the variables inside its strings escaped, when that gives JSON), anything
 * else value by value as JSON. Sets `content-type` when the user did not: JSON when the rendered
 * text parses as JSON, else plain text.
 */
export function templatedBody(template: unknown, variables: Json, headers: Record<string, string>): string {
  const hasType = Object.keys(headers).some((k) => k.toLowerCase() === 'content-type');
  if (typeof template !== 'string') {
    if (!hasType) headers['content-type'] = 'application/json';
    return JSON.stringify(renderValue(template, variables));
  }
  const asJson = /^\s*[[{]/.test(template) ? renderJsonTemplate(template, variables) : undefined;
  const body = asJson !== undefined && parsesAsJson(asJson) ? asJson : renderTemplate(template, variables);
  if (!hasType) headers['content-type'] = parsesAsJson(body) ? 'application/json' : 'text/plain; charset=utf-8';
  return body;
}

function failure(error: string, skipped = false): ToolResult {
  return { ok: false, variables: {}, spokenResult: '', error, ...(skipped && { skipped }) };
}

/**
 * Runs one custom tool (seed 2.5) through the guarded client: the input is checked against
 * input_schema (a mismatch skips the tool), the request is rendered over the call's variables
 * plus `input`, and the answer becomes new variables (the `response` mapping, else `{{data}}`).
 * Never throws: every failure is a result the agent can move on from.
 */
export async function runTool(
  tool: CallTool,
  input: unknown,
  variables: Json,
  http: OutboundClient,
): Promise<ToolResult> {
  const mismatch = inputMismatch(tool.input_schema, input);
  if (mismatch) return failure(`input does not match input_schema: ${mismatch}`, true);
  let prepared: PreparedRequest;
  try {
    prepared = prepareToolRequest(tool, input, variables);
  } catch {
    return failure('invalid URL after templating');
  }
  const timeoutMs = Math.min(Math.max(1, tool.timeout ?? DEFAULT_TOOL_TIMEOUT_MS), MAX_TOOL_TIMEOUT_MS);
  let status: number;
  let raw: string;
  try {
    const response = await http.request({ ...prepared, timeoutMs, httpsOnly: true });
    status = response.status;
    raw = response.body;
  } catch (error) {
    if (error instanceof OutboundError) return failure(error.reason === 'timeout' ? 'timeout' : error.message);
    return failure(String(error));
  }
  if (status < 200 || status >= 300) return failure(`HTTP ${status}`);
  let body: unknown = raw;
  try {
    body = JSON.parse(raw);
  } catch {
    // Not JSON: the text itself is the data.
  }
  if (tool.response && Object.keys(tool.response).length > 0) {
    const mapped: Json = {};
    for (const [name, path] of Object.entries(tool.response)) {
      const value = jsonPath(body, path);
      if (value !== undefined) mapped[name] = value;
    }
    return { ok: true, variables: mapped, spokenResult: summarize(mapped), error: null };
  }
  return { ok: true, variables: { data: body }, spokenResult: summarize(body), error: null };
}

/** A custom tool's name as a function name models accept: [a-zA-Z0-9_-], at most 64. */
export function functionName(name: string): string {
  const clean = name
    .trim()
    .replace(/[^a-zA-Z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return (clean || 'tool').slice(0, 64);
}

/**
 * The transcript's note that a tool was called: the input goes in as JSON, so a test of the agent
 * can check what a tool was given, and an agent sees which tools ran (calls and SMS alike).
 */
export function toolCalledNote(name: string, input: unknown): string {
  return `Tool ${name} called${input === undefined ? '' : ` with ${JSON.stringify(input)}`}`;
}

/** The transcript's note of what a tool's run came to. */
export function toolOutcomeNote(name: string, result: ToolResult): string {
  if (result.ok) return `Tool ${name} returned${result.spokenResult ? `: ${result.spokenResult}` : ''}`;
  return `Tool ${name} ${result.skipped ? 'skipped' : 'failed'}: ${result.error ?? 'unknown error'}`;
}

/** The call's tool a name refers to: its own name (any case) or its function name. */
export function findTool(tools: readonly CallTool[], name: string): CallTool | undefined {
  const wanted = name.trim().toLowerCase();
  return (
    tools.find((t) => t.name.trim().toLowerCase() === wanted) ??
    tools.find((t) => functionName(t.name).toLowerCase() === functionName(name).toLowerCase())
  );
}
