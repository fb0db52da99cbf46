import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Api } from './api/types.js';

/** Where `npm install` builds the dashboard (web/, `npm run build:web`). */
export const DASHBOARD_DIR = fileURLToPath(new URL('../web/dist', import.meta.url));

/**
 * Paths that belong to the API and the server, never to the dashboard's deep links (in any case,
 * with any number of leading slashes); among them /.well-known, where clients look for metadata
 * (an MCP client's OAuth discovery must get a 404).
 */
const SERVER_PATHS = /^\/+(v1|v2|api|docs|openapi\.json|twilio|ws|metrics|healthz|readyz|\.well-known)(\/|$|\?)/i;

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

/**
 * The folders of the built app's files: a path there that is not a file is a 404, never the page
 * (a tab loaded before the server was updated asks for code that is gone).
 */
const FILE_PATHS = /^\/+(assets|client)\//i;

/** A browser asking for a page at a path that is not the server's own. */
const wantsPage = (request: FastifyRequest): boolean =>
  (request.method === 'GET' || request.method === 'HEAD') &&
  !SERVER_PATHS.test(request.url) &&
  !FILE_PATHS.test(request.url) &&
  (request.headers.accept ?? '*/*').split(',').some((type) => /text\/html|\*\/\*/.test(type));

export interface Dashboard {
  /** Serves the app at `/` and its hashed assets (cached for good). */
  register(app: Api): Promise<void>;
  /**
   * The app's page for a deep link (`/calls/{id}`, `/pathways/{id}`, ...) that no route matched,
   * so the app's router shows it; undefined for anything else (the API's JSON 404 answers).
   */
  deepLink(request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined;
}

/** The dashboard (CONTRACT.md section 2): the single-page app built into `root`. */
export function dashboard(root = DASHBOARD_DIR): Dashboard {
  const built = fs.existsSync(path.join(root, 'index.html'));
  const page = (reply: FastifyReply): FastifyReply => {
    void reply.headers(PAGE_HEADERS).type('text/html');
    return built ? reply.sendFile('index.html', root, { cacheControl: false }) : reply.send(NOT_BUILT);
  };
  return {
    async register(app) {
      if (built)
        await app.register(fastifyStatic, {
          root,
          prefix: '/',
          // Files are listed once at start-up; other paths go to the not-found handler.
          wildcard: false,
          index: false,
          cacheControl: false,
          setHeaders: (res, file) => {
            if (file.includes(`${path.sep}assets${path.sep}`))
              res.setHeader('cache-control', 'public, max-age=31536000, immutable');
            // The web call client and widget are loaded by pages on any origin (docs/web-calls.md).
            if (file.includes(`${path.sep}client${path.sep}`)) {
              res.setHeader('access-control-allow-origin', '*');
              res.setHeader('cache-control', 'no-cache');
            }
          },
        });
      app.get('/', { schema: { hide: true } }, (_request, reply) => page(reply));
    },
    deepLink: (request, reply) => (wantsPage(request) ? page(reply) : undefined),
  };
}
