import type { JobName, JobPayloads } from './catalog.js';

export interface EnqueueOptions {
  /** Not before this time (scheduled calls). Default: now. */
  runAt?: Date;
}

export interface QueuedJob<N extends JobName = JobName> {
  id: string;
  name: N;
  payload: JobPayloads[N];
  state: JobState;
  run_at: string;
  attempts: number;
  last_error: string | null;
}

/** pending -> running -> done | (pending again, with backoff) | dead; or canceled before it ran. */
export type JobState = 'pending' | 'running' | 'done' | 'dead' | 'canceled';

/** What a handler knows of its job. */
export interface JobRun {
  id: string;
  attempt: number;
  /**
   * The job's work is safely handed over: it counts as done from now on, though its handler runs
   * on (a dial job once its call is allocated: the call's lease guards it from then). Until then,
   * a job whose process died is run again after its policy's `expireSeconds`.
   */
  settle(): Promise<void>;
}

export type JobHandler<N extends JobName> = (payload: JobPayloads[N], job: JobRun) => Promise<void>;

export type JobHandlers = { [N in JobName]: JobHandler<N> };

export interface WorkOptions {
  /** Jobs run at once by this process. Default 50 (calls are mostly waiting on I/O). */
  concurrency?: number;
  /** Real milliseconds between polls for due jobs. Default 200. */
  pollMs?: number;
}

/** The job queue port: the embedded SQL queue, or pg-boss on PostgreSQL. */
export interface JobQueue {
  /** Starts running due jobs with these handlers until stop(). */
  work(handlers: JobHandlers, options?: WorkOptions): void;
  /** Adds a job under its catalog id; a job with that id already present is left as it is. */
  enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options?: EnqueueOptions): Promise<string>;
  /** Cancels a job that has not started; false when it already ran, runs, or does not exist. */
  cancel(id: string): Promise<boolean>;
  get(id: string): Promise<QueuedJob | undefined>;
  ping(): Promise<void>;
  /** Jobs waiting to run (due or scheduled), by name: the queue's depth (GET /metrics). */
  pending(): Promise<Partial<Record<JobName, number>>>;
  stop(): Promise<void>;
}
