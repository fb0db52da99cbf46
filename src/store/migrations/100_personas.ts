import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Personas: an agent's identity, and its behaviour in versions (a draft, the one in production, older ones). */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('personas')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('role', 'text')
    .addColumn('description', 'text')
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('image_url', 'text')
    .addColumn('production_version_id', 'text', (c) => c.notNull())
    .addColumn('draft_version_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('personas_account').on('personas').columns(['account_id', 'created_at']).execute();
  await db.schema
    .createTable('persona_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('persona_id', 'text', (c) => c.notNull())
    .addColumn('version_type', 'text', (c) => c.notNull())
    .addColumn('version_number', 'integer', (c) => c.notNull())
    .addColumn('behaviour', 'text', (c) => c.notNull())
    .addColumn('promoted_from_version_id', 'text')
    .addColumn('promoted_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('persona_versions_number', ['persona_id', 'version_number'])
    .execute();
}
