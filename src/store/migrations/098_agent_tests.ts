import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Agent tests through the API: scenarios, their runs, and batches of runs. */
export async function up(db: AnyDb, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('agent_test_scenarios')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('spec', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('agent_test_scenarios_account')
    .on('agent_test_scenarios')
    .columns(['account_id', 'created_at'])
    .execute();
  await db.schema
    .createTable('agent_test_batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('webhook_url', 'text')
    .addColumn('webhook_status', 'text')
    .addColumn('settings', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('agent_test_batches_account')
    .on('agent_test_batches')
    .columns(['account_id', 'created_at'])
    .execute();
  await db.schema
    .createTable('agent_test_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('scenario_id', 'text', (c) => c.notNull())
    .addColumn('batch_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('caller_number', 'text', (c) => c.notNull())
    .addColumn('caller_lines', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text')
    .addColumn('score', dialect === 'postgres' ? 'double precision' : 'real')
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('webhook_status', 'text')
    .execute();
  await db.schema
    .createIndex('agent_test_runs_account')
    .on('agent_test_runs')
    .columns(['account_id', 'created_at'])
    .execute();
  // A number answers for one running run at a time.
  await db.schema
    .createIndex('agent_test_runs_caller')
    .on('agent_test_runs')
    .column('caller_number')
    .unique()
    .where(sql.ref('status'), '=', 'RUNNING')
    .execute();
  await db.schema.createIndex('agent_test_runs_batch').on('agent_test_runs').columns(['batch_id']).execute();
}
