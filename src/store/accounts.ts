import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import { hashApiKey, newApiKey, newId, newWebhookSecret, type SecretBox } from '../security/secrets.js';
import type { Clock } from '../clock.js';

export interface Account {
  id: string;
  name: string;
  created_at: string;
  /** Requests a minute per API key; null: the server's OPENLINE_RATE_LIMIT_PER_MINUTE. */
  rate_limit_per_minute: number | null;
  /** Calls at once; null: the server's OPENLINE_MAX_CONCURRENT_CALLS. */
  max_concurrent_calls: number | null;
}

const ACCOUNT_COLUMNS = ['id', 'name', 'created_at', 'rate_limit_per_minute', 'max_concurrent_calls'] as const;

export interface ApiKeyInfo {
  id: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

/** How long a verified key is trusted without asking storage again (real milliseconds). */
export const KEY_CACHE_MS = 2_000;

/** Accounts, their API keys (stored as hashes) and their webhook signing secrets (encrypted). */
export class AccountStore {
  /**
   * Every request authenticates: a short-lived cache of verified keys (by hash) keeps that off
   * storage. A key revoked here is dropped at once; another process sharing PostgreSQL stops
   * accepting it within KEY_CACHE_MS. Failed lookups are never cached.
   */
  private readonly verified = new Map<string, { account: Account; until: number }>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly box: SecretBox,
    private readonly clock: Clock,
  ) {}

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async list(): Promise<Account[]> {
    return this.db.selectFrom('accounts').select(ACCOUNT_COLUMNS).orderBy('created_at').orderBy('id').execute();
  }

  async get(id: string): Promise<Account | undefined> {
    return this.db.selectFrom('accounts').select(ACCOUNT_COLUMNS).where('id', '=', id).executeTakeFirst();
  }

  /** Creates an account with a first API key (the given one, or a new random one). */
  async create(name = 'default', key: string = newApiKey()): Promise<{ account: Account; key: string }> {
    const now = this.clock.now().toISOString();
    const account: Account = {
      id: newId(),
      name,
      created_at: now,
      rate_limit_per_minute: null,
      max_concurrent_calls: null,
    };
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('accounts')
        .values({ ...account, webhook_secret_enc: this.box.seal(newWebhookSecret(), `webhook:${account.id}`) })
        .execute();
      await tx
        .insertInto('api_keys')
        .values(this.keyRow(account.id, key, now))
        .execute();
    });
    return { account, key };
  }

  private keyRow(accountId: string, key: string, now: string) {
    return {
      id: newId(),
      account_id: accountId,
      key_hash: hashApiKey(key),
      prefix: key.slice(0, 7),
      created_at: now,
      revoked_at: null,
    };
  }

  /** Sets the account's own limits (null: the server's); false when there is no such account. */
  async setLimits(
    accountId: string,
    limits: Partial<Pick<Account, 'rate_limit_per_minute' | 'max_concurrent_calls'>>,
  ): Promise<boolean> {
    const result = await this.db.updateTable('accounts').set(limits).where('id', '=', accountId).executeTakeFirst();
    this.verified.clear();
    return Number(result.numUpdatedRows) > 0;
  }

  /** The account of a key verified moments ago, without asking storage; undefined otherwise. */
  recentlyVerified(key: string): Account | undefined {
    const hit = this.verified.get(hashApiKey(key));
    return hit && hit.until > performance.now() ? hit.account : undefined;
  }

  async authenticate(key: string): Promise<Account | undefined> {
    const hash = hashApiKey(key);
    const now = performance.now();
    const hit = this.verified.get(hash);
    if (hit && hit.until > now) return hit.account;
    const account = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select([
        'accounts.id',
        'accounts.name',
        'accounts.created_at',
        'accounts.rate_limit_per_minute',
        'accounts.max_concurrent_calls',
      ])
      .where('api_keys.key_hash', '=', hash)
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    if (account) {
      if (this.verified.size >= 10_000) this.verified.clear();
      this.verified.set(hash, { account, until: now + KEY_CACHE_MS });
    } else {
      this.verified.delete(hash);
    }
    return account;
  }

  /** Makes sure an account with this key exists (OPENLINE_API_KEY); returns it and whether it was created. */
  async ensureKey(key: string): Promise<{ account: Account; created: boolean }> {
    const existing = await this.authenticate(key);
    if (existing) return { account: existing, created: false };
    const { account } = await this.create('default', key);
    return { account, created: true };
  }

  async createKey(accountId: string): Promise<{ key: string; info: ApiKeyInfo }> {
    const key = newApiKey();
    const row = this.keyRow(accountId, key, this.clock.now().toISOString());
    await this.db.insertInto('api_keys').values(row).execute();
    return { key, info: { id: row.id, prefix: row.prefix, created_at: row.created_at, revoked_at: null } };
  }

  async listKeys(accountId: string): Promise<ApiKeyInfo[]> {
    return this.db
      .selectFrom('api_keys')
      .select(['id', 'prefix', 'created_at', 'revoked_at'])
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .execute();
  }

  /** Revokes a key of the account; false when the account has no such live key. */
  async revokeKey(accountId: string, keyId: string): Promise<boolean> {
    const result = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    this.verified.clear();
    return Number(result.numUpdatedRows) > 0;
  }

  async webhookSecret(accountId: string): Promise<string> {
    const row = await this.db
      .selectFrom('accounts')
      .select('webhook_secret_enc')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    return this.box.open(row.webhook_secret_enc, `webhook:${accountId}`);
  }

  async rotateWebhookSecret(accountId: string): Promise<string> {
    const secret = newWebhookSecret();
    await this.db
      .updateTable('accounts')
      .set({ webhook_secret_enc: this.box.seal(secret, `webhook:${accountId}`) })
      .where('id', '=', accountId)
      .execute();
    return secret;
  }
}
