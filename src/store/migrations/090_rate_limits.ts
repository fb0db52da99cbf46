import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Request rate limits (src/api/rate-limit.ts): per account, a limit of its own (null: the
 * server's OPENLINE_RATE_LIMIT_PER_MINUTE); and the current window's count per API key, shared
 * by every process of a PostgreSQL database.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('rate_limit_per_minute', 'integer').execute();
  await db.schema
    .createTable('rate_limit_windows')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .execute();
}
