import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The campaign dialer's state: the call placed for a number's current attempt (written in the
 * same transaction that claims the number, so a crash never leaves a call without its number or
 * the reverse), and each campaign's pacing slot (shared by every process dialing it).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('campaign_numbers').addColumn('call_id', 'text').execute();
  await db.schema.alterTable('campaigns').addColumn('next_dial_at', 'text').execute();
  await db.schema
    .createIndex('campaign_numbers_due')
    .on('campaign_numbers')
    .columns(['campaign_id', 'state', 'next_at'])
    .execute();
}
