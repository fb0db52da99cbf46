import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** A stop request for a live call that may be running in another process. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('calls').addColumn('stop_requested_at', 'text').execute();
}
