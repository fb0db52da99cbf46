import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Folders an account files its pathways in (nested), and the folder each pathway is in (null: the top). */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('pathway_folders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('parent_folder_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('pathway_folders_account').on('pathway_folders').columns(['account_id']).execute();
  await db.schema.alterTable('pathways').addColumn('folder_id', 'text').execute();
}
