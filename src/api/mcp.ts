/**
 * POST /v1/mcp: Openline's MCP server, where the hosted API has its own (`claude mcp add --transport
 * http openline https://<host>/v1/mcp --header "Authorization: Bearer <key>"`). Streamable HTTP in
 * its stateless form: each POST carries JSON-RPC messages and gets its answer in the response, so
 * any process of the server can answer any request and nothing is kept between them. The API key
 * is checked like every /v1 route's; the tools (src/mcp/tools.ts) act through the REST API with it.
 * GET and DELETE (a server's stream, a session's end) answer 405: a stateless server has neither.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { MCP_TOOLS, argumentErrors, type ApiRequest, type Endpoint } from '../mcp/tools.js';
import { ApiError } from '../errors.js';
import { once } from '../domain/once.js';

const INSTRUCTIONS =
  'Openline places and answers AI phone calls. create_call places a call (confirm: true once the user ' +
  'agreed), wait_for_call gives its outcome and transcript, get_call_log what happened on it. ' +
  'list_api_endpoints and call_api reach the rest of the REST API.';

interface OpenApi {
  paths?: Record<string, Record<string, { summary?: string; hide?: boolean }>>;
}

/** The API's /v1 endpoints from its OpenAPI document, read once. */
function endpointsOf(app: Api): () => Endpoint[] {
  return once(() =>
    Object.entries((app.swagger() as OpenApi).paths ?? {})
      .filter(([path]) => path.startsWith('/v1/') && !path.startsWith('/v1/mcp'))
      .flatMap(([path, operations]) =>
        Object.entries(operations).map(([method, op]) => ({
          method: method.toUpperCase(),
          path,
          summary: op.summary ?? '',
        })),
      ),
  );
}

/** Requests to this server's own API with the caller's key (and BYOT header), as a client would send them. */
function apiFor(app: Api, request: FastifyRequest): ApiRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const name of ['authorization', 'encrypted_key'] as const) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return async (method, path, options = {}) => {
    const query = new URLSearchParams(options.query ?? {}).toString();
    const reply = await app.inject({
      method,
      url: query ? `${path}?${query}` : path,
      headers,
      // From the MCP client's own socket address (never a forwarded header): loopback-only answers
      // (GET /metrics) stay loopback's.
      ...(request.socket.remoteAddress !== undefined && { remoteAddress: request.socket.remoteAddress }),
      ...(options.body !== undefined && { payload: JSON.stringify(options.body) }),
    });
    let body: unknown = reply.body;
    try {
      body = JSON.parse(reply.body);
    } catch {
      // Not JSON (a recording, an event stream): the text as it is.
    }
    return { status: reply.statusCode, body };
  };
}

/** The parts of the MCP SDK this server uses. */
async function importSdk() {
  const [server, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Server: server.Server,
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    CallToolRequestSchema: types.CallToolRequestSchema,
    ListToolsRequestSchema: types.ListToolsRequestSchema,
  };
}
type Sdk = Awaited<ReturnType<typeof importSdk>>;
/** The MCP SDK, loaded by the first request to /v1/mcp: the server starts without it. */
const loadSdk = once(importSdk);

/** One MCP server for one request: its tools act for the request's account. */
function serverFor(sdk: Sdk, app: Api, request: FastifyRequest, endpoints: () => Endpoint[]): Server {
  const { Server, CallToolRequestSchema, ListToolsRequestSchema } = sdk;
  const server = new Server(
    { name: 'openline', title: 'Openline', version: '1.0.0' },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const api = apiFor(app, request);
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: MCP_TOOLS.map(({ name, title, description, inputSchema, annotations }) => ({
      name,
      title,
      description,
      inputSchema,
      annotations: { title, ...annotations },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (call, extra): Promise<CallToolResult> => {
    const tool = MCP_TOOLS.find((t) => t.name === call.params.name);
    if (!tool)
      return { content: [{ type: 'text', text: `name: no tool is called ${call.params.name}` }], isError: true };
    const args = call.params.arguments ?? {};
    const errors = argumentErrors(tool, args);
    if (errors.length > 0) return { content: [{ type: 'text', text: errors.join('; ') }], isError: true };
    return tool.run(args, {
      api,
      endpoints,
      sleep: (ms) => delay(ms, undefined, { signal: extra.signal }),
      signal: extra.signal,
    });
  });
  return server;
}

/** A JSON-RPC 2.0 message, or a batch of them: what the transport reads (it answers the rest in JSON-RPC's own words). */
function isJsonRpc(body: unknown): boolean {
  const one = (m: unknown) =>
    typeof m === 'object' && m !== null && !Array.isArray(m) && (m as { jsonrpc?: unknown }).jsonrpc === '2.0';
  return Array.isArray(body) ? body.length > 0 && body.every(one) : one(body);
}

/** A JSON-RPC error answer with no id (the request's could not be read), over HTTP 400. */
function rpcError(reply: FastifyReply, code: number, message: string): FastifyReply {
  return reply.status(400).send({ jsonrpc: '2.0', id: null, error: { code, message } });
}

/** Protocol versions that dropped JSON-RPC batches (2025-06-18 and later). */
const UNBATCHED = (version: string | undefined): boolean => version !== undefined && version >= '2025-06-18';

export default async function mcpRoutes(app: Api, _services: Services): Promise<void> {
  const endpoints = endpointsOf(app);
  app.post(
    '/mcp',
    {
      // A body that is not JSON is JSON-RPC's parse error, in its words; the rest (a missing key) as ever.
      errorHandler: (error: Error & { code?: string }, request, reply) => {
        if (error instanceof ApiError && error.code === 'INVALID_JSON')
          return rpcError(reply, -32700, `Parse error: ${error.message}`);
        throw error;
      },
      schema: {
        tags: ['MCP'],
        summary: 'The MCP server (Streamable HTTP)',
        description:
          'JSON-RPC messages of the Model Context Protocol: connect an MCP client (Claude Code, Cursor, ...) with ' +
          'this URL and the API key as `Authorization: Bearer <key>`. Its tools place and follow calls and reach ' +
          'the rest of the API for the key’s account. Answers are JSON (no sessions, no server stream).',
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      if (!isJsonRpc(request.body))
        return rpcError(
          reply,
          -32600,
          'Invalid Request: the body must be a JSON-RPC 2.0 message ({"jsonrpc": "2.0", "method": ..., "id": ...}) or a list of them',
        );
      const version = request.headers['mcp-protocol-version'];
      if (Array.isArray(request.body) && UNBATCHED(typeof version === 'string' ? version : undefined))
        return rpcError(reply, -32600, `Invalid Request: protocol version ${String(version)} has no batches`);
      const sdk = await loadSdk();
      const server = serverFor(sdk, app, request, endpoints);
      const transport = new sdk.StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      // The answer is JSON whatever the client accepts; a client that did not say it takes both (as
      // the protocol asks, and the transport requires) is answered all the same.
      request.raw.headers.accept = 'application/json, text/event-stream';
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    },
  );
  for (const method of ['GET', 'DELETE'] as const)
    app.route({
      method,
      url: '/mcp',
      schema: { hide: true },
      handler: async (_request, reply) => {
        void reply.header('allow', 'POST');
        throw new ApiError('METHOD_NOT_ALLOWED', 'The MCP server is stateless: POST its JSON-RPC messages to /v1/mcp');
      },
    });
}
