import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * - call_events: every event of a call (queue, call, tool, dynamic_data, latency), kept with the
 *   call so its event list can be read after it ended, by any process.
 * - pathway_versions.published_at: when a version was first published to production, so a version
 *   list can tell the versions that have been live from the drafts.
 */
export async function up(db: AnyDb, dialect: Dialect): Promise<void> {
  const serial = dialect === 'postgres' ? 'serial' : 'integer';
  await db.schema
    .createTable('call_events')
    .addColumn('id', serial, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('call_id', 'text', (c) => c.notNull().references('calls.id').onDelete('cascade'))
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('log_level', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('call_events_call').on('call_events').columns(['call_id', 'id']).execute();
  await db.schema.alterTable('pathway_versions').addColumn('published_at', 'text').execute();
}
