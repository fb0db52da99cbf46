// Scale-out bench: N worker processes (`npm start` each) on one PostgreSQL database place C
// sandbox calls; one worker is killed with SIGKILL mid-run (for N = 1 it is started again, as a
// process manager would). Prints, per N: throughput (of the calls the kill did not cut), calls lost (not final at the end), calls
// dialled twice (two agent greetings in one call), calls the kill cut (ended as call_error by the
// orphan sweep), and how long the sweep took after the kill.
// Usage: npm run bench:scale [-- --workers=1,2,4 --calls=2000 --timeout=600]
import type { ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../../src/store/types.js';
import { ENDED, type QueueStatus } from '../../src/domain/call-state.js';
import { createTestDatabase } from '../../src/testing/postgres.js';
import { startServerProcess } from '../../src/testing/server-process.js';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '1,2,4' },
    calls: { type: 'string', default: '2000' },
    timeout: { type: 'string', default: '600' },
  },
});
const WORKERS = values.workers.split(',').map(Number);
const CALLS = Number(values.calls);
const TIMEOUT_MS = Number(values.timeout) * 1000;
const API_KEY = 'bench-scale-key-0123456789abcdef';
const FINAL = ENDED;

interface Worker {
  child: ChildProcess;
  url: string;
}

async function startWorker(databaseUrl: string): Promise<Worker> {
  const { child, baseUrl } = await startServerProcess(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      OPENLINE_DATABASE_URL: databaseUrl,
      OPENLINE_API_KEY: API_KEY,
      OPENLINE_RATE_LIMIT_PER_MINUTE: '0',
      LOG_LEVEL: 'info',
    },
    { nodeArgs: ['--initial-heap-size=256', '--max-semi-space-size=8', '--v8-pool-size=1'] },
  );
  return { child, url: baseUrl };
}

async function place(url: string, count: number): Promise<void> {
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < count) {
      next++;
      const response = await fetch(`${url}/calls`, {
        method: 'POST',
        headers: { authorization: API_KEY, 'content-type': 'application/json' },
        // A person who hangs up after the agent's first sentence: a short, whole call.
        body: JSON.stringify({ phone_number: '+14155550107', task: 'Confirm the delivery window.' }),
      });
      if (response.status !== 200) throw new Error(`POST /v1/calls: ${response.status} ${await response.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, one));
}

const progress = (line: string) => process.stderr.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function run(n: number): Promise<Record<string, string | number>> {
  const database = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const workers: Worker[] = [];
  try {
    // The first worker migrates the database; the others start once it is ready.
    workers.push(await startWorker(database.url));
    for (let i = 1; i < n; i++) workers.push(await startWorker(database.url));
    const started = performance.now();
    const placing = place(workers[0]!.url, CALLS);
    const count = async (states: readonly QueueStatus[]) =>
      Number(
        (
          await db
            .selectFrom('calls')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('queue_status', 'in', states)
            .executeTakeFirstOrThrow()
        ).n,
      );
    // Kill the last worker once a third of the calls are over.
    for (let done = 0; done < CALLS / 3; done = await count(FINAL)) {
      progress(`${n} worker(s): ${done}/${CALLS} calls over`);
      await sleep(1000);
    }
    const victim = workers.at(-1)!;
    victim.child.kill('SIGKILL');
    const killedAt = performance.now();
    const cut = (
      await db.selectFrom('calls').select('id').where('queue_status', 'in', ['allocated', 'started']).execute()
    ).map((r) => r.id);
    if (n === 1) workers[0] = await startWorker(database.url);
    else workers.pop();
    await placing;
    let sweptMs: number | null = null;
    let othersDoneAt: number | null = null;
    const deadline = performance.now() + TIMEOUT_MS;
    for (;;) {
      if (othersDoneAt === null) {
        // Throughput counts the calls the kill did not cut: the sweep's lease wait is reported apart.
        const others = await db
          .selectFrom('calls')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('queue_status', 'in', FINAL)
          .$if(cut.length > 0, (q) => q.where('id', 'not in', cut))
          .executeTakeFirstOrThrow();
        if (Number(others.n) >= CALLS - cut.length) othersDoneAt = performance.now();
      }
      if (sweptMs === null && cut.length > 0) {
        const open = await db
          .selectFrom('calls')
          .select('id')
          .where('id', 'in', cut)
          .where('queue_status', 'not in', FINAL)
          .execute();
        if (open.length === 0) sweptMs = performance.now() - killedAt;
      }
      const done = await count(FINAL);
      if (done >= CALLS || performance.now() > deadline) break;
      progress(`${n} worker(s): ${done}/${CALLS} calls over`);
      await sleep(1000);
    }
    const seconds = ((othersDoneAt ?? performance.now()) - started) / 1000;
    const finals = await count(FINAL);
    const twice = await db
      .selectFrom('transcripts')
      .select('call_id')
      .where('user', '=', 'assistant')
      .where('text', 'like', 'Hello!%')
      .groupBy('call_id')
      .having(sql`count(*)`, '>', 1)
      .execute();
    const orphaned = Number(
      (
        await db
          .selectFrom('calls')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('error_message', 'like', '%server running it stopped%')
          .executeTakeFirstOrThrow()
      ).n,
    );
    return {
      workers: n,
      calls: CALLS,
      'calls/s': ((CALLS - cut.length) / seconds).toFixed(1),
      lost: CALLS - finals,
      'dialled twice': twice.length,
      'live at kill': cut.length,
      'cut by kill': orphaned,
      'sweep s': sweptMs === null ? (cut.length === 0 ? '-' : 'not swept') : (sweptMs / 1000).toFixed(1),
    };
  } finally {
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => new Promise((resolve) => w.child.once('exit', resolve))));
    await db.destroy();
    await sleep(1000);
    await database.drop();
  }
}

const rows: Record<string, string | number>[] = [];
for (const n of WORKERS) {
  const row = await run(n);
  console.log(JSON.stringify(row));
  rows.push(row);
}
console.table(rows);
