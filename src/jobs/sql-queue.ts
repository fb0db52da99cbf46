import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database, JobsTable } from '../store/types.js';
import type { Clock } from '../clock.js';
import type { Dialect } from '../store/db.js';
import { JOB_IDS, JOB_POLICY, type JobName, type JobPayloads } from './catalog.js';
import type { EnqueueOptions, JobHandler, JobHandlers, JobQueue, JobState, QueuedJob, WorkOptions } from './queue.js';
import { errorMessage } from '../domain/records.js';

export interface SqlQueueLogger {
  error(object: object, message: string): void;
}

/** How long a claimed job stays ours without a heartbeat (clock ms). */
const LEASE_MS = 60_000;

/**
 * The embedded durable queue: a `jobs` table in the service's own database. Jobs survive restarts;
 * a job whose worker died is taken up again when its lease runs out (at once on SQLite, where one
 * process owns the database).
 */
export class SqlJobQueue implements JobQueue {
  private readonly workerId = randomUUID();
  private running = new Map<string, Promise<void>>();
  private pollTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly dialect: Dialect,
    private readonly log?: SqlQueueLogger,
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
    this.poke();
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

  async pending(): Promise<Partial<Record<JobName, number>>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['name', (eb) => eb.fn.countAll<number | string>().as('count')])
      .where('state', '=', 'pending')
      .groupBy('name')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.name, Number(r.count)]));
  }

  private handlers: JobHandlers | undefined;
  private concurrency = 50;
  private pollMs = 200;
  private polling = false;

  work(handlers: JobHandlers, options: WorkOptions = {}): void {
    this.handlers = handlers;
    this.concurrency = options.concurrency ?? 50;
    this.pollMs = options.pollMs ?? 200;
    this.stopped = false;
    void this.recover().then(() => this.schedulePoll(0));
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), Math.max(1000, LEASE_MS / 3 / this.clock.scale));
    this.heartbeatTimer.unref();
  }

  /** Jobs left running by a process that died. On SQLite that process can only have been us. */
  private async recover(): Promise<void> {
    const now = this.clock.now().toISOString();
    let query = this.db
      .updateTable('jobs')
      .set({ state: 'pending', locked_by: null, locked_until: null, updated_at: now })
      .where('state', '=', 'running');
    if (this.dialect === 'postgres') query = query.where('locked_until', '<', now);
    await query.execute();
  }

  private schedulePoll(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => void this.poll(), delayMs);
    this.pollTimer.unref();
  }

  /** A job was just added: look for work now rather than at the next poll. */
  private poke(): void {
    if (this.handlers && !this.stopped && !this.polling) this.schedulePoll(0);
  }

  private async poll(): Promise<void> {
    if (this.stopped || this.polling) return;
    this.polling = true;
    try {
      if (this.dialect === 'postgres') await this.recover();
      const free = this.concurrency - this.running.size;
      if (free > 0) {
        for (const job of await this.claim(free)) this.start(job);
      }
    } catch (error) {
      this.log?.error({ err: error }, 'job queue poll failed');
    } finally {
      this.polling = false;
      this.schedulePoll(this.pollMs);
    }
  }

  private async claim(limit: number): Promise<Selectable<JobsTable>[]> {
    const now = this.clock.now();
    const due = this.db
      .selectFrom('jobs')
      .select('id')
      .where('state', '=', 'pending')
      .where('run_at', '<=', now.toISOString())
      .orderBy('run_at')
      .limit(limit);
    return this.db
      .updateTable('jobs')
      .set((eb) => ({
        state: 'running',
        locked_by: this.workerId,
        locked_until: new Date(now.getTime() + LEASE_MS).toISOString(),
        attempts: eb('attempts', '+', 1),
        updated_at: now.toISOString(),
      }))
      .where('id', 'in', this.dialect === 'postgres' ? due.forUpdate().skipLocked() : due)
      .where('state', '=', 'pending')
      .returningAll()
      .execute();
  }

  private start(row: Selectable<JobsTable>): void {
    const name = row.name as JobName;
    // One job's handler, typed for any payload: the name was read from storage with its payload.
    const handler = this.handlers?.[name] as JobHandler<JobName> | undefined;
    let settled: Promise<void> | undefined;
    const settle = (): Promise<void> => (settled ??= this.finish(row.id, { state: 'done', last_error: null }));
    const run = (async () => {
      try {
        if (!handler) throw new Error(`no handler for job ${name}`);
        await handler(JSON.parse(row.payload) as JobPayloads[typeof name], {
          id: row.id,
          attempt: row.attempts,
          settle,
        });
        await settle();
      } catch (error) {
        const message = errorMessage(error);
        this.log?.error({ err: error, job_id: row.id, attempt: row.attempts }, 'job failed');
        // A settled job is done whatever its handler did after: what it handed over guards itself.
        if (settled) return;
        if (row.attempts >= row.max_attempts) {
          await this.finish(row.id, { state: 'dead', last_error: message });
        } else {
          const runAt = new Date(this.clock.now().getTime() + JOB_POLICY[name].backoffMs(row.attempts));
          await this.finish(row.id, { state: 'pending', last_error: message, run_at: runAt.toISOString() });
        }
      }
    })().finally(() => {
      this.running.delete(row.id);
      this.poke();
    });
    this.running.set(row.id, run);
  }

  private async finish(
    id: string,
    changes: { state: JobState; last_error: string | null; run_at?: string },
  ): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set({ ...changes, locked_by: null, locked_until: null, updated_at: this.clock.now().toISOString() })
      .where('id', '=', id)
      .where('locked_by', '=', this.workerId)
      .execute()
      .catch((error: unknown) => this.log?.error({ err: error, job_id: id }, 'job state update failed'));
  }

  /** Extends the lease of every job this process is running, so that long calls keep theirs. */
  private async heartbeat(): Promise<void> {
    if (this.running.size === 0) return;
    const now = this.clock.now();
    await this.db
      .updateTable('jobs')
      .set({ locked_until: new Date(now.getTime() + LEASE_MS).toISOString() })
      .where('locked_by', '=', this.workerId)
      .where('state', '=', 'running')
      .execute()
      .catch((error: unknown) => this.log?.error({ err: error }, 'job heartbeat failed'));
  }

  /** Stops polling and waits for the jobs under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.pollTimer);
    clearInterval(this.heartbeatTimer);
    await Promise.allSettled([...this.running.values()]);
  }
}
