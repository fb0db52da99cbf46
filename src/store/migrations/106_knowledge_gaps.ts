import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Questions callers asked that a call's knowledge bases had nothing on, until someone answers them. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('knowledge_gaps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text', (c) => c.notNull())
    .addColumn('persona_id', 'text')
    .addColumn('knowledge_base_ids', 'text', (c) => c.notNull())
    .addColumn('question', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('answer', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('resolved_at', 'text')
    .execute();
  await db.schema
    .createIndex('knowledge_gaps_account')
    .on('knowledge_gaps')
    .columns(['account_id', 'status', 'created_at'])
    .execute();
}
