import type { FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Kysely } from 'kysely';
import type { Database } from '../store/types.js';
import { countInWindow } from '../store/rate-windows.js';
import { hashApiKey } from '../security/secrets.js';
import { ApiError } from '../errors.js';
import type { Account } from '../store/accounts.js';

const WINDOW_MS = 60_000;

type IncrCallback = Parameters<FastifyRateLimitStore['incr']>[1];

/**
 * Counts requests per key in the database (countInWindow), so that several processes on one
 * PostgreSQL database enforce one limit together.
 */
export function sqlRateLimitStore(db: Kysely<Database>): FastifyRateLimitStoreCtor {
  class SqlRateLimitStore implements FastifyRateLimitStore {
    incr(key: string, callback: IncrCallback, timeWindow: number): void {
      countInWindow(db, key, timeWindow).then(
        (window) => callback(null, window),
        (error: Error) => callback(error),
      );
    }

    child(): FastifyRateLimitStore {
      return this;
    }
  }
  return SqlRateLimitStore;
}

function apiKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const value = (Array.isArray(header) ? header[0] : header)?.trim().replace(/^bearer\s+/i, '');
  return value || undefined;
}

export interface RateLimitOptions {
  /** Requests a minute per API key, unless the account has its own; 0 turns the limit off. */
  perMinute: number;
  /** Shared windows on PostgreSQL; in memory when absent (one process on SQLite). */
  db?: Kysely<Database>;
}

/**
 * Per-API-key request rate limits on every authenticated endpoint: over the limit, 429 in the
 * contract's error shape with Retry-After. Runs after authentication, so requests without a valid
 * key (answered 401) and the routes that need none (health, metrics, carrier webhooks) are not
 * counted. An account may have its own limit (`openline accounts limit`).
 */
export async function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  const limitOf = (request: FastifyRequest): number =>
    (request.account as Account | undefined)?.rate_limit_per_minute ?? options.perMinute;
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    timeWindow: WINDOW_MS,
    max: (request) => limitOf(request),
    // The key is stored and compared as a hash, like the API keys themselves.
    keyGenerator: (request) => `key:${hashApiKey(apiKeyOf(request) ?? '')}`,
    allowList: (request) => !(request.account as Account | undefined) || limitOf(request) === 0,
    ...(options.db ? { store: sqlRateLimitStore(options.db) } : {}),
    errorResponseBuilder: (request, context) =>
      new ApiError(
        'RATE_LIMITED',
        `Too many requests: this API key may make ${context.max} a minute; retry in ${context.after}`,
      ),
  });
}
