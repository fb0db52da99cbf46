import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ScaledClock } from '../../src/clock.js';
import PgBoss from 'pg-boss';
import { PGBOSS_SCHEMA, PgBossQueue, uuidV5 } from '../../src/jobs/pgboss-queue.js';
import { JOB_POLICY } from '../../src/jobs/catalog.js';
import { createTestDatabase, postgresAvailable } from '../../src/testing/postgres.js';
import { jobQueueContract, waitFor } from './queue-contract.js';

const available = await postgresAvailable();
const skip = available ? undefined : 'no PostgreSQL';

jobQueueContract(
  'PgBossQueue on PostgreSQL',
  async () => {
    const database = await createTestDatabase();
    return {
      open: (clock) => PgBossQueue.open({ url: database.url, clock }),
      pollMs: 500,
      close: () => database.drop(),
    };
  },
  skip ? { skip } : {},
);

describe('uuidV5', () => {
  it('matches the RFC 4122 version 5 example (www.example.com in the DNS namespace)', () => {
    assert.equal(
      uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'),
      '2ed6657d-e927-568b-95e1-2665a8aea6a2',
    );
  });

  it('gives each job id one UUID of its own', () => {
    assert.equal(uuidV5('dial:a'), uuidV5('dial:a'));
    assert.notEqual(uuidV5('dial:a'), uuidV5('dial:b'));
    assert.match(uuidV5('dial:a'), /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('PgBossQueue on PostgreSQL, beyond the contract', { skip: skip ?? false }, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  before(async () => {
    database = await createTestDatabase();
  });
  after(() => database?.drop());

  it('shares the jobs of one database among several processes: each job runs once', async () => {
    const clock = new ScaledClock(1);
    // Three processes starting at once on a fresh database.
    const opening = await Promise.allSettled([1, 2, 3].map(() => PgBossQueue.open({ url: database.url, clock })));
    const queues = opening.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    try {
      for (const o of opening) if (o.status === 'rejected') throw o.reason;
      const runs: string[] = [];
      const ran = new Set<number>();
      queues.forEach((q, i) =>
        q.work(
          {
            dial: async (payload) => {
              runs.push(payload.call_id);
              ran.add(i);
              await new Promise((resolve) => setTimeout(resolve, 100));
            },
            webhook: async () => {},
            sms_reply: async () => {},
            postcall: async () => {},
            agent_test_run: async () => {},
          },
          { concurrency: 2 },
        ),
      );
      const calls = Array.from({ length: 12 }, () => randomUUID());
      // Enqueued twice, from different processes: still one job each.
      for (const call of calls) await queues[0]!.enqueue('dial', { call_id: call });
      for (const call of calls) await queues[1]!.enqueue('dial', { call_id: call });
      await waitFor('all done', async () => {
        for (const call of calls) if ((await queues[2]!.get(`dial:${call}`))?.state !== 'done') return undefined;
        return true;
      });
      assert.deepEqual([...runs].sort(), [...calls].sort());
      assert.ok(ran.size >= 2, 'more than one process took jobs');
    } finally {
      await Promise.all(queues.map((q) => q.stop()));
    }
  });

  it(`keeps its tables in the ${PGBOSS_SCHEMA} schema, and lets a dial job run unsettled ${JOB_POLICY.dial.expireSeconds} s`, async () => {
    const q = await PgBossQueue.open({ url: database.url, clock: new ScaledClock(1) });
    const call = randomUUID();
    try {
      await q.enqueue('dial', { call_id: call });
    } finally {
      await q.stop();
    }
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ expire: number; retry_limit: number }>(
        `select extract(epoch from expire_in)::int as expire, retry_limit from ${PGBOSS_SCHEMA}.job where id = $1`,
        [uuidV5(`dial:${call}`)],
      );
      assert.deepEqual(rows, [{ expire: JOB_POLICY.dial.expireSeconds, retry_limit: 2 }]);
    } finally {
      await client.end();
    }
  });

  it('runs again a job whose process died before settling it; a settled job never runs again', async () => {
    const own = await createTestDatabase();
    const clock = new ScaledClock(1);
    const options = { url: own.url, clock, expireSeconds: { dial: 2 }, maintenanceIntervalSeconds: 1 };
    const q = await PgBossQueue.open(options);
    // A process that takes both jobs, settles one, and dies: it never completes the other.
    const dead = new PgBoss({
      connectionString: own.url,
      schema: PGBOSS_SCHEMA,
      schedule: false,
      supervise: false,
    });
    await dead.start();
    const [lost, handedOver] = [randomUUID(), randomUUID()];
    try {
      await q.enqueue('dial', { call_id: lost });
      await q.enqueue('dial', { call_id: handedOver });
      const taken = await dead.fetch<{ payload: { call_id: string } }>('dial', { batchSize: 2 });
      assert.equal(taken.length, 2);
      const settled = taken.find((j) => j.data.payload.call_id === handedOver)!;
      await dead.complete('dial', settled.id);
      const runs: string[] = [];
      q.work(
        {
          dial: async (payload) => void runs.push(payload.call_id),
          webhook: async () => {},
          sms_reply: async () => {},
          postcall: async () => {},
          agent_test_run: async () => {},
        },
        { pollMs: 500 },
      );
      await waitFor(
        'the lost job run again',
        async () => ((await q.get(`dial:${lost}`))?.state === 'done' ? true : undefined),
        20_000,
      );
      assert.deepEqual(runs, [lost]);
    } finally {
      await dead.stop({ graceful: false, close: true });
      await q.stop();
      await own.drop();
    }
  });
});
