import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** An account's own limit of calls at once (null: the server's OPENLINE_MAX_CONCURRENT_CALLS). */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('max_concurrent_calls', 'integer').execute();
}
