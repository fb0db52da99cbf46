import type { Clock } from '../clock.js';
import type { OutboundClient } from '../outbound/http.js';
import type { OpenedSecret, VaultStore } from '../store/vault.js';
import { secretNames } from '../domain/template.js';
import { jsonPath } from '../agent/tools.js';

type Json = Record<string, unknown>;

/**
 * `variables` with the account's secrets a request template refers to (`{{secrets.NAME}}`), for
 * that one request (SecretResolver.scope); where none is given such references render empty.
 */
export type SecretScope = (accountId: string, template: unknown, variables: Json) => Promise<Json>;

/** How long a refreshed secret's request may take. */
const FETCH_TIMEOUT_MS = 10_000;

/**
 * The values of an account's secrets for the requests that use them (custom tools, dynamic_data,
 * pathway webhooks): a static secret's value as stored, a refreshed one's fetched through the
 * guarded client and kept for its refresh interval. Values live only in the scope of the one
 * request being rendered: never in call variables, records or logs.
 */
export class SecretResolver {
  /** Fetched values by secret id, with when they are due again (clock ms) and for which config. */
  private readonly fetched = new Map<string, { value: string; until: number; updated: string }>();

  constructor(
    private readonly store: Pick<VaultStore, 'openByNames'>,
    private readonly http: OutboundClient,
    private readonly clock: Clock,
  ) {}

  /**
   * `variables` with `secrets` holding the values the template refers to as `{{secrets.NAME}}`
   * (those the account has and that could be had); `variables` itself when it refers to none.
   */
  async scope(accountId: string, template: unknown, variables: Json): Promise<Json> {
    const names = secretNames(template);
    if (names.length === 0) return variables;
    const secrets: Record<string, string> = {};
    for (const secret of await this.store.openByNames(accountId, names)) {
      const value = secret.static ? secret.value : await this.refreshed(secret);
      if (value !== null && value !== undefined) secrets[secret.name] = value;
    }
    return { ...variables, secrets };
  }

  /** A refreshed secret's value: the one fetched within its interval, else fetched now (undefined on failure). */
  private async refreshed(secret: OpenedSecret): Promise<string | undefined> {
    const config = secret.config;
    if (!config) return undefined;
    const now = this.clock.now().getTime();
    const kept = this.fetched.get(secret.id);
    if (kept && kept.until > now && kept.updated === secret.updated_at) return kept.value;
    try {
      const response = await this.http.request({
        method: config.method,
        url: config.url,
        headers: config.headers,
        ...(config.method === 'POST' && config.body !== null && { body: config.body }),
        timeoutMs: FETCH_TIMEOUT_MS,
      });
      if (response.status < 200 || response.status >= 300) return kept?.value;
      const found = jsonPath(JSON.parse(response.body) as unknown, config.response);
      if (found === undefined || found === null || typeof found === 'object') return kept?.value;
      const value = String(found);
      this.fetched.set(secret.id, { value, until: now + config.refresh_interval * 60_000, updated: secret.updated_at });
      return value;
    } catch {
      // The last value fetched, while the source is down; else the reference renders empty.
      return kept?.value;
    }
  }
}
