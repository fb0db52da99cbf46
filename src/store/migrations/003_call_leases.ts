import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Until when the process running a live call vouches for it; past that, the call is orphaned. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('calls').addColumn('lease_until', 'text').execute();
}
