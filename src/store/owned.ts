import type { Kysely, Selectable } from 'kysely';
import type { Database } from './types.js';

/** The tables whose rows belong to an account: each has an id, its account and when it was created. */
export type OwnedTable = {
  [T in keyof Database]: Database[T] extends { id: string; account_id: string; created_at: string } ? T : never;
}[keyof Database];

/** What the queries below read of any owned table. */
type Owned = Record<OwnedTable, { id: string; account_id: string; created_at: string }>;

/**
 * One account's rows of an owned table: `get` one by id (undefined when it is another account's
 * or none), `list` the newest first (ties by id), at most `limit`.
 */
export interface OwnedRows<T extends OwnedTable> {
  get(accountId: string, id: string): Promise<Selectable<Database[T]> | undefined>;
  list(accountId: string, limit: number): Promise<Selectable<Database[T]>[]>;
}

export function ownedRows<T extends OwnedTable>(db: Kysely<Database>, table: T): OwnedRows<T> {
  // The queries use only the columns every owned table has; Kysely cannot see that through T.
  const owned = db as unknown as Kysely<Owned>;
  return {
    get: (accountId: string, id: string) =>
      owned
        .selectFrom(table as OwnedTable)
        .selectAll()
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst() as Promise<Selectable<Database[T]> | undefined>,
    list: (accountId: string, limit: number) =>
      owned
        .selectFrom(table as OwnedTable)
        .selectAll()
        .where('account_id', '=', accountId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute() as Promise<Selectable<Database[T]>[]>,
  };
}
