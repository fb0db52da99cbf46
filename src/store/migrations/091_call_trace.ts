import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The OpenTelemetry trace of the call (src/observability/tracing.ts), when tracing is on. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('calls').addColumn('trace_id', 'text').execute();
}
