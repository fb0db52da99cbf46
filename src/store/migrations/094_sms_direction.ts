import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Messages the account sent (POST /v1/sms/send) are kept beside the ones it received. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('sms_messages')
    .addColumn('direction', 'text', (c) => c.notNull().defaultTo('inbound'))
    .execute();
}
