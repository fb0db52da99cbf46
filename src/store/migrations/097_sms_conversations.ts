import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** AI conversations over SMS: a number's SMS agent settings, its conversations, their messages. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('sms_configs')
    .addColumn('phone_number', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sms_conversations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('agent_number', 'text', (c) => c.notNull())
    .addColumn('user_number', 'text', (c) => c.notNull())
    .addColumn('is_active', 'integer', (c) => c.notNull())
    .addColumn('request_data', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('sms_conversations_by_pair')
    .on('sms_conversations')
    .columns(['agent_number', 'user_number', 'is_active'])
    .execute();
  await db.schema.alterTable('sms_messages').addColumn('conversation_id', 'text').execute();
}
