import { randomInt, randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import type { AgentTestBatchesTable, AgentTestRunsTable, AgentTestScenariosTable, Database } from './types.js';
import { ownedRows, type OwnedRows } from './owned.js';

export type ScenarioRow = Selectable<AgentTestScenariosTable>;
export type TestRunRow = Selectable<AgentTestRunsTable>;
export type TestBatchRow = Selectable<AgentTestBatchesTable>;

export const RUN_STATUSES = ['RUNNING', 'PASSED', 'FAILED', 'ERROR'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * The sandbox numbers scripted callers of runs answer: +1 415 555-6000 to 555-9999, outside the
 * personas' 555-01XX, the numbers sold at 555-0200..0999 and the sandbox's own 555-1200..1209.
 */
const CALLER_FIRST = 6000;
const CALLER_COUNT = 4000;

export interface RunFilter {
  scenario_id?: string | undefined;
  batch_id?: string | undefined;
  status?: string | undefined;
  pathway_id?: string | undefined;
  limit: number;
  offset: number;
}

/** Agent test scenarios, their runs and batches, per account. */
export class AgentTestStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {
    this.scenarioRows = ownedRows(db, 'agent_test_scenarios');
  }

  private readonly scenarioRows: OwnedRows<'agent_test_scenarios'>;

  async createScenario(accountId: string, spec: Record<string, unknown>): Promise<ScenarioRow> {
    const now = this.clock.now().toISOString();
    const row: ScenarioRow = {
      id: randomUUID(),
      account_id: accountId,
      created_at: now,
      updated_at: now,
      spec: JSON.stringify(spec),
    };
    await this.db.insertInto('agent_test_scenarios').values(row).execute();
    return row;
  }

  scenario(accountId: string, id: string): Promise<ScenarioRow | undefined> {
    return this.scenarioRows.get(accountId, id);
  }

  scenarios(accountId: string, limit = 1000): Promise<ScenarioRow[]> {
    return this.scenarioRows.list(accountId, limit);
  }

  async updateScenario(accountId: string, id: string, spec: Record<string, unknown>): Promise<ScenarioRow | undefined> {
    await this.db
      .updateTable('agent_test_scenarios')
      .set({ spec: JSON.stringify(spec), updated_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();
    return this.scenario(accountId, id);
  }

  async deleteScenario(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('agent_test_scenarios')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** The RUNNING run whose scripted caller answers `number` (the sandbox asks when it is dialed). */
  runningOn(number: string): Promise<TestRunRow | undefined> {
    return this.db
      .selectFrom('agent_test_runs')
      .selectAll()
      .where('caller_number', '=', number)
      .where('status', '=', 'RUNNING')
      .executeTakeFirst();
  }

  async createRun(
    accountId: string,
    run: { scenario_id: string; batch_id: string | null; caller_lines: unknown[]; settings: Record<string, unknown> },
  ): Promise<TestRunRow> {
    const row: TestRunRow = {
      id: randomUUID(),
      account_id: accountId,
      scenario_id: run.scenario_id,
      batch_id: run.batch_id,
      created_at: this.clock.now().toISOString(),
      completed_at: null,
      status: 'RUNNING',
      caller_number: '',
      caller_lines: JSON.stringify(run.caller_lines),
      call_id: null,
      score: null,
      settings: JSON.stringify(run.settings),
      result: null,
      webhook_status: null,
    };
    // A random number of the range; the unique index on running runs' numbers refuses one in use.
    for (let attempt = 1; ; attempt++) {
      row.caller_number = `+1415555${CALLER_FIRST + randomInt(CALLER_COUNT)}`;
      try {
        await this.db.insertInto('agent_test_runs').values(row).execute();
        return row;
      } catch (error) {
        if (attempt >= 50 || !/unique|duplicate/i.test((error as Error).message)) throw error;
      }
    }
  }

  async setCall(id: string, callId: string): Promise<void> {
    await this.db.updateTable('agent_test_runs').set({ call_id: callId }).where('id', '=', id).execute();
  }

  /** Writes a run's outcome once: false when it was no longer RUNNING (another worker finished it). */
  async finish(id: string, outcome: { status: RunStatus; score: number | null; result: object }): Promise<boolean> {
    const updated = await this.db
      .updateTable('agent_test_runs')
      .set({
        status: outcome.status,
        score: outcome.score,
        result: JSON.stringify(outcome.result),
        completed_at: this.clock.now().toISOString(),
      })
      .where('id', '=', id)
      .where('status', '=', 'RUNNING')
      .executeTakeFirst();
    return Number(updated.numUpdatedRows) > 0;
  }

  async setRunWebhookStatus(id: string, status: string): Promise<void> {
    await this.db.updateTable('agent_test_runs').set({ webhook_status: status }).where('id', '=', id).execute();
  }

  runById(id: string): Promise<TestRunRow | undefined> {
    return this.db.selectFrom('agent_test_runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  run(accountId: string, id: string): Promise<TestRunRow | undefined> {
    return this.db
      .selectFrom('agent_test_runs')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  private filtered(accountId: string, filter: Omit<RunFilter, 'limit' | 'offset'>) {
    let query = this.db.selectFrom('agent_test_runs').where('account_id', '=', accountId);
    if (filter.scenario_id) query = query.where('scenario_id', '=', filter.scenario_id);
    if (filter.batch_id) query = query.where('batch_id', '=', filter.batch_id);
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.pathway_id)
      query = query.where('settings', 'like', `%"pathway_id":${JSON.stringify(filter.pathway_id)}%`);
    return query;
  }

  /** Runs newest first, and how many match in all. */
  async runs(accountId: string, filter: RunFilter): Promise<{ rows: TestRunRow[]; total: number }> {
    const rows = await this.filtered(accountId, filter)
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(filter.limit)
      .offset(filter.offset)
      .execute();
    const count = await this.filtered(accountId, filter)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return { rows, total: Number(count?.n ?? 0) };
  }

  /** The latest run of each scenario (scenario lists show it). */
  async latestRuns(accountId: string, scenarioIds: string[]): Promise<Map<string, TestRunRow>> {
    const latest = new Map<string, TestRunRow>();
    if (scenarioIds.length === 0) return latest;
    const rows = await this.db
      .selectFrom('agent_test_runs')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('scenario_id', 'in', scenarioIds)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    for (const row of rows) latest.set(row.scenario_id, row);
    return latest;
  }

  async createBatch(
    accountId: string,
    batch: { webhook_url: string | null; settings: Record<string, unknown> },
  ): Promise<TestBatchRow> {
    const row: TestBatchRow = {
      id: randomUUID(),
      account_id: accountId,
      created_at: this.clock.now().toISOString(),
      webhook_url: batch.webhook_url,
      webhook_status: null,
      settings: JSON.stringify(batch.settings),
    };
    await this.db.insertInto('agent_test_batches').values(row).execute();
    return row;
  }

  batch(accountId: string, id: string): Promise<TestBatchRow | undefined> {
    return this.db
      .selectFrom('agent_test_batches')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  batches(accountId: string, limit = 200): Promise<TestBatchRow[]> {
    return this.db
      .selectFrom('agent_test_batches')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }

  batchRuns(accountId: string, batchId: string): Promise<TestRunRow[]> {
    return this.db
      .selectFrom('agent_test_runs')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('batch_id', '=', batchId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
  }

  /** Claims the sending of a finished batch's webhook: true for the one caller that may send it. */
  async claimBatchWebhook(id: string): Promise<boolean> {
    const updated = await this.db
      .updateTable('agent_test_batches')
      .set({ webhook_status: 'sending' })
      .where('id', '=', id)
      .where('webhook_status', 'is', null)
      .executeTakeFirst();
    return Number(updated.numUpdatedRows) > 0;
  }

  async setBatchWebhookStatus(id: string, status: string): Promise<void> {
    await this.db.updateTable('agent_test_batches').set({ webhook_status: status }).where('id', '=', id).execute();
  }
}
