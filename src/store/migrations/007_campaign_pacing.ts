import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Indexes for the campaign dialer's paced dispatch, which runs at every pacing slot: the calls a
 * campaign started in the last minute (its rolling calls_per_minute cap), and its next pending
 * numbers in upload order (without this, every dispatch sorts or scans all of a large campaign's numbers).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.createIndex('calls_campaign_created').on('calls').columns(['campaign_id', 'created_at']).execute();
  await db.schema
    .createIndex('campaign_numbers_pending')
    .on('campaign_numbers')
    .columns(['campaign_id', 'state', 'position'])
    .execute();
}
