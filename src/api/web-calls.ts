import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { WebSocket } from 'ws';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, FreeObject, IdParams } from '../schemas/common.js';
import { ApiError, notFound, validationError } from '../errors.js';
import type { WebCallTarget } from '../carriers/webrtc/service.js';
import {
  DEFAULT_SOCKET_SAMPLE_RATE,
  MAX_SOCKET_SAMPLE_RATE,
  MIN_SOCKET_SAMPLE_RATE,
  refuseSocket,
} from '../carriers/webrtc/agent-socket.js';
import { refuseOversizedBodies } from './validation.js';
import {
  DEFAULT_CALLS_PER_MINUTE,
  MAX_CALLS_PER_MINUTE,
  MAX_WEB_CALL_TOKEN_TTL_S,
  type RedeemedToken,
} from '../store/web-call-tokens.js';
import { accountOfKey, bearerless } from './auth.js';

const tags = ['Web calls'];

const AuthorizeBody = Type.Object(
  {
    request_data: Type.Optional(FreeObject({ description: 'Variables of the calls ({{name}})' })),
    reusable: Type.Optional(
      Type.Boolean({
        description:
          'Good for any number of calls until it expires, at most calls_per_minute a minute (a widget’s data-token on a page every visitor loads); default false: one call',
      }),
    ),
    expires_in: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: MAX_WEB_CALL_TOKEN_TTL_S,
        description: 'Seconds the token stays good; default 600',
      }),
    ),
    calls_per_minute: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_CALLS_PER_MINUTE,
        description: `A reusable token’s limit of calls a minute; default ${DEFAULT_CALLS_PER_MINUTE}`,
      }),
    ),
    allowed_origins: Type.Optional(
      Type.Array(Type.String({ maxLength: 300 }), {
        maxItems: 50,
        description: 'Origins (https://shop.example) whose pages may use the token; default any',
      }),
    ),
  },
  { additionalProperties: true },
);

/** `allowed_origins`' entries as browsers send Origin (scheme, host, port), or the problems naming them. */
function parseOrigins(values: string[] | undefined, errors: string[]): string[] | undefined {
  return values?.map((value, i) => {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      // reported below
    }
    if (!url || !/^https?:$/.test(url.protocol) || (url.pathname !== '/' && url.pathname !== '') || url.search)
      errors.push(`allowed_origins[${i}] must be an origin such as https://shop.example, got "${value}"`);
    return url?.origin ?? value;
  });
}

/**
 * POST /v1/agents/{id}/authorize: the hosted API's web-agent token, single use for ten minutes; or,
 * with `reusable`, good for many calls (rate limited) until it expires, for a page every visitor loads.
 */
