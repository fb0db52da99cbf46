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
import { accountOfKey, bearerless } from './auth.js';

const tags = ['Web calls'];

/** POST /v1/agents/{id}/authorize: the hosted API's web-agent token (single use, ten minutes). */
export async function authorizeRoutes(app: Api, services: Services): Promise<void> {
  app.post(
    '/agents/:id/authorize',
    {
      schema: {
        tags,
        summary: 'Authorize a web call',
        description:
          'A single-use token that lets a browser start one web call with this agent (POST /v1/web-calls with `token`) without the API key. It expires after ten minutes.',
        params: IdParams,
        // The body is optional (clients send none): {"request_data": {...}}, the call's variables.
        response: { 200: Type.Object({ status: Type.Literal('success'), token: Type.String() }), ...errorResponses },
      },
    },
    async (request) => {
      const requestData = (request.body as { request_data?: unknown } | undefined)?.request_data ?? null;
      if (requestData !== null && (typeof requestData !== 'object' || Array.isArray(requestData)))
        throw validationError(['request_data must be an object']);
      const agent = await services.agents.get(request.account.id, request.params.id);
      if (!agent) throw notFound('Agent');
      const token = await services.webCallTokens.issue(
        request.account.id,
        agent.agent_id,
        requestData as Record<string, unknown> | null,
      );
      return { status: 'success' as const, token };
    },
  );
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
      let accountId: string;
      let target: WebCallTarget;
      let requestData = body.request_data;
      if (body.token !== undefined) {
        const grant = await services.webCallTokens.redeem(body.token);
        if (!grant) throw new ApiError('UNAUTHORIZED', 'token is unknown, expired or already used');
        accountId = grant.accountId;
        target = { agentId: grant.agentId };
        requestData = { ...(grant.requestData ?? {}), ...(requestData ?? {}) };
      } else {
        const key = bearerless(request.headers.authorization);
        if (!key)
          throw new ApiError('UNAUTHORIZED', 'Missing API key: send it in the authorization header, or a token');
        const account = await accountOfKey(services.accounts, key);
        if (!account) throw new ApiError('UNAUTHORIZED', 'Invalid API key');
        accountId = account.id;
        const named = [body.agent_id, body.phone_number, body.pathway_id].filter((x) => x !== undefined);
        if (named.length !== 1) throw validationError(['give exactly one of agent_id, phone_number or pathway_id']);
        target =
          body.agent_id !== undefined
            ? { agentId: body.agent_id }
            : body.phone_number !== undefined
              ? { phoneNumber: body.phone_number }
              : {
                  pathwayId: body.pathway_id!,
                  ...(body.pathway_version !== undefined && { pathwayVersion: body.pathway_version }),
                };
      }
      const started = await services.webCalls.start({
        accountId,
        target,
        offer: body.sdp,
        ...(requestData && { requestData }),
      });
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
      void (async () => {
        const grant = await services.webCallTokens.redeem(token);
        if (!grant) return refuse(new ApiError('UNAUTHORIZED', 'token is unknown, expired or already used'));
        const agent = request.query.agent;
        if (agent && agent !== grant.agentId)
          return refuse(new ApiError('UNAUTHORIZED', 'agent is not the agent the token was issued for'));
        if (socket.readyState !== socket.OPEN) return;
        await services.webCalls.startSocket(
          {
            accountId: grant.accountId,
            target: { agentId: grant.agentId },
            ...(grant.requestData && { requestData: grant.requestData }),
          },
          socket,
          sampleRate,
        );
      })().catch((error: unknown) => {
        if (!(error instanceof ApiError)) request.log.warn({ err: error }, 'web-agent socket failed');
        refuseSocket(socket, error);
      });
    },
  );
}
