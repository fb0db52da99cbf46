/**
 * The tools of Openline's MCP server (src/api/mcp.ts): what an AI agent connected to /v1/mcp (Claude
 * Code, Cursor, any MCP client) can do with the account of the API key it connected with. Each tool
 * is one or more requests to Openline's own REST API, made with that key: the same validation, the
 * same errors naming the field, the same limits and the same account isolation as any client's
 * request. Nothing here reaches calls or storage any other way.
 *
 * Tools that place calls, send texts or stop calls have side effects in the world: they do nothing
 * until called with `confirm: true`, and say what they would do instead. `call_api` and
 * `list_api_endpoints` reach every other endpoint of the API.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { isEnded } from '../domain/call-state.js';
import { once } from '../domain/once.js';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** A path with its percent-escapes decoded, as the router matches it; undefined when they are not valid. */
function decodedPath(path: string): string | undefined {
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/** An API request made with the connected key; `path` starts with /v1/. */
export type ApiRequest = (
  method: HttpMethod,
  path: string,
  options?: { query?: Record<string, string>; body?: unknown },
) => Promise<{ status: number; body: unknown }>;

/** One endpoint of the API, from its OpenAPI description. */
export interface Endpoint {
  method: string;
  path: string;
  summary: string;
}

export interface ToolContext {
  api: ApiRequest;
  /** The API's endpoints (for list_api_endpoints). */
  endpoints: () => Endpoint[];
  /** Waits `ms`, or rejects when the client went away (`signal` aborted). */
  sleep: (ms: number) => Promise<void>;
  signal: AbortSignal;
}

export type ToolResult = {
  content: Array<{ type: 'text'; text: string }>;
  isError?: boolean;
};

interface JsonSchema {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties?: boolean;
}

export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  run: (args: Record<string, unknown>, context: ToolContext) => Promise<ToolResult>;
}

/** How long wait_for_call waits at most, and between two looks at the call. */
export const WAIT_MAX_SECONDS = 300;
const WAIT_DEFAULT_SECONDS = 120;
const POLL_MS = 1000;

const text = (value: unknown, isError = false): ToolResult => ({
  content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) }],
  ...(isError && { isError: true }),
});

/** An API reply as a tool's result: its body, an error when the API refused. */
const replyOf = (reply: { status: number; body: unknown }): ToolResult => text(reply.body, reply.status >= 400);

const str = (description: string, extra: Record<string, unknown> = {}) => ({ type: 'string', description, ...extra });
const id = (what: string) => str(`The ${what}'s id`, { minLength: 1, maxLength: 200 });
const confirm = {
  type: 'boolean',
  description: 'true to do it; without it the tool only says what it would do',
};
const read = { readOnlyHint: true, idempotentHint: true, openWorldHint: false } as const;
const write = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;
const destructive = { readOnlyHint: false, destructiveHint: true, openWorldHint: true } as const;

/** `args`' strings, numbers and booleans as a query string's values. */
function queryOf(args: Record<string, unknown>, names: readonly string[]): Record<string, string> {
  const query: Record<string, string> = {};
  for (const name of names) {
    const value = args[name];
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      query[name] = String(value);
  }
  return query;
}

/** A tool that is one GET. */
function getTool(
  name: string,
  title: string,
  description: string,
  path: (args: Record<string, unknown>) => string,
  properties: JsonSchema['properties'] = {},
  required: string[] = [],
): McpTool {
  return {
    name,
    title,
    description,
    inputSchema: { type: 'object', properties, required, additionalProperties: false },
    annotations: read,
    run: async (args, { api }) =>
      replyOf(await api('GET', path(args), { query: queryOf(args, Object.keys(properties)) })),
  };
}

const enc = (value: unknown) => encodeURIComponent(String(value));

/** What a call tells once it ended, or so far: the fields an agent reads. */
function callSummary(call: Record<string, unknown>): Record<string, unknown> {
  const keys = [
    'call_id',
    'status',
    'queue_status',
    'completed',
    'to',
    'from',
    'answered_by',
    'call_length',
    'call_ended_by',
    'error_message',
    'summary',
    'concatenated_transcript',
    'recording_url',
    'variables',
    'metadata',
  ];
  return Object.fromEntries(keys.filter((k) => k in call).map((k) => [k, call[k]]));
}

