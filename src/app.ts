import Fastify, { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Services } from './services.js';
import { ApiError, clientErrorResponse, frameworkError, installErrorHandling } from './errors.js';
import fastJson, { type Schema as FastJsonSchema } from 'fast-json-stringify';
import { buildValidatorCompiler, refuseOversizedBodies } from './api/validation.js';
import { once } from './domain/once.js';
import { parseJsonBody } from './api/json-body.js';
import type { Api } from './api/types.js';
import { API_ROUTES, registerTopLevelAliases } from './api/index.js';
import { batchesV2 } from './api/batches.js';
import healthRoutes from './api/health.js';
import { metricsRoute } from './observability/metrics.js';
import { registerRateLimit } from './api/rate-limit.js';
import twilioRoutes from './carriers/twilio/routes.js';
import { dashboard } from './web.js';
import { operationsHtml, withListing, type OpenApiDocument } from './api/reference-page.js';
import { accountOfKey, bearerless } from './api/auth.js';
import { agentSocketRoute, webCallRoutes } from './api/web-calls.js';
import { listenSocketRoute } from './api/listen.js';
import websocket from '@fastify/websocket';
import { ttsV2 } from './api/tts.js';

/** Fields whose values never reach the logs. */
export const REDACT = ['req.headers.authorization', 'req.headers.encrypted_key', 'req.headers["x-twilio-signature"]'];

export interface AppOptions {
  /** pino instance for request logs; none in tests. */
  logger?: FastifyBaseLogger;
  /** Where the built dashboard is; default web/dist. */
  dashboardDir?: string;
}

/** Every route of this scope needs an API key; the caller's account is on request.account. */
function requireApiKey(app: Api, services: Services): void {
  app.decorateRequest('account');
  // A callback hook: a key verified moments ago is accepted without a promise round trip.
  app.addHook('onRequest', (request, _reply, done) => {
    const key = bearerless(request.headers.authorization);
    if (!key) return done(new ApiError('UNAUTHORIZED', 'Missing API key: send it in the authorization header'));
    const found = accountOfKey(services.accounts, key);
    if (found && !(found instanceof Promise)) {
      request.account = found;
      return done();
    }
    Promise.resolve(found).then((account) => {
      if (!account) return done(new ApiError('UNAUTHORIZED', 'Invalid API key'));
      request.account = account;
      done();
    }, done);
  });
}

/**
 * A POST sent with no body at all (no content type, as `curl -X POST` and HTTP clients called
 * without data send it) reads as `{}`, as an empty JSON body does: the route's own rules then
 * name what is missing, and a body whose fields are all optional is not needed.
 */
function readBodilessPostsAsEmpty(app: Api): void {
  app.addHook('preValidation', async (request) => {
    if (request.method !== 'GET' && request.method !== 'DELETE') request.body ??= {};
  });
}

/** The authenticated API under one prefix (/v1 or /api/v1). */
async function api(app: Api, services: Services): Promise<void> {
  requireApiKey(app, services);
  readBodilessPostsAsEmpty(app);
  app.addHook('preHandler', refuseOversizedBodies);
  for (const routes of API_ROUTES) await routes(app, services);
}

/**
 * Each request is one debug line; at info the log tells what calls do (src/calls/engine.ts), so
 * the first API key printed at start-up stays on screen. Errors keep Fastify's own lines.
 */
class QuietRequests extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply);
    reply.log.debug(
      {
        method: request.method,
        route: request.routeOptions.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  }
}

