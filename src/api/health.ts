import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';

/** Liveness and readiness: no API key needed. */
export default async function healthRoutes(app: FastifyInstance, options: { services: Services }): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await options.services.ready();
      return { status: 'ok' };
    } catch {
      return reply.status(503).send({ status: 'error', message: 'storage or job queue unreachable' });
    }
  });
}
