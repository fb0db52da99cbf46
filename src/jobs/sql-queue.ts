import type { Kysely } from 'kysely';
import type { Database } from '../store/types.js';
import type { Clock } from '../clock.js';
import { JOB_IDS, JOB_POLICY, type JobName, type JobPayloads } from './catalog.js';
import type { EnqueueOptions, JobQueue, JobState, QueuedJob } from './queue.js';

/** The embedded durable queue: a `jobs` table in the service's own database. */
export class SqlJobQueue implements JobQueue {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options: EnqueueOptions = {}): Promise<string> {
    const id = JOB_IDS[name](payload);
    const now = this.clock.now().toISOString();
    await this.db
      .insertInto('jobs')
      .values({
        id,
        name,
        payload: JSON.stringify(payload),
        state: 'pending',
        run_at: (options.runAt ?? this.clock.now()).toISOString(),
        attempts: 0,
        max_attempts: JOB_POLICY[name].maxAttempts,
        last_error: null,
        locked_by: null,
        locked_until: null,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return id;
  }

  async cancel(id: string): Promise<boolean> {
    const result = await this.db
      .updateTable('jobs')
      .set({ state: 'canceled', updated_at: this.clock.now().toISOString() })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async get(id: string): Promise<QueuedJob | undefined> {
    const row = await this.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    return {
      id: row.id,
      name: row.name as JobName,
      payload: JSON.parse(row.payload) as JobPayloads[JobName],
      state: row.state as JobState,
      run_at: row.run_at,
      attempts: row.attempts,
      last_error: row.last_error,
    };
  }

  async ping(): Promise<void> {
    await this.db.selectFrom('jobs').select('id').limit(1).execute();
  }

  async stop(): Promise<void> {}
}
