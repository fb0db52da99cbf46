import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Secrets accounts keep for their tools and webhooks (`{{secrets.NAME}}`): a value, or how to
 * fetch one, always sealed with the server's master key.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('account_secrets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('static', 'integer', (c) => c.notNull())
    .addColumn('sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('account_secrets_name', ['account_id', 'name'])
    .execute();
}
