import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ScaledClock, type Clock } from '../../src/clock.js';
import { JOB_POLICY } from '../../src/jobs/catalog.js';
import type { JobHandlers, JobQueue } from '../../src/jobs/queue.js';
import { waitFor } from '../../src/testing/wait.js';

/** The queue tests import it from here too. */
export { waitFor };

/** One adapter of the JobQueue port, on a database of its own for the whole suite. */
export interface QueueSubject {
  /** A queue on the suite's database; called again after stop(), it is the same database (a restart). */
  open(clock: Clock): Promise<JobQueue>;
  /** Real milliseconds the adapter may take, beyond a job's time, to notice it is due. */
  pollMs: number;
  close(): Promise<void>;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const realClock = () => new ScaledClock(1);
const callId = () => randomUUID();

/**
 * The behaviour every JobQueue adapter owes the service (the embedded SQL queue is the reference):
 * idempotent enqueue, states as get() reports them, retries with backoff, cancel, scheduling in the
 * service clock's time, durability across restarts, concurrency and graceful stop.
 */
export function jobQueueContract(label: string, subject: () => Promise<QueueSubject>, options: { skip?: string } = {}) {
  describe(`JobQueue contract: ${label}`, { skip: options.skip ?? false }, () => {
    let s: QueueSubject;
    const opened: JobQueue[] = [];
    const open = async (clock: Clock = realClock()) => {
      const queue = await s.open(clock);
      opened.push(queue);
      return queue;
    };
    const handlers = (dial: JobHandlers['dial']): JobHandlers => ({
      dial,
      webhook: async () => {},
      sms_reply: async () => {},
      postcall: async () => {},
      agent_test_run: async () => {},
    });

    before(async () => {
      s = await subject();
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((q) => q.stop()));
    });
    after(() => s?.close());

    it('enqueue returns the catalog id; the same id again adds nothing; get shows pending then done', async () => {
      const q = await open();
      const call = callId();
      const runAt = new Date(Date.now() - 1000);
      assert.equal(await q.enqueue('dial', { call_id: call }, { runAt }), `dial:${call}`);
      assert.equal(
        await q.enqueue('dial', { call_id: call }, { runAt: new Date(Date.now() + 60_000) }),
        `dial:${call}`,
      );
      const pending = await q.get(`dial:${call}`);
      assert.deepEqual(pending, {
        id: `dial:${call}`,
        name: 'dial',
        payload: { call_id: call },
        state: 'pending',
        run_at: runAt.toISOString(),
        attempts: 0,
        last_error: null,
      });
      const runs: { id: string; attempt: number }[] = [];
      q.work(handlers(async (_payload, job) => void runs.push(job)));
      const done = await waitFor('done', async () => {
        const job = await q.get(`dial:${call}`);
        return job?.state === 'done' ? job : undefined;
      });
      assert.equal(done.attempts, 1);
      assert.equal(done.last_error, null);
      assert.deepEqual(
        runs.map(({ id, attempt }) => ({ id, attempt })),
        [{ id: `dial:${call}`, attempt: 1 }],
      );
      // A replay of a finished job is harmless too: it stays done and does not run again.
      await q.enqueue('dial', { call_id: call });
      assert.equal((await q.get(`dial:${call}`))?.state, 'done');
      assert.equal(await q.cancel(`dial:${call}`), false, 'a finished job cannot be canceled');
      await sleep(s.pollMs + 100);
      assert.equal(runs.length, 1);
      assert.equal(await q.get('dial:no-such-call'), undefined);
    });

    it('a failing handler is retried after its backoff, then dead after maxAttempts with last_error', async () => {
      // Ten times faster: the embedded queue's backoff (1 s, 2 s) takes 0.3 s of real time.
      const clock = new ScaledClock(10);
      const q = await open(clock);
      const call = callId();
      const starts: { attempt: number; at: number }[] = [];
      q.work(
        handlers(async (_payload, job) => {
          starts.push({ attempt: job.attempt, at: clock.now().getTime() });
          throw new Error(`attempt ${job.attempt} failed`);
        }),
        { concurrency: 5 },
      );
      await q.enqueue('dial', { call_id: call });
      const dead = await waitFor(
        'dead',
        async () => {
          const job = await q.get(`dial:${call}`);
          return job?.state === 'dead' ? job : undefined;
        },
        15_000,
      );
      const { maxAttempts, backoffMs } = JOB_POLICY.dial;
      assert.equal(dead.attempts, maxAttempts);
      assert.equal(dead.last_error, `attempt ${maxAttempts} failed`);
      assert.deepEqual(
        starts.map((x) => x.attempt),
        Array.from({ length: maxAttempts }, (_, i) => i + 1),
      );
      for (let n = 1; n < maxAttempts; n++) {
        const gap = starts[n]!.at - starts[n - 1]!.at;
        assert.ok(gap >= backoffMs(n), `attempt ${n + 1} came ${gap} clock ms after attempt ${n}`);
      }
    });

    it('a settled job is done at once, and stays done when its handler fails after', async () => {
      const q = await open();
      const call = callId();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      q.work(
        handlers(async (_payload, job) => {
          await job.settle();
          await held;
          throw new Error('failed after it was settled');
        }),
      );
      await q.enqueue('dial', { call_id: call });
      await waitFor('done while its handler runs', async () =>
        (await q.get(`dial:${call}`))?.state === 'done' ? true : undefined,
      );
      release();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const job = await q.get(`dial:${call}`);
      assert.equal(job?.state, 'done');
      assert.equal(job?.last_error, null);
      await q.stop();
    });

    it('cancels a scheduled job, which then never runs; a second cancel is false', async () => {
      const q = await open();
      const call = callId();
      let ran = false;
      q.work(
        handlers(async () => {
          ran = true;
        }),
      );
      await q.enqueue('dial', { call_id: call }, { runAt: new Date(Date.now() + 500) });
      assert.equal(await q.cancel(`dial:${call}`), true);
      assert.equal((await q.get(`dial:${call}`))?.state, 'canceled');
      assert.equal(await q.cancel(`dial:${call}`), false);
      assert.equal(await q.cancel('dial:no-such-call'), false);
      await q.enqueue('dial', { call_id: call });
      await sleep(500 + s.pollMs + 300);
      assert.equal(ran, false);
      assert.equal((await q.get(`dial:${call}`))?.state, 'canceled');
    });

    it('runs a job with runAt in the future no earlier than its time', async () => {
      const q = await open();
      const call = callId();
      let ranAt = 0;
      q.work(
        handlers(async () => {
          ranAt = Date.now();
        }),
      );
      const runAt = new Date(Date.now() + 1200);
      await q.enqueue('dial', { call_id: call }, { runAt });
      assert.equal((await q.get(`dial:${call}`))?.run_at, runAt.toISOString());
      await waitFor('the job to run', () => ranAt || undefined);
      // 50 ms of slack: the database's clock decides for pg-boss, and it is not ours to the ms.
      assert.ok(ranAt >= runAt.getTime() - 50, `ran ${runAt.getTime() - ranAt} ms early`);
      assert.ok(ranAt <= runAt.getTime() + s.pollMs + 1000, `ran ${ranAt - runAt.getTime()} ms late`);
    });

    it('schedules in the service clock: under a clock 100 times faster, 60 s pass in 0.6 s', async () => {
      const clock = new ScaledClock(100);
      const q = await open(clock);
      const call = callId();
      let ranAt = 0;
      q.work(
        handlers(async () => {
          ranAt = Date.now();
        }),
      );
      const enqueuedAt = Date.now();
      const runAt = new Date(clock.now().getTime() + 60_000);
      await q.enqueue('dial', { call_id: call }, { runAt });
      assert.equal((await q.get(`dial:${call}`))?.run_at, runAt.toISOString());
      await waitFor('the job to run', () => ranAt || undefined);
      assert.ok(ranAt - enqueuedAt >= 550, `ran after ${ranAt - enqueuedAt} ms`);
      assert.ok(ranAt - enqueuedAt <= 600 + s.pollMs + 1000, `ran after ${ranAt - enqueuedAt} ms`);
    });

    it('keeps a pending job across a restart: a new queue on the same database runs it', async () => {
      const first = await open();
      const call = callId();
      await first.enqueue('dial', { call_id: call });
      await first.stop();
      const second = await open();
      const runs: string[] = [];
      second.work(handlers(async (payload) => void runs.push(payload.call_id)));
      await waitFor('done', async () => (await second.get(`dial:${call}`))?.state === 'done');
      assert.deepEqual(runs, [call]);
    });

    it('runs no more jobs at once than its concurrency', async () => {
      const q = await open();
      const calls = Array.from({ length: 5 }, callId);
      let inFlight = 0;
      let most = 0;
      q.work(
        handlers(async () => {
          most = Math.max(most, ++inFlight);
          await sleep(200);
          inFlight--;
        }),
        { concurrency: 2 },
      );
      for (const call of calls) await q.enqueue('dial', { call_id: call });
      await waitFor('all done', async () => {
        for (const call of calls) if ((await q.get(`dial:${call}`))?.state !== 'done') return undefined;
        return true;
      });
      assert.equal(most, 2);
    });

    it('stop waits for the jobs under way, which end done', async () => {
      const q = await open();
      const call = callId();
      let started = false;
      let finished = false;
      q.work(
        handlers(async () => {
          started = true;
          await sleep(600);
          finished = true;
        }),
      );
      await q.enqueue('dial', { call_id: call });
      await waitFor('the job to start', () => started || undefined);
      assert.equal((await q.get(`dial:${call}`))?.state, 'running');
      await q.stop();
      assert.equal(finished, true, 'stop() returned before the job ended');
      const after = await open();
      assert.equal((await after.get(`dial:${call}`))?.state, 'done');
    });
  });
}