const CALL_FIELDS = {
  phone_number: str('The number to call, E.164 ("+14155550100")', { minLength: 1, maxLength: 40 }),
  task: str('What the agent is to do on the call (its prompt)', { maxLength: 100_000 }),
  pathway_id: str('A pathway to follow instead of a task'),
  persona_id: str('A persona whose settings the call takes'),
  first_sentence: str('What the agent says first'),
  voice: str('The voice, by name or id (GET /v1/voices)'),
  from: str('The caller id: one of your numbers'),
  max_duration: { type: 'number', minimum: 1, description: 'Minutes before the call is ended' },
  wait_for_greeting: { type: 'boolean', description: 'Let the far end speak first' },
  record: { type: 'boolean', description: 'Record the call' },
  request_data: { type: 'object', description: 'Variables the agent knows ({{name}} in the task)' },
  metadata: { type: 'object', description: 'Kept on the call and sent with its webhook' },
  webhook: str('A URL that gets the call when it ends'),
  parameters: {
    type: 'object',
    description: 'Any other parameter of POST /v1/calls (voicemail_action, language, tools, ...), as is',
  },
};

export const MCP_TOOLS: readonly McpTool[] = [
  // Calls
  {
    name: 'create_call',
    title: 'Place a phone call',
    description:
      'Places an AI phone call (POST /v1/calls): the agent calls phone_number and follows task or pathway_id. ' +
      'It reaches a real phone: it is placed only with confirm: true; without it the tool says what it would ' +
      'place. Returns call_id; wait_for_call then gives the outcome and transcript.',
    inputSchema: {
      type: 'object',
      properties: { ...CALL_FIELDS, confirm },
      required: ['phone_number'],
      additionalProperties: false,
    },
    annotations: destructive,
    run: async (args, { api }) => {
      const { confirm: confirmed, parameters, ...fields } = args;
      const body = { ...(parameters as Record<string, unknown> | undefined), ...fields };
      if (confirmed !== true)
        return text(
          `Not placed. This would call ${String(fields.phone_number)} with ${JSON.stringify(body)}. ` +
            'Ask the user, then call create_call again with the same arguments and confirm: true.',
        );
      return replyOf(await api('POST', '/v1/calls', { body }));
    },
  },
  {
    name: 'wait_for_call',
    title: 'Wait for a call to end',
    description:
      `Waits until the call ends (at most timeout_seconds, default ${WAIT_DEFAULT_SECONDS}, up to ${WAIT_MAX_SECONDS}) ` +
      'and returns its outcome: status, answered_by, call_length (minutes), summary and transcript. ' +
      'When it is still going on at the timeout, says so (timed_out: true) with what is known so far.',
    inputSchema: {
      type: 'object',
      properties: {
        call_id: id('call'),
        timeout_seconds: { type: 'number', minimum: 1, maximum: WAIT_MAX_SECONDS },
      },
      required: ['call_id'],
      additionalProperties: false,
    },
    annotations: read,
    run: async (args, { api, sleep }) => {
      const timeoutMs = Number(args.timeout_seconds ?? WAIT_DEFAULT_SECONDS) * 1000;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const reply = await api('GET', `/v1/calls/${enc(args.call_id)}`);
        if (reply.status >= 400) return replyOf(reply);
        const call = reply.body as Record<string, unknown>;
        const ended = call.completed === true || isEnded(String(call.queue_status));
        if (ended) return text(callSummary(call));
        if (Date.now() >= deadline) return text({ timed_out: true, ...callSummary(call) });
        await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
      }
    },
  },
  getTool(
    'get_call',
    'A call',
    "A call's full record (GET /v1/calls/{id}): status, transcripts, answered_by, recording, analysis, ...",
    (a) => `/v1/calls/${enc(a.call_id)}`,
    { call_id: id('call') },
    ['call_id'],
  ),
  {
    name: 'get_call_log',
    title: "A call's transcript and events",
    description:
      'What happened on a call: its transcript line by line and its event log (each queue, call, tool and latency event), oldest first.',
    inputSchema: {
      type: 'object',
      properties: { call_id: id('call') },
      required: ['call_id'],
      additionalProperties: false,
    },
    annotations: read,
    run: async (args, { api }) => {
      const call = await api('GET', `/v1/calls/${enc(args.call_id)}`);
      if (call.status >= 400) return replyOf(call);
      const events = await api('GET', `/v1/calls/${enc(args.call_id)}/events`);
      if (events.status >= 400) return replyOf(events);
      const record = call.body as { transcripts?: unknown };
      return text({
        ...callSummary(call.body as Record<string, unknown>),
        transcripts: record.transcripts ?? [],
        events: events.body,
      });
    },
  },
  getTool(
    'list_calls',
    'List calls',
    'Your calls, newest first (GET /v1/calls), filtered by number, batch, answered_by, queue_status or dates.',
    () => '/v1/calls',
    {
      limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'At most this many (default 1000)' },
      to_number: str('Called this number'),
      from_number: str('From this number'),
      batch_id: str('In this batch'),
      answered_by: { type: 'string', enum: ['human', 'voicemail', 'unknown', 'no-answer', 'null'] },
      queue_status: str('queued, started, complete, ...'),
      start_date: str('Created at or after (ISO 8601)'),
      end_date: str('Created before (ISO 8601; a date alone is its midnight UTC, that day not included)'),
      cursor: str('next_cursor of the previous page'),
    },
  ),
  getTool(
    'list_active_calls',
    'Calls under way',
    'The calls queued or in progress now (GET /v1/calls/active).',
    () => '/v1/calls/active',
  ),
  {
    name: 'stop_call',
    title: 'End a call',
    description: 'Ends a call under way (POST /v1/calls/{id}/stop); only with confirm: true.',
    inputSchema: {
      type: 'object',
      properties: { call_id: id('call'), confirm },
      required: ['call_id'],
      additionalProperties: false,
    },
    annotations: destructive,
    run: async (args, { api }) =>
      args.confirm === true
        ? replyOf(await api('POST', `/v1/calls/${enc(args.call_id)}/stop`))
        : text(`Not stopped. This would end call ${String(args.call_id)}: call stop_call again with confirm: true.`),
  },
  {
    name: 'analyze_call',
    title: 'Ask questions about a call',
    description:
      'Answers questions about an ended call from its transcript (POST /v1/calls/{id}/analyze): each question with the type of answer wanted.',
    inputSchema: {
      type: 'object',
      properties: {
        call_id: id('call'),
        goal: str('What the call was for', { minLength: 1 }),
        questions: {
          type: 'array',
          minItems: 1,
          items: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' } },
          description: '[[question, answer type]], e.g. [["Did they confirm?", "boolean"]]',
        },
      },
      required: ['call_id', 'goal', 'questions'],
      additionalProperties: false,
    },
    annotations: write,
    run: async ({ call_id, ...body }, { api }) =>
      replyOf(await api('POST', `/v1/calls/${enc(call_id)}/analyze`, { body })),
  },
  // Pathways, personas, numbers, voices
  getTool('list_pathways', 'List pathways', 'Your conversational pathways (GET /v1/pathway).', () => '/v1/pathway'),
  getTool(
    'get_pathway',
    'A pathway',
    "A pathway's nodes and edges (GET /v1/pathway/{id}).",
    (a) => `/v1/pathway/${enc(a.pathway_id)}`,
    { pathway_id: id('pathway') },
    ['pathway_id'],
  ),
  getTool('list_personas', 'List personas', 'Your personas (GET /v1/personas).', () => '/v1/personas'),
  getTool(
    'get_persona',
    'A persona',
    'A persona and its settings (GET /v1/personas/{id}).',
    (a) => `/v1/personas/${enc(a.persona_id)}`,
    { persona_id: id('persona') },
    ['persona_id'],
  ),
  getTool(
    'list_inbound_numbers',
    'List your numbers',
    'Your inbound numbers and their agents (GET /v1/inbound).',
    () => '/v1/inbound',
  ),
  getTool('list_voices', 'List voices', 'The voices a call can use (GET /v1/voices).', () => '/v1/voices'),
  {
    name: 'send_sms',
    title: 'Send a text message',
    description: 'Sends an SMS from one of your numbers (POST /v1/sms/send); only with confirm: true.',
    inputSchema: {
      type: 'object',
      properties: {
        phone_number: str('The number to text, E.164', { minLength: 1 }),
        message: str('The text', { minLength: 1, maxLength: 1600 }),
        from: str('One of your numbers'),
        confirm,
      },
      required: ['phone_number', 'message'],
      additionalProperties: false,
    },
    annotations: destructive,
    run: async ({ confirm: confirmed, ...body }, { api }) =>
      confirmed === true
        ? replyOf(await api('POST', '/v1/sms/send', { body }))
        : text(`Not sent. This would text ${String(body.phone_number)}: call send_sms again with confirm: true.`),
  },
  // Knowledge and batches
  getTool(
    'list_knowledge_bases',
    'List knowledge bases',
    'Your knowledge bases (GET /v1/knowledge).',
    () => '/v1/knowledge',
  ),
  {
    name: 'ask_knowledge_base',
    title: 'Ask a knowledge base',
    description: 'Answers a question from a knowledge base as an agent on a call would (POST /v1/knowledge/answer).',
    inputSchema: {
      type: 'object',
      properties: { knowledge_base_id: id('knowledge base'), question: str('The question', { minLength: 1 }) },
      required: ['knowledge_base_id', 'question'],
      additionalProperties: false,
    },
    annotations: read,
    run: async (body, { api }) => replyOf(await api('POST', '/v1/knowledge/answer', { body })),
  },
  getTool('list_batches', 'List batches', 'Your batches of calls (GET /v1/batches).', () => '/v1/batches'),
  getTool(
    'get_batch',
    'A batch',
    "A batch and its calls' progress (GET /v1/batches/{id}).",
    (a) => `/v1/batches/${enc(a.batch_id)}`,
    { batch_id: id('batch') },
    ['batch_id'],
  ),
  // Every other endpoint
  {
    name: 'list_api_endpoints',
    title: 'List API endpoints',
    description:
      'The endpoints of the Openline REST API (method, path, summary), for call_api; `filter` keeps those whose path or summary contains it.',
    inputSchema: {
      type: 'object',
      properties: { filter: str('Words to look for, e.g. "knowledge" or "campaign"') },
      additionalProperties: false,
    },
    annotations: read,
    run: async (args, { endpoints }) => {
      const filter = typeof args.filter === 'string' ? args.filter.toLowerCase() : '';
      return text(endpoints().filter((e) => !filter || `${e.path} ${e.summary}`.toLowerCase().includes(filter)));
    },
  },
  {
    name: 'call_api',
    title: 'Call any API endpoint',
    description:
      'Sends one request to the Openline REST API with your key (see list_api_endpoints): GET reads freely; ' +
      'POST, PATCH, PUT and DELETE change things and are sent only with confirm: true.',
    inputSchema: {
      type: 'object',
      properties: {
        method: { type: 'string', enum: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'] },
        path: str('The path, starting with /v1/ (e.g. /v1/calls/abc/events); the query goes in `query`', {
          pattern: '^/v1/[^?#\\s]*$',
          maxLength: 2000,
        }),
        query: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
        body: { description: 'The JSON body' },
        confirm,
      },
      required: ['method', 'path'],
      additionalProperties: false,
    },
    annotations: destructive,
    run: async (args, { api }) => {
      const method = args.method as HttpMethod;
      const path = String(args.path);
      // Checked as the router reads it, percent-escapes decoded ("/v1/%2e%2e/metrics" is "/v1/../metrics").
      const routed = decodedPath(path);
      if (routed === undefined) return text('path is not valid percent-encoding', true);
      if (routed.split('/').some((segment) => segment === '.' || segment === '..' || segment.includes('\\')))
        return text('path must not hold . or .. segments', true);
      if (!routed.startsWith('/v1/')) return text('path must start with /v1/', true);
      if (/^\/v1\/mcp(?:[/?]|$)/i.test(routed))
        return text('path: /v1/mcp is this server; name another endpoint.', true);
      if (method !== 'GET' && args.confirm !== true)
        return text(`Not sent. ${method} ${path} changes things: call call_api again with confirm: true.`);
      const query = queryOf((args.query ?? {}) as Record<string, unknown>, Object.keys((args.query ?? {}) as object));
      return replyOf(await api(method, path, { query, ...(args.body !== undefined && { body: args.body }) }));
    },
  },
];

/** The tools' argument validators, compiled by the first call of a tool (not when the server starts). */
const validators = once(() => {
  const ajv = new Ajv({ allErrors: true, strict: false });
  return new Map<string, ValidateFunction>(MCP_TOOLS.map((t) => [t.name, ajv.compile(t.inputSchema)]));
});

/** The arguments' mistakes, each naming its field ("phone_number is required"); none when they are right. */
export function argumentErrors(tool: McpTool, args: unknown): string[] {
  const validate = validators().get(tool.name)!;
  if (validate(args)) return [];
  return (validate.errors ?? []).map((e) => {
    const field = e.instancePath.replace(/^\//, '').replaceAll('/', '.');
    if (e.keyword === 'required') return `${String(e.params.missingProperty)} is required`;
    if (e.keyword === 'additionalProperties')
      return `${field ? `${field}.` : ''}${String(e.params.additionalProperty)} is not an argument of ${tool.name}`;
    return `${field || 'arguments'} ${e.message ?? 'is not valid'}`;
  });
}
