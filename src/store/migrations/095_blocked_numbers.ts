import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Numbers an account never calls and whose calls it never answers. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('blocked_numbers')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('blocked_numbers_pk', ['account_id', 'phone_number'])
    .execute();
}