/** A compressed body (`Content-Encoding: gzip`) is refused by name: it is not JSON that went wrong. */
function refuseEncoded(request: FastifyRequest): void {
  const encoding = request.headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity')
    throw new ApiError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding ${encoding} is not supported: send the request body uncompressed`,
    );
}

/** A Fastify instance with every route, without listen(): tests call inject() on it. */
export async function buildApp(services: Services, options: AppOptions = {}): Promise<Api> {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    logController: new QuietRequests(),
    bodyLimit: services.config.bodyLimitBytes,
    // A client that sends its request a byte at a time (slowloris) would otherwise hold its
    // connection, and a file descriptor, for ever: Fastify turns Node's request timeout off.
    requestTimeout: services.config.requestTimeoutMs,
    http: {
      headersTimeout: services.config.headersTimeoutMs,
      // Node looks for expired requests every 30 s by default: a timeout of 20 s then acts at 50.
      connectionsCheckingInterval: Math.min(1000, services.config.headersTimeoutMs / 2),
    },
    trustProxy: true,
    genReqId: () => crypto.randomUUID(),
    // A base URL with a trailing slash makes `//v1/calls`: read as `/v1/calls`, as most proxies do.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
    frameworkErrors: (error, _request, reply) => {
      const { statusCode, body } = frameworkError(error);
      void (reply as FastifyReply).status(statusCode).send(body);
    },
    clientErrorHandler: (error: Error & { code?: string }, socket) => {
      if (!socket.writable) return socket.destroy(error);
      // Closed once the answer is written, without waiting for the client's end of the
      // connection: a client that never reads nor closes would otherwise keep it open.
      socket.end(clientErrorResponse(error), () => socket.destroy());
    },
    ajv: { customOptions: {} },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // The seed's body-less POSTs (e.g. Campaign Details) are often sent with a JSON content type and
  // no body: parseJsonBody reads that as an empty object instead of failing.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string' },
    async (request: FastifyRequest, body: string | Buffer) => {
      refuseEncoded(request);
      return parseJsonBody(String(body));
    },
  );
  // Bodies sent with another content type, or none: an empty one is no body (clients POST an empty
  // form to stop a call), and JSON text is read as JSON (fetch sends a string body as text/plain).
  // Anything else is refused (415).
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', { parseAs: 'string' }, async (request: FastifyRequest, body: string | Buffer) => {
    refuseEncoded(request);
    const text = String(body);
    if (text.trim() === '' || /^\s*[[{]/.test(text)) return parseJsonBody(text);
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  });
  app.setValidatorCompiler(
    buildValidatorCompiler({
      allowPrivateUrls: services.config.allowPrivateUrls,
      voiceAliases: services.config.voiceAliases,
    }),
  );
  // Response schemas become serializers when their route first answers, as validators are compiled
  // when first used (buildValidatorCompiler): compiling hundreds at start cost seconds.
  app.setSerializerCompiler(({ schema }) => {
    const stringify = once(() => fastJson(schema as FastJsonSchema));
    return (data: unknown) => stringify()(data);
  });
  const site = dashboard(options.dashboardDir);
  installErrorHandling(app, { page: site.deepLink });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Openline API',
        version: '1.0.0',
        description:
          'Self-hostable voice-agent telephony. Every endpoint is served under /v1 and, identically, under /api/v1.',
      },
      servers: [{ url: services.config.publicUrl }],
      components: {
        securitySchemes: {
          apiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'authorization',
            description: 'The API key, optionally as "Bearer <key>"',
          },
        },
      },
      security: [{ apiKey: [] }],
    },
    // The /api/v1 copies are identical to /v1: document each operation once.
    transform: ({ schema, url }) => ({
      schema: url.startsWith('/api/') ? { ...schema, hide: true } : schema,
      url,
    }),
  });
  // The document names the server as the reader reached it (a proxy's X-Forwarded-* included), so
  // "Try it out" works from wherever /docs was opened.
  const asReached = <T extends object>(spec: T, request: FastifyRequest) => ({
    ...spec,
    servers: [{ url: `${request.protocol}://${request.host}` }],
  });
  // /docs: Swagger UI, with the operations listed as plain HTML inside the element it draws into,
  // for a reader whose browser does not run its scripts (src/api/reference-page.ts).
  let listing: string | undefined;
  await app.register(async (docs) => {
    docs.addHook('onSend', async (request, reply, payload) => {
      if (request.routeOptions.url !== '/docs' || typeof payload !== 'string') return payload;
      if (!String(reply.getHeader('content-type')).startsWith('text/html')) return payload;
      listing ??= operationsHtml(app.swagger() as OpenApiDocument);
      return withListing(payload, listing);
    });
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      transformSpecification: asReached,
      theme: { title: 'Openline API reference' },
    });
  });
  app.get('/openapi.json', { schema: { hide: true } }, async (request) => asReached(app.swagger(), request));

  await registerRateLimit(app, {
    perMinute: services.config.rateLimitPerMinute,
    ...(services.storage.dialect === 'postgres' ? { db: services.storage.db } : {}),
  });
  services.metrics.instrument(app);
  metricsRoute(app, services.metrics, services.config.metricsToken);
  await app.register(healthRoutes, { services });
  // Websockets: Twilio's media streams and live listening.
  await app.register(websocket, {
    options: { maxPayload: 64 * 1024 },
    // What a peer got wrong (a frame over the limit, bad UTF-8, a reset) is its problem, logged as
    // a warning without a stack; an error of Openline's own handler stays an error.
    errorHandler: (error: Error & { code?: string }, socket, request) => {
      if (error.code?.startsWith('WS_ERR_') || error.code === 'ECONNRESET' || error.code === 'EPIPE')
        request.log.warn({ code: error.code, reason: error.message }, 'websocket peer error');
      else request.log.error(error);
      socket.terminate();
    },
  });
  // Twilio's webhooks and media stream: signed by Twilio (or a one-time stream token), not an API key.
  await app.register(twilioRoutes, { services });
  // Live listening's websocket: the token of POST /v1/calls/{id}/listen, not an API key.
  await app.register(listenSocketRoute, { services });
  // The hosted web-agent SDKs' websocket: a token from authorize, not an API key.
  await app.register(agentSocketRoute, { services });
  // Web call signalling: the API key or a single-use token from a public page (CORS).
  for (const prefix of ['/v1', '/api/v1'])
    await app.register(async (scope) => webCallRoutes(scope as Api, services), { prefix });
  await app.register(async (scope) => api(scope as Api, services), { prefix: '/v1' });
  await app.register(async (scope) => api(scope as Api, services), { prefix: '/api/v1' });
  // The hosted API's /v2 endpoints that clients call (batches, text to speech).
  await app.register(
    async (scope) => {
      requireApiKey(scope as Api, services);
      readBodilessPostsAsEmpty(scope as Api);
      scope.addHook('preHandler', refuseOversizedBodies);
      await batchesV2(scope as Api, services);
      await ttsV2(scope as Api, services);
    },
    { prefix: '/v2' },
  );
  await app.register(async (scope) => {
    requireApiKey(scope as Api, services);
    readBodilessPostsAsEmpty(scope as Api);
    await registerTopLevelAliases(scope as Api, services);
  });
  // The dashboard at /; its deep links are answered by the not-found handler (site.deepLink).
  await site.register(app);
  return app;
}
