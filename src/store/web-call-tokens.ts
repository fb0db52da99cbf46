import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { hashApiKey } from '../security/secrets.js';
import type { Database } from './types.js';
import { fromJson } from './json.js';
import { countInWindow } from './rate-windows.js';

/** How long a web call token stays good unless its issuer says otherwise: enough to load a page and press a button. */
export const WEB_CALL_TOKEN_TTL_MS = 10 * 60_000;
/** The longest a token may be good for (`expires_in`): a reusable one embedded in a page is rotated at least this often. */
export const MAX_WEB_CALL_TOKEN_TTL_S = 90 * 24 * 3600;
/** A reusable token's limit of calls a minute unless its issuer says otherwise. */
export const DEFAULT_CALLS_PER_MINUTE = 10;
export const MAX_CALLS_PER_MINUTE = 1000;

export interface TokenOptions {
  /** Good for any number of calls until it expires (a widget's `data-token` every visitor loads). */
  reusable?: boolean;
  /** Seconds it stays good; default ten minutes. */
  expiresInS?: number;
  /** A reusable token's limit of calls a minute. */
  callsPerMinute?: number;
  /** Origins (`https://shop.example`) whose pages may use it; default any. */
  allowedOrigins?: string[];
}

export interface RedeemedToken {
  accountId: string;
  agentId: string;
  requestData: Record<string, unknown> | null;
}

/** Why a token starts no call: unknown, expired or used up; a page of another origin; another agent; over its rate. */
export type TokenRefusal =
  { refused: 'unknown' } | { refused: 'origin' } | { refused: 'agent' } | { refused: 'rate'; retryAfterMs: number };

/** The rate window's key of a reusable token (rate_limit_windows). */
const windowKey = (hash: string) => `wct:${hash}`;

/**
 * Web call tokens: a public page starts calls with one, without the account's API key. Only their
 * hash is stored. A single-use token's row is taken when it is redeemed, so it works once; a
 * reusable one works until it expires, at most `calls_per_minute` calls a minute (counted in the
 * database, so several processes share the limit). Neither works after it expired, nor, with
 * `allowed_origins`, from a page of another origin, nor for another agent.
 */
export class WebCallTokenStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async issue(
    accountId: string,
    agentId: string,
    requestData: Record<string, unknown> | null,
    options: TokenOptions = {},
  ): Promise<{ token: string; expiresAt: string }> {
    const token = `wct_${randomBytes(24).toString('base64url')}`;
    const now = this.clock.now();
    const ttlMs = options.expiresInS !== undefined ? options.expiresInS * 1000 : WEB_CALL_TOKEN_TTL_MS;
    const expiresAt = new Date(now.getTime() + ttlMs).toISOString();
    await this.db
      .insertInto('web_call_tokens')
      .values({
        token_hash: hashApiKey(token),
        account_id: accountId,
        agent_id: agentId,
        request_data: requestData === null ? null : JSON.stringify(requestData),
        expires_at: expiresAt,
        created_at: now.toISOString(),
        reusable: options.reusable ? 1 : 0,
        calls_per_minute: options.reusable ? (options.callsPerMinute ?? DEFAULT_CALLS_PER_MINUTE) : null,
        allowed_origins: options.allowedOrigins?.length ? JSON.stringify(options.allowedOrigins) : null,
      })
      .execute();
    // Tokens nobody used are cleared as new ones are issued, with the rate windows of reusable ones.
    const expired = await this.db
      .deleteFrom('web_call_tokens')
      .where('expires_at', '<', now.toISOString())
      .returning(['token_hash', 'reusable'])
      .execute();
    await this.forgetWindows(expired);
    return { token, expiresAt };
  }

  /**
   * Starts `start`, the call the token grants a page of `origin` (the request's Origin header) with
   * `agentId` when the page names one, or says why not. A refusal leaves the token as it was (a
   * copy of the page on another site cannot spend a visitor's token); a single-use token is taken
   * only by a grant, in one statement, so one request gets it however many race for it, and is put
   * back as it was when its call does not start (`start` throws: an offer it cannot answer, the
   * account's call limit, a server shutting down, a page that left first).
   */
  async spend<T>(
    token: string,
    presented: { origin?: string; agentId?: string },
    start: (grant: RedeemedToken) => Promise<T>,
  ): Promise<{ started: T } | TokenRefusal> {
    const hash = hashApiKey(token);
    const now = this.clock.now();
    const row = await this.db
      .selectFrom('web_call_tokens')
      .selectAll()
      .where('token_hash', '=', hash)
      .executeTakeFirst();
    if (!row || row.expires_at < now.toISOString()) return { refused: 'unknown' };
    const origins = fromJson<string[] | null>(row.allowed_origins, null);
    const { origin, agentId } = presented;
    if (origins && !(origin && origins.includes(origin))) return { refused: 'origin' };
    if (agentId !== undefined && agentId !== row.agent_id) return { refused: 'agent' };
    if (row.reusable) {
      const window = await countInWindow(this.db, windowKey(hash), 60_000, now.getTime());
      if (window.current > (row.calls_per_minute ?? DEFAULT_CALLS_PER_MINUTE))
        return { refused: 'rate', retryAfterMs: window.ttl };
    } else {
      const taken = await this.db.deleteFrom('web_call_tokens').where('token_hash', '=', hash).executeTakeFirst();
      if (Number(taken.numDeletedRows) === 0) return { refused: 'unknown' };
    }
    const grant = {
      accountId: row.account_id,
      agentId: row.agent_id,
      requestData: fromJson<Record<string, unknown> | null>(row.request_data, null),
    };
    try {
      return { started: await start(grant) };
    } catch (error) {
      if (!row.reusable)
        await this.db
          .insertInto('web_call_tokens')
          .values(row)
          .onConflict((c) => c.doNothing())
          .execute();
      throw error;
    }
  }

  /** Ends every token of the account's agent at once (a reusable one that leaked); resolves with how many. */
  async revoke(accountId: string, agentId: string): Promise<number> {
    const rows = await this.db
      .deleteFrom('web_call_tokens')
      .where('account_id', '=', accountId)
      .where('agent_id', '=', agentId)
      .returning(['token_hash', 'reusable'])
      .execute();
    await this.forgetWindows(rows);
    return rows.length;
  }

  /** Deleted reusable tokens' rate windows go with them. */
  private async forgetWindows(rows: { token_hash: string; reusable: number }[]): Promise<void> {
    const windows = rows.filter((r) => r.reusable).map((r) => windowKey(r.token_hash));
    if (windows.length > 0) await this.db.deleteFrom('rate_limit_windows').where('key', 'in', windows).execute();
  }
}
