import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { hashApiKey } from '../security/secrets.js';
import type { Database } from './types.js';
import { fromJson } from './json.js';

/** How long a web call token stays good: enough to load a page and press a button. */
export const WEB_CALL_TOKEN_TTL_MS = 10 * 60_000;

export interface RedeemedToken {
  accountId: string;
  agentId: string;
  requestData: Record<string, unknown> | null;
}

/**
 * Web call tokens: a public page starts one call with one, without the account's API key. Only
 * their hash is stored; redeeming deletes the row, so a token works once, and never after it expired.
 */
export class WebCallTokenStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async issue(accountId: string, agentId: string, requestData: Record<string, unknown> | null): Promise<string> {
    const token = `wct_${randomBytes(24).toString('base64url')}`;
    const now = this.clock.now();
    await this.db
      .insertInto('web_call_tokens')
      .values({
        token_hash: hashApiKey(token),
        account_id: accountId,
        agent_id: agentId,
        request_data: requestData === null ? null : JSON.stringify(requestData),
        expires_at: new Date(now.getTime() + WEB_CALL_TOKEN_TTL_MS).toISOString(),
        created_at: now.toISOString(),
      })
      .execute();
    // Tokens nobody used are cleared as new ones are issued.
    await this.db.deleteFrom('web_call_tokens').where('expires_at', '<', now.toISOString()).execute();
    return token;
  }

  /** The token's grant, once: the row is taken in the same statement that reads it. */
  async redeem(token: string): Promise<RedeemedToken | undefined> {
    const row = await this.db
      .deleteFrom('web_call_tokens')
      .where('token_hash', '=', hashApiKey(token))
      .returning(['account_id', 'agent_id', 'request_data', 'expires_at'])
      .executeTakeFirst();
    if (!row || row.expires_at < this.clock.now().toISOString()) return undefined;
    return {
      accountId: row.account_id,
      agentId: row.agent_id,
      requestData: fromJson<Record<string, unknown> | null>(row.request_data, null),
    };
  }
}
