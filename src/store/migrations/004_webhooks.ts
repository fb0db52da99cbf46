import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * End-of-call webhooks (CONTRACT.md section 8): one message per call (its body stored once, its
 * Standard Webhooks id stable across retries) and one delivery row per attempt.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('webhook_messages')
    .addColumn('call_id', 'text', (c) => c.primaryKey())
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .execute();
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('call_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('sent_at', 'text', (c) => c.notNull())
    .addColumn('response_code', 'integer')
    .addColumn('response_time_ms', 'integer')
    .addColumn('error', 'text')
    .addColumn('send_type', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_call')
    .on('webhook_deliveries')
    .columns(['call_id', 'sent_at'])
    .execute();
}
