import { sql, type Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Every text a knowledge base has had: version 1 when it was made, one more with each change of
 * its text or pages. Each existing knowledge base starts with its text as version 1.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('knowledge_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kb_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('version_number', 'integer', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('source_urls', 'text')
    .addColumn('change', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('knowledge_versions_kb')
    .on('knowledge_versions')
    .columns(['kb_id', 'version_number'])
    .unique()
    .execute();
  await sql`insert into knowledge_versions (id, kb_id, account_id, version_number, text, source_urls, change, created_at)
    select 'KBV-' || id, id, account_id, 1, text, source_urls, 'created', created_at from knowledge_bases`.execute(db);
}
