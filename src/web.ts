import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Api } from './api/types.js';

/** Where `npm install` builds the dashboard (web/, `npm run build:web`). */
export const DASHBOARD_DIR = fileURLToPath(new URL('../web/dist', import.meta.url));

/** Paths that belong to the API and the server, never to the dashboard's deep links. */
const SERVER_PATHS = /^\/(v1|v2|api|docs|openapi\.json|twilio|metrics|healthz|readyz)(\/|$|\?)/;

/**
 * The dashboard's page may only load its own scripts and talk to this server; recordings and
 * voice samples play from blob: URLs; React Flow positions nodes with inline styles.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    "media-src 'self' blob:; connect-src 'self' blob:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Openline</title></head>
<body><main><h1>Openline</h1><p>The dashboard has not been built. Run <code>npm install</code> (or
<code>npm run build:web</code>) and restart the server. The API works meanwhile: see <a href="/docs">/docs</a>.</p>
</main></body></html>`;

const wantsPage = (request: FastifyRequest): boolean =>
  (request.method === 'GET' || request.method === 'HEAD') &&
  !SERVER_PATHS.test(request.url) &&
  (request.headers.accept ?? '*/*').split(',').some((type) => /text\/html|\*\/\*/.test(type));

/**
 * The dashboard (CONTRACT.md section 2): the single-page app at `/`, its hashed assets (cached for
 * good), and the same page for every deep link (`/calls/{id}`, `/pathways/{id}`, ...) so the
 * app's router shows it. Anything under the API's paths that is not a route stays a JSON 404.
 */
export async function dashboardRoutes(app: Api, root = DASHBOARD_DIR): Promise<void> {
  const built = fs.existsSync(path.join(root, 'index.html'));
  const page = (_request: FastifyRequest, reply: FastifyReply) => {
    void reply.headers(PAGE_HEADERS);
    return built
      ? reply.type('text/html').sendFile('index.html', root, { cacheControl: false })
      : reply.type('text/html').send(NOT_BUILT);
  };
  if (built) {
    await app.register(fastifyStatic, {
      root,
      prefix: '/',
      // Files are listed once at start-up: unknown paths fall through to the page below.
      wildcard: false,
      index: false,
      cacheControl: false,
      setHeaders: (res, file) => {
        if (file.includes(`${path.sep}assets${path.sep}`))
          res.setHeader('cache-control', 'public, max-age=31536000, immutable');
      },
    });
  }
  app.get('/', { schema: { hide: true } }, page);
  app.get('/*', { schema: { hide: true } }, (request, reply) =>
    wantsPage(request) ? page(request, reply) : reply.callNotFound(),
  );
}
