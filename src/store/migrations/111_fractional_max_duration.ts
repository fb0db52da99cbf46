import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * max_duration is minutes with fractions (2.5): PostgreSQL's integer column refused them. SQLite
 * keeps a fraction in an integer column as it is, so only PostgreSQL changes.
 */
export async function up(db: AnyDb, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await db.schema
    .alterTable('calls')
    .alterColumn('max_duration', (c) => c.setDataType('double precision'))
    .execute();
}
