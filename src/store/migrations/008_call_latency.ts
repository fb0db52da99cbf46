import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Every answered turn's latency on audio calls (JSON of src/media/latency.ts LatencyReport). */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('calls').addColumn('latency', 'text').execute();
}
