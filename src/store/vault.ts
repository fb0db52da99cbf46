import type { Kysely, Selectable } from 'kysely';
import type { AccountSecretsTable, Database } from './types.js';
import type { Clock } from '../clock.js';
import { newId, type SecretBox } from '../security/secrets.js';

/** How a refreshed secret is fetched: a request, and where its answer holds the value. */
export interface RefreshConfig {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string | null;
  /** Minutes a fetched value is used before it is fetched again. */
  refresh_interval: number;
  /** Where the value is in the JSON answer: `token`, `data.access_token` or `$.data.access_token`. */
  response: string;
}

/** A secret as its owner sees it: never its value. */
export interface SecretInfo {
  id: string;
  name: string;
  static: boolean;
  config: RefreshConfig | null;
  created_at: string;
  updated_at: string;
}

/** A secret with what it holds, opened: only for the requests that use it. */
export type OpenedSecret = SecretInfo & { value: string | null };

/**
 * The secrets of each account, sealed with the server's master key (the account and the secret's
 * id are the associated data, so a sealed value cannot be moved to another row). Names are unique
 * within an account.
 */
export class VaultStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly box: SecretBox,
  ) {}

  private open(row: Selectable<AccountSecretsTable>): OpenedSecret {
    const plain = this.box.open(row.sealed, `${row.account_id}:${row.id}`);
    const isStatic = Number(row.static) === 1;
    return {
      id: row.id,
      name: row.name,
      static: isStatic,
      config: isStatic ? null : (JSON.parse(plain) as RefreshConfig),
      value: isStatic ? plain : null,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private sealedOf(accountId: string, id: string, content: { value: string } | { config: RefreshConfig }): string {
    return this.box.seal('value' in content ? content.value : JSON.stringify(content.config), `${accountId}:${id}`);
  }

  /** Undefined when the account already has a secret of that name. */
  async create(
    accountId: string,
    name: string,
    content: { value: string } | { config: RefreshConfig },
  ): Promise<SecretInfo | undefined> {
    const now = this.clock.now().toISOString();
    const id = newId();
    // The name's unique key decides between two clients creating it at once, not a read before.
    const inserted = await this.db
      .insertInto('account_secrets')
      .values({
        id,
        account_id: accountId,
        name,
        static: 'value' in content ? 1 : 0,
        sealed: this.sealedOf(accountId, id, content),
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(['account_id', 'name']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return undefined;
    return this.info(accountId, id);
  }

  async list(accountId: string): Promise<SecretInfo[]> {
    const rows = await this.db
      .selectFrom('account_secrets')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('name')
      .execute();
    return rows.map((row) => withoutValue(this.open(row)));
  }

  /** The id of the account's secret named by its id or its name (clients name it either way). */
  async idOf(accountId: string, idOrName: string): Promise<string | undefined> {
    const rows = await this.db
      .selectFrom('account_secrets')
      .select(['id'])
      .where('account_id', '=', accountId)
      .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
      .execute();
    return (rows.find((row) => row.id === idOrName) ?? rows[0])?.id;
  }

  async info(accountId: string, id: string): Promise<SecretInfo | undefined> {
    const row = await this.db
      .selectFrom('account_secrets')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? withoutValue(this.open(row)) : undefined;
  }

  private async byName(accountId: string, name: string): Promise<Selectable<AccountSecretsTable> | undefined> {
    return this.db
      .selectFrom('account_secrets')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('name', '=', name)
      .executeTakeFirst();
  }

  /** The account's secrets among `names`, opened. */
  async openByNames(accountId: string, names: readonly string[]): Promise<OpenedSecret[]> {
    if (names.length === 0) return [];
    const rows = await this.db
      .selectFrom('account_secrets')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('name', 'in', [...names])
      .execute();
    return rows.map((row) => this.open(row));
  }

  /**
   * Renames the secret and, when given, replaces what it holds. 'taken': another secret has the
   * name; undefined: no such secret.
   */
  async update(
    accountId: string,
    id: string,
    change: { name?: string; content?: { value: string } | { config: RefreshConfig } },
  ): Promise<SecretInfo | 'taken' | undefined> {
    if (!(await this.info(accountId, id))) return undefined;
    if (change.name !== undefined) {
      const holder = await this.byName(accountId, change.name);
      if (holder && holder.id !== id) return 'taken';
    }
    await this.db
      .updateTable('account_secrets')
      .set({
        ...(change.name !== undefined && { name: change.name }),
        ...(change.content && {
          static: 'value' in change.content ? 1 : 0,
          sealed: this.sealedOf(accountId, id, change.content),
        }),
        updated_at: this.clock.now().toISOString(),
      })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();
    return this.info(accountId, id);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('account_secrets')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

function withoutValue({ value: _value, ...info }: OpenedSecret): SecretInfo {
  return info;
}
