import { createHash } from 'node:crypto';
import PgBoss from 'pg-boss';
import type { Clock } from '../clock.js';
import { JOB_IDS, JOB_POLICY, type JobName, type JobPayloads } from './catalog.js';
import type { EnqueueOptions, JobHandler, JobHandlers, JobQueue, JobState, QueuedJob, WorkOptions } from './queue.js';
import type { SqlQueueLogger } from './sql-queue.js';
import { errorMessage } from '../domain/records.js';

/** The PostgreSQL schema pg-boss keeps its tables in, beside Openline's own tables. */
export const PGBOSS_SCHEMA = 'openline_jobs';

/**
 * How often pg-boss's maintenance (one process at a time) fails jobs past their expiry, so that
 * they are run again. pg-boss 10 has no heartbeat: a job's expiry (JOB_POLICY.expireSeconds) is
 * how long it may stay active unsettled, and a job whose process died is run again within
 * expiry + this interval. A job settles early (JobRun.settle) when its handler runs on for long,
 * as a dial job does for its whole call.
 */
const MAINTENANCE_INTERVAL_SECONDS = 10;

/** pg-boss refuses to poll more often than every 500 ms; our own fetch loop keeps that floor. */
const MIN_POLL_MS = 500;

/** Job names of the catalog: one pg-boss queue each. */
const JOB_NAMES = Object.keys(JOB_POLICY) as JobName[];

/** What we store as a pg-boss job's data: our id and the time asked for travel with the payload. */
interface Envelope<N extends JobName = JobName> {
  key: string;
  payload: JobPayloads[N];
  /** The run time asked at enqueue, in the service clock's time. */
  run_at: string;
}

type BossJob = PgBoss.JobWithMetadata<Envelope>;

const STATES: Record<BossJob['state'], JobState> = {
  created: 'pending',
  retry: 'pending',
  active: 'running',
  completed: 'done',
  cancelled: 'canceled',
  // pg-boss 10 has no `expired` state: a job past its expiry is failed (or retried) like any other.
  failed: 'dead',
};

/** Namespace of Openline job ids in their UUID form (a fixed random UUID). */
const JOB_ID_NAMESPACE = '3f1c9a52-7d4e-4b8a-9c61-2e5f0d8b7a34';

/**
 * A name-based UUID (RFC 4122 version 5: SHA-1 of namespace and name). pg-boss job ids must be
 * UUIDs; deriving them from our catalog ids keeps enqueue idempotent across processes and lets
 * cancel and get find a job by our id.
 */
