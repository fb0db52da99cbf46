import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Inbound SMS (src/sms/inbound.ts): every message a carrier brought to one of an account's
 * numbers, with the webhook it was sent to (null when the number had none). A carrier's own
 * message id is unique per carrier, so a carrier that repeats its webhook stores the message once.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('sms_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('to_number', 'text', (c) => c.notNull())
    .addColumn('from_number', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('carrier', 'text', (c) => c.notNull())
    .addColumn('carrier_message_id', 'text')
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('webhook', 'text')
    .execute();
  await db.schema
    .createIndex('sms_messages_carrier_id')
    .on('sms_messages')
    .columns(['carrier', 'carrier_message_id'])
    .unique()
    .execute();
  await db.schema
    .createIndex('sms_messages_account')
    .on('sms_messages')
    .columns(['account_id', 'to_number', 'received_at'])
    .execute();
}
