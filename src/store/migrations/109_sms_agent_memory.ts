import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * What an SMS conversation's agent did besides texting (its custom tools' runs, by the text they
 * answered) and the variables those runs set, so the next text's agent knows them, as on a call.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('sms_agent_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('conversation_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('sms_agent_actions_conversation')
    .on('sms_agent_actions')
    .columns(['conversation_id', 'created_at'])
    .execute();
  await db.schema.alterTable('sms_conversations').addColumn('variables', 'text').execute();
}