export async function authorizeRoutes(app: Api, services: Services): Promise<void> {
  app.post(
    '/agents/:id/authorize',
    {
      schema: {
        tags,
        summary: 'Authorize a web call',
        description:
          'A token that lets a browser start a web call with this agent (POST /v1/web-calls with `token`) without the API key. By default it is good for one call and expires after ten minutes; `reusable` makes it good for any number of calls (at most `calls_per_minute` a minute) until it expires, for a widget’s `data-token` on a page every visitor loads; `allowed_origins` restricts it to pages of those origins.',
        params: IdParams,
        // The body is optional (clients send none).
        body: Type.Optional(AuthorizeBody),
        response: {
          200: Type.Object({ status: Type.Literal('success'), token: Type.String(), expires_at: Type.String() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body ?? {};
      const errors: string[] = [];
      const allowedOrigins = parseOrigins(body.allowed_origins, errors);
      if (body.calls_per_minute !== undefined && !body.reusable)
        errors.push('calls_per_minute applies to reusable tokens only: set reusable to true');
      if (errors.length > 0) throw validationError(errors);
      const agent = await services.agents.get(request.account.id, request.params.id);
      if (!agent) throw notFound('Agent');
      const { token, expiresAt } = await services.webCallTokens.issue(
        request.account.id,
        agent.agent_id,
        body.request_data ?? null,
        {
          ...(body.reusable && { reusable: true }),
          ...(body.expires_in !== undefined && { expiresInS: body.expires_in }),
          ...(body.calls_per_minute !== undefined && { callsPerMinute: body.calls_per_minute }),
          ...(allowedOrigins && { allowedOrigins }),
        },
      );
      return { status: 'success' as const, token, expires_at: expiresAt };
    },
  );

  app.post(
    '/agents/:id/authorize/revoke',
    {
      schema: {
        tags,
        summary: 'Revoke web call tokens',
        description:
          'Ends every token of this agent at once, reusable ones included (one embedded in a page that should no longer call).',
        params: IdParams,
        response: {
          200: Type.Object({ status: Type.Literal('success'), revoked: Type.Integer() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const agent = await services.agents.get(request.account.id, request.params.id);
      if (!agent) throw notFound('Agent');
      return {
        status: 'success' as const,
        revoked: await services.webCallTokens.revoke(request.account.id, agent.agent_id),
      };
    },
  );
}

/**
 * Starts the call a web call token grants a page of `origin` (with `agentId` when the page names
 * one): `start` with the grant, or the error answering the token: 401 unknown, expired, used up or
 * for another agent, 403 from a page of an origin it is not for, 429 over its rate. A single-use
 * token whose call does not start stays good (WebCallTokenStore.spend).
 */
async function withToken<T>(
  services: Services,
  token: string,
  presented: { origin: string | undefined; agentId?: string | undefined },
  start: (grant: RedeemedToken) => Promise<T>,
): Promise<T> {
  const { origin, agentId } = presented;
  const result = await services.webCallTokens.spend(
    token,
    { ...(origin !== undefined && { origin }), ...(agentId !== undefined && { agentId }) },
    start,
  );
  if ('started' in result) return result.started;
  if (result.refused === 'agent') throw new ApiError('UNAUTHORIZED', 'agent is not the agent the token was issued for');
  if (result.refused === 'origin')
    throw new ApiError('FORBIDDEN', `token is not valid on pages of ${origin ?? 'no origin'}: see its allowed_origins`);
  if (result.refused === 'rate') {
    const seconds = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
    throw new ApiError(
      'RATE_LIMITED',
      `token has started as many calls this minute as it may; retry in ${seconds} s`,
      undefined,
      {
        retry_after: seconds,
      },
    );
  }
  throw new ApiError('UNAUTHORIZED', 'token is unknown, expired or already used');
}

const WebCallBody = Type.Object(
  {
    sdp: Type.String({ minLength: 1, maxLength: 20_000, description: "The browser's SDP offer (ICE gathered)" }),
    token: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'From POST /v1/agents/{id}/authorize' }),
    ),
    agent_id: Type.Optional(Type.String({ minLength: 1 })),
    phone_number: Type.Optional(Type.String({ minLength: 1, description: 'One of the account’s inbound numbers' })),
    pathway_id: Type.Optional(Type.String({ minLength: 1 })),
    pathway_version: Type.Optional(Type.Integer({ minimum: 0 })),
    request_data: Type.Optional(FreeObject({ description: 'Variables of the call ({{name}})' })),
  },
  { additionalProperties: true },
);

/** A public page on any origin starts calls with a token: the signalling route answers CORS. */
function allowAnyOrigin(reply: FastifyReply): void {
  reply.header('access-control-allow-origin', '*');
  reply.header('access-control-allow-methods', 'POST, OPTIONS');
  reply.header('access-control-allow-headers', 'authorization, content-type');
  reply.header('access-control-max-age', '600');
}

/**
 * POST /v1/web-calls: a browser's offer becomes a web call. Authorized by the API key (the
 * dashboard, a back end) naming the agent, inbound number or pathway, or by a token from
 * authorize (a public page), which names the agent itself. Registered outside the API key scope.
 */
export async function webCallRoutes(app: Api, services: Services): Promise<void> {
  // Before anything can refuse the request (its content type, its JSON, its shape): a page reads
  // every answer, errors included, instead of a fetch that fails without the reason.
  app.addHook('onRequest', async (_request, reply) => allowAnyOrigin(reply));
  app.addHook('preHandler', refuseOversizedBodies);
  app.options('/web-calls', { schema: { hide: true } }, async (_request, reply) => reply.status(204).send());
  app.post(
    '/web-calls',
    {
      schema: {
        tags,
        summary: 'Start a web call',
        description:
          'Answers a browser’s WebRTC offer (audio in PCMU or PCMA, and the `openline` data channel) with the server’s SDP answer; the call runs as an inbound call on the `web` carrier. Send the API key and one of agent_id, phone_number or pathway_id, or a `token` from POST /v1/agents/{id}/authorize instead of the key. The client library at /client/openline.js does all of this.',
        body: WebCallBody,
        response: {
          200: Type.Object({ status: Type.Literal('success'), call_id: Type.String(), sdp: Type.String() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body;
      const start = (accountId: string, target: WebCallTarget, requestData: Record<string, unknown> | undefined) =>
        services.webCalls.start({ accountId, target, offer: body.sdp, ...(requestData && { requestData }) });
      let started: { callId: string; sdp: string };
      if (body.token !== undefined) {
        started = await withToken(services, body.token, { origin: request.headers.origin }, (grant) =>
          // A token may be public (a reusable one in a page any visitor loads): the page adds
          // variables, but those the token was made with stay as the back end set them.
          start(
            grant.accountId,
            { agentId: grant.agentId },
            { ...(body.request_data ?? {}), ...(grant.requestData ?? {}) },
          ),
        );
      } else {
        const key = bearerless(request.headers.authorization);
        if (!key)
          throw new ApiError('UNAUTHORIZED', 'Missing API key: send it in the authorization header, or a token');
        const account = await accountOfKey(services.accounts, key);
        if (!account) throw new ApiError('UNAUTHORIZED', 'Invalid API key');
        const named = [body.agent_id, body.phone_number, body.pathway_id].filter((x) => x !== undefined);
        if (named.length !== 1) throw validationError(['give exactly one of agent_id, phone_number or pathway_id']);
        const target: WebCallTarget =
          body.agent_id !== undefined
            ? { agentId: body.agent_id }
            : body.phone_number !== undefined
              ? { phoneNumber: body.phone_number }
              : {
                  pathwayId: body.pathway_id!,
                  ...(body.pathway_version !== undefined && { pathwayVersion: body.pathway_version }),
                };
        started = await start(account.id, target, body.request_data);
      }
      return { status: 'success' as const, call_id: started.callId, sdp: started.sdp };
    },
  );
}

/** The path the hosted web-agent SDKs connect to (their `customEndpoint` / `endpoint` names this server's). */
export const AGENT_SOCKET_PATH = '/ws/connect/blandshared';

/** The page's `sampleRate` (or `sample_rate`) query: whole Hz in range; the SDKs' 44,100 when absent. */
function socketSampleRate(query: Record<string, string | undefined>): number | string {
  const raw = query.sampleRate ?? query.sample_rate;
  if (raw === undefined || raw === '') return DEFAULT_SOCKET_SAMPLE_RATE;
  const rate = Number(raw);
  if (!Number.isInteger(rate) || rate < MIN_SOCKET_SAMPLE_RATE || rate > MAX_SOCKET_SAMPLE_RATE)
    return `sampleRate must be a whole number of Hz from ${MIN_SOCKET_SAMPLE_RATE} to ${MAX_SOCKET_SAMPLE_RATE}`;
  return rate;
}

/**
 * The hosted web-agent SDKs' websocket (docs/web-calls.md): `?agent=<agent id>&token=<token from
 * authorize>[&sampleRate=<Hz>]`, outside the API key (the token is the credential). A refused
 * socket closes with 1008 (or 1013 at the call limit, or while the server shuts down) and a reason
 * naming the field.
 */
export async function agentSocketRoute(app: FastifyInstance, options: { services: Services }): Promise<void> {
  const { services } = options;
  app.get<{ Querystring: Record<string, string | undefined> }>(
    AGENT_SOCKET_PATH,
    { schema: { hide: true }, websocket: true },
    (socket: WebSocket, request) => {
      const refuse = (error: ApiError) => refuseSocket(socket, error);
      const sampleRate = socketSampleRate(request.query);
      if (typeof sampleRate === 'string') return refuse(validationError([sampleRate], sampleRate));
      const token = request.query.token;
      if (!token)
        return refuse(new ApiError('UNAUTHORIZED', 'token is required: a token from POST /v1/agents/{id}/authorize'));
      const presented = { origin: request.headers.origin, agentId: request.query.agent || undefined };
      withToken(services, token, presented, async (grant) => {
        // The page left while the token was looked at: no call, and the token stays good.
        if (socket.readyState !== socket.OPEN)
          throw new ApiError('BAD_REQUEST', 'the socket closed before the call started');
        return services.webCalls.startSocket(
          {
            accountId: grant.accountId,
            target: { agentId: grant.agentId },
            ...(grant.requestData && { requestData: grant.requestData }),
          },
          socket,
          sampleRate,
        );
      }).catch((error: unknown) => {
        if (!(error instanceof ApiError)) request.log.warn({ err: error }, 'web-agent socket failed');
        refuseSocket(socket, error);
      });
    },
  );
}
