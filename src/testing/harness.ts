import { pino } from 'pino';
import { loadConfig, type Config } from '../config.js';
import { buildServices, type Services } from '../services.js';
import { buildApp } from '../app.js';
import type { Api } from '../api/types.js';
import type { Clock } from '../clock.js';
import type { Speech } from '../providers/speech.js';
import { createTestDatabase } from './postgres.js';

export interface TestApp {
  app: Api;
  services: Services;
  /** API key of the main test account. */
  key: string;
  /** API key of a second account, for isolation tests. */
  otherKey: string;
  /** Sends a request as the main account (or `as` another key); parses JSON replies. */
  request(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    options?: { as?: string | null; headers?: Record<string, string> },
  ): Promise<{
    status: number;
    body: Record<string, unknown> & { [k: string]: unknown };
    headers: Record<string, unknown>;
  }>;
  close(): Promise<void>;
}

/**
 * A complete Openline app on a private in-memory SQLite database (or the PostgreSQL database
 * given), with two accounts. Outbound requests to loopback are allowed, as tests need.
 */
export async function createTestApp(
  options: {
    env?: Record<string, string>;
    clock?: Clock;
    config?: Partial<Config>;
    /** Run on a fresh PostgreSQL database of its own (dropped on close) instead of SQLite. */
    postgres?: boolean;
    /** Speech providers in place of the configuration's. */
    speech?: Speech;
  } = {},
): Promise<TestApp> {
  const database = options.postgres ? await createTestDatabase() : undefined;
  const config: Config = {
    // Tests send requests in bursts: no rate limit unless a test sets one.
    ...loadConfig({
      DATA_DIR: ':memory:',
      OPENLINE_ALLOW_PRIVATE_URLS: 'true',
      OPENLINE_RATE_LIMIT_PER_MINUTE: '0',
      // No SIP listener unless a test asks for one (on a port of its own).
      OPENLINE_SIP_LISTEN: 'off',
      ...options.env,
    }),
    dataDir: options.env?.DATA_DIR ?? ':memory:',
    databaseUrl: database?.url,
    ...options.config,
  };
  // OPENLINE_TEST_LOG=debug (or any level) shows the service's own log while tests run.
  const level = process.env.OPENLINE_TEST_LOG;
  const services = await buildServices(config, {
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.speech ? { speech: options.speech } : {}),
    ...(level ? { logger: pino({ level }, process.stderr) } : {}),
  });
  const app = await buildApp(services);
  const { key } = await services.accounts.create('test');
  const { key: otherKey } = await services.accounts.create('other');
  return {
    app,
    services,
    key,
    otherKey,
    async request(method, url, body, requestOptions = {}) {
      const as = requestOptions.as === undefined ? key : requestOptions.as;
      const headers: Record<string, string> = { ...requestOptions.headers };
      if (as !== null) headers.authorization = as;
      const response = await app.inject({
        method,
        url,
        headers,
        ...(body === undefined ? {} : typeof body === 'string' ? { payload: body } : { payload: body as object }),
      });
      let parsed: Record<string, unknown> = {};
      const type = String(response.headers['content-type'] ?? '');
      if (type.includes('json') && response.body) parsed = JSON.parse(response.body) as Record<string, unknown>;
      return { status: response.statusCode, body: parsed, headers: response.headers };
    },
    async close() {
      await app.close();
      await services.close();
      await database?.drop();
    },
  };
}

/**
 * Call details once the call has ended (completed, or an error state); polls in real time, every
 * 50 ms for up to `timeoutMs` (30 s by default).
 */
export async function waitForCall(
  t: TestApp,
  id: string,
  key = t.key,
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  for (let i = 0; i < timeoutMs / 50; i++) {
    const r = await t.request('GET', `/v1/calls/${id}`, undefined, { as: key });
    if (r.body.completed === true || String(r.body.queue_status).endsWith('error')) return r.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`call ${id} did not end`);
}
