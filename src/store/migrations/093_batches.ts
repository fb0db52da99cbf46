import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Batches (the hosted API's /v1/batches and /v2/batches): a set of calls sent together. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('label', 'text')
    .addColumn('call_count', 'integer', (c) => c.notNull())
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('stopped_at', 'text')
    .execute();
  await db.schema.createIndex('batches_account').on('batches').columns(['account_id', 'created_at']).execute();
}