export function uuidV5(name: string, namespace = JOB_ID_NAMESPACE): string {
  const hash = createHash('sha1')
    .update(Buffer.from(namespace.replaceAll('-', ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The catalog's retry policy in pg-boss's terms. pg-boss retries after
 * retryDelay * 2^(n-1) * (1 + random) seconds for retry n, so the delay is the catalog's first
 * backoff, in whole seconds of real time (at least 1), and the jitter can double it. Under a test
 * clock the delay is divided by the clock's scale but still at least 1 real second.
 */
type Policy = PgBoss.RetryOptions & PgBoss.ExpirationOptions;

function bossPolicy(name: JobName, scale: number, expireSeconds?: number): Policy {
  const policy = JOB_POLICY[name];
  const retryDelay = Math.ceil(policy.backoffMs(1) / scale / 1000);
  return {
    retryLimit: policy.maxAttempts - 1,
    retryDelay,
    retryBackoff: retryDelay > 0 && policy.backoffMs(2) > policy.backoffMs(1),
    expireInSeconds: expireSeconds ?? policy.expireSeconds,
  };
}

/** The message of a failed job's output: ours is `{message}`; pg-boss wraps its own in `{value}`. */
function errorOf(output: unknown): string | null {
  if (typeof output === 'string') return output;
  if (typeof output !== 'object' || output === null) return null;
  if ('message' in output && typeof output.message === 'string') return output.message;
  return 'value' in output ? errorOf(output.value) : null;
}

/** PostgreSQL's code for a transaction chosen as the victim of a deadlock. */
const DEADLOCK = '40P01';

/**
 * Creates a queue unless it exists (an existing one is left as it is: the policy also travels
 * with every job). Processes starting at once on a fresh database can deadlock in pg-boss's
 * create_queue (it creates and attaches a partition): the loser finds the queue made on retry.
 */
async function createQueue(boss: PgBoss, name: JobName, policy: Policy): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (await boss.getQueue(name)) return;
    try {
      return await boss.createQueue(name, { name, ...policy });
    } catch (error) {
      const code = error instanceof Error && 'code' in error ? error.code : undefined;
      if (code !== DEADLOCK || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt * Math.random()));
    }
  }
}

export interface PgBossQueueOptions {
  /** The PostgreSQL database (OPENLINE_DATABASE_URL); pg-boss keeps to its own schema in it. */
  url: string;
  clock: Clock;
  log?: SqlQueueLogger;
  /** Tests: other expiries than the catalog's (seconds), and a shorter maintenance interval. */
  expireSeconds?: Partial<Record<JobName, number>>;
  maintenanceIntervalSeconds?: number;
}

/**
 * The job queue on PostgreSQL with pg-boss, shared by every Openline process on the database: a
 * job runs in one process at a time (pg-boss fetches with SKIP LOCKED) and survives restarts.
 *
 * Workers fetch with our own loop rather than pg-boss's `work()`: its batch handler completes a
 * batch only when its slowest job ends, so one long call would hold every slot of its batch.
 * Here each job frees its slot when it ends, and a freed slot or a local enqueue polls at once.
 *
 * Time: pg-boss decides when a job is due with the database's clock. A run time is sent as a
 * delay from now, converted from the service clock to real time (divided by `clock.scale`), so a
 * scheduled job under a scaled test clock runs after its scaled delay; `get()` reports the run time
 * asked for, in the service clock's time. Retry delays are real seconds (see bossPolicy).
 */
export class PgBossQueue implements JobQueue {
  private readonly running = new Map<string, Promise<void>>();
  private handlers: JobHandlers | undefined;
  private concurrency = 50;
  private pollMs = MIN_POLL_MS;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private pokedWhilePolling = false;
  private stopped = false;
  private readonly policy: { [N in JobName]: Policy };

  private constructor(
    private readonly boss: PgBoss,
    private readonly clock: Clock,
    private readonly log?: SqlQueueLogger,
    expireSeconds: Partial<Record<JobName, number>> = {},
  ) {
    this.policy = Object.fromEntries(
      JOB_NAMES.map((name) => [name, bossPolicy(name, clock.scale, expireSeconds[name])]),
    ) as { [N in JobName]: Policy };
  }

  /** Starts pg-boss (creating or migrating its schema) and the catalog's queues. */
  static async open(options: PgBossQueueOptions): Promise<PgBossQueue> {
    const boss = new PgBoss({
      connectionString: options.url,
      schema: PGBOSS_SCHEMA,
      // Few queries (fetch, complete, enqueue); the stores keep their own pool.
      max: 4,
      // No cron schedules here: skip the timekeeper and its clock-skew polling.
      schedule: false,
      maintenanceIntervalSeconds: options.maintenanceIntervalSeconds ?? MAINTENANCE_INTERVAL_SECONDS,
    });
    // pg-boss emits errors of its maintenance and pool; an unheard 'error' event would crash us.
    boss.on('error', (error) => options.log?.error({ err: error }, 'pg-boss error'));
    await boss.start();
    const queue = new PgBossQueue(boss, options.clock, options.log, options.expireSeconds);
    try {
      for (const name of JOB_NAMES) await createQueue(boss, name, queue.policy[name]);
    } catch (error) {
      // Its pool and maintenance timers would otherwise keep the process alive.
      await boss.stop({ graceful: false });
      throw error;
    }
    return queue;
  }

  async enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options: EnqueueOptions = {}): Promise<string> {
    const id = JOB_IDS[name](payload);
    const now = this.clock.now();
    const runAt = options.runAt ?? now;
    const delaySeconds = (runAt.getTime() - now.getTime()) / this.clock.scale / 1000;
    const data: Envelope<N> = { key: id, payload, run_at: runAt.toISOString() };
    // A job already under this id makes pg-boss insert nothing (ON CONFLICT DO NOTHING) and
    // return null rather than throw: the job is left as it is.
    await this.boss.send(name, data, {
      ...this.policy[name],
      id: uuidV5(id),
      // Seconds as text: pg-boss adds them to the database's now().
      ...(delaySeconds > 0 ? { startAfter: delaySeconds.toFixed(3) } : {}),
    });
    this.poke();
    return id;
  }

  /**
   * pg-boss's cancel() also cancels active jobs, which the port forbids (a call under way is
   * stopped through the engine), so this is the same update limited to jobs not yet started.
   */
  async cancel(id: string): Promise<boolean> {
    const uuid = uuidV5(id);
    for (const name of JOB_NAMES) {
      const result = await this.boss.getDb().executeSql(
        `UPDATE ${PGBOSS_SCHEMA}.job SET state = 'cancelled', completed_on = now()
         WHERE name = $1 AND id = $2 AND state < 'active' RETURNING id`,
        [name, uuid],
      );
      if (result.rows.length > 0) return true;
    }
    return false;
  }

  async get(id: string): Promise<QueuedJob | undefined> {
    const uuid = uuidV5(id);
    for (const name of JOB_NAMES) {
      const live = await this.boss.getJobById<Envelope>(name, uuid);
      const job = live ?? (await this.boss.getJobById<Envelope>(name, uuid, { includeArchive: true }));
      if (job) return this.view(name, job, live === null);
    }
    return undefined;
  }

  private view(name: JobName, job: BossJob, archived: boolean): QueuedJob {
    const retried = job.state === 'retry' || job.retryCount > 0;
    // pg-boss archives a job that waited past its retention without running: it never will.
    const lapsed = archived && (job.state === 'created' || job.state === 'retry');
    return {
      id: job.data.key,
      name,
      payload: job.data.payload,
      state: lapsed ? 'dead' : STATES[job.state],
      // After a failure pg-boss chose the next run time, in real (database) time.
      run_at: retried ? this.clockTime(job.startAfter).toISOString() : job.data.run_at,
      // retryCount counts the starts after the first one.
      attempts: job.startedOn ? job.retryCount + 1 : 0,
      last_error: lapsed ? 'not run within the retention period' : errorOf(job.output),
    };
  }

  /** A real time as the service clock reads it (the same time when the clock is not scaled). */
  private clockTime(real: Date): Date {
    if (this.clock.scale === 1) return real;
    return new Date(this.clock.now().getTime() + (real.getTime() - Date.now()) * this.clock.scale);
  }

  async ping(): Promise<void> {
    await this.boss.getQueue(JOB_NAMES[0]!);
  }

  async pending(): Promise<Partial<Record<JobName, number>>> {
    // getQueueSize counts the jobs not yet active: created and retry.
    const sizes = await Promise.all(JOB_NAMES.map(async (name) => [name, await this.boss.getQueueSize(name)] as const));
    return Object.fromEntries(sizes);
  }

  work(handlers: JobHandlers, options: WorkOptions = {}): void {
    this.handlers = handlers;
    this.concurrency = options.concurrency ?? 50;
    this.pollMs = Math.max(MIN_POLL_MS, options.pollMs ?? MIN_POLL_MS);
    this.schedulePoll(0);
  }

  private schedulePoll(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => void this.poll(), delayMs);
    this.pollTimer.unref();
  }

  /** A job was added or a slot freed: look for work now rather than at the next poll. */
  private poke(): void {
    if (!this.handlers || this.stopped) return;
    if (this.polling) this.pokedWhilePolling = true;
    else this.schedulePoll(0);
  }

  private poll(): Promise<void> {
    if (this.stopped || this.polling) return this.polling ?? Promise.resolve();
    this.pokedWhilePolling = false;
    // Cleared in finally(), which always runs after this assignment (a later microtask).
    this.polling = this.fetchDue().finally(() => {
      this.polling = undefined;
      this.schedulePoll(this.pokedWhilePolling ? 0 : this.pollMs);
    });
    return this.polling;
  }

  private async fetchDue(): Promise<void> {
    try {
      for (const name of JOB_NAMES) {
        const free = this.concurrency - this.running.size;
        if (free <= 0) break;
        const jobs = await this.boss.fetch<Envelope>(name, { batchSize: free, includeMetadata: true });
        for (const job of jobs) this.start(name, job);
      }
    } catch (error) {
      this.log?.error({ err: error }, 'job queue poll failed');
    }
  }

  private start(name: JobName, job: BossJob): void {
    // One job's handler, typed for any payload: the name was read from storage with its payload.
    const handler = this.handlers?.[name] as JobHandler<JobName> | undefined;
    const id = job.data.key;
    const attempt = job.retryCount + 1;
    let settled: Promise<void> | undefined;
    const settle = (): Promise<void> =>
      (settled ??= this.boss.complete(name, job.id).then(
        () => undefined,
        (error: unknown) => this.log?.error({ err: error, job_id: id }, 'job state update failed'),
      ));
    const run = (async () => {
      let failure: string | undefined;
      try {
        if (!handler) throw new Error(`no handler for job ${name}`);
        await handler(job.data.payload, { id, attempt, settle });
      } catch (error) {
        failure = errorMessage(error);
        this.log?.error({ err: error, job_id: id, attempt }, 'job failed');
      }
      // A settled job is done whatever its handler did after: what it handed over guards itself.
      if (settled) return;
      try {
        // fail() retries the job after its backoff while attempts remain, else leaves it failed.
        if (failure === undefined) await this.boss.complete(name, job.id);
        else await this.boss.fail(name, job.id, { message: failure });
      } catch (error) {
        this.log?.error({ err: error, job_id: id }, 'job state update failed');
      }
    })().finally(() => {
      this.running.delete(job.id);
      this.poke();
    });
    this.running.set(job.id, run);
  }

  /** Stops fetching, waits for the jobs under way, then stops pg-boss and closes its pool. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.pollTimer);
    // A fetch in flight may still hand us jobs: they run, and we wait for them too.
    await this.polling;
    await Promise.allSettled([...this.running.values()]);
    await this.boss.stop({ graceful: true, close: true, wait: true });
  }
}
