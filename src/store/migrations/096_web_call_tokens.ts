import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Single-use tokens of POST /v1/agents/{id}/authorize: one web call each, kept by their hash. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('web_call_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('request_data', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
