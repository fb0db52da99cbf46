// Campaign benchmark: a 10,000-number campaign on the sandbox, against the real server in its own
// process (SQLite, OPENLINE_TIME_SCALE so a clock minute passes in a few real seconds).
// Reports: time to accept the campaign, calls dispatched per clock minute against the pacing,
// the server's peak RSS, and duplicate calls after a kill -9 and restart in the middle.
// Usage: npm run bench:campaign [-- --numbers 10000 --cpm 600 --scale 10]
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';

const { values } = parseArgs({
  options: {
    numbers: { type: 'string', default: '10000' },
    cpm: { type: 'string', default: '600' },
    scale: { type: 'string', default: '10' },
  },
});
const NUMBERS = Number(values.numbers);
const CPM = Number(values.cpm);
const SCALE = Number(values.scale);
const KEY = 'bench-campaign-key-0123456789';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The server's resident memory, read from /proc (Linux), sampled while it runs. */
function rssOf(pid: number | undefined): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

async function startServer(dataDir: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      OPENLINE_API_KEY: KEY,
      OPENLINE_TIME_SCALE: String(SCALE),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // 'Openline ready' is logged at info; with LOG_LEVEL warn, poll the health endpoint instead.
  for (let i = 0; i < 300; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (r.ok) return child;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    await sleep(100);
  }
  throw new Error('server did not start');
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-bench-campaign-'));
const port = await freePort();
let server = await startServer(dataDir, port);
let peakRss = rssOf(server.pid);
const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(server.pid))), 100);

// Distinct numbers the sandbox answers as a person (any valid number outside 555-01XX).
const numbers = Array.from({ length: NUMBERS }, (_, i) => `+1415${String(2_000_000 + i).padStart(7, '0')}`);
const acceptStart = performance.now();
const created = await fetch(`http://127.0.0.1:${port}/v1/campaigns`, {
  method: 'POST',
  headers: { authorization: KEY, 'content-type': 'application/json' },
  body: JSON.stringify({
    name: 'bench',
    task: 'Say hello and goodbye.',
    max_duration: 1,
    numbers,
    pacing: { max_concurrent: NUMBERS, calls_per_minute: CPM },
  }),
});
const acceptMs = performance.now() - acceptStart;
const campaignId = ((await created.json()) as { campaign_id: string }).campaign_id;
if (!campaignId) throw new Error(`campaign not accepted: ${created.status}`);

const db = new SQLite(path.join(dataDir, 'openline.db'), { readonly: true });
const starts = () =>
  (
    db.prepare('select created_at from calls where campaign_id = ? order by created_at').all(campaignId) as {
      created_at: string;
    }[]
  ).map((r) => Date.parse(r.created_at));

// One clock minute of dispatch, measured from the first call.
const clockMinuteMs = 60_000 / SCALE;
await sleep(clockMinuteMs * 1.2);
const first = starts();
const t0 = first[0] ?? 0;
const inFirstMinute = first.filter((t) => t < t0 + 60_000).length;
// The busiest clock minute before the crash (the rolling cap says at most CPM).
let busiest = 0;
for (let i = 0, j = 0; i < first.length; i++) {
  while (first[j]! <= first[i]! - 60_000) j++;
  busiest = Math.max(busiest, i - j + 1);
}

// kill -9 in the middle of the campaign, then restart on the same DATA_DIR. The restarted server's
// scaled clock starts again from real time, behind the stamps of the calls placed before the
// crash, so its rolling-minute cap counts those calls and it dials slower for a while: an effect
// of the benchmark's scaled clock (at scale 1 the clock does not jump back), not of the dialer.
const beforeCrash = first.length;
await kill(server, 'SIGKILL');
server = await startServer(dataDir, port);
await sleep(clockMinuteMs);
const afterRestart = starts().length;

// Stop the campaign and let the calls under way end before counting.
await fetch(`http://127.0.0.1:${port}/v1/campaigns/${campaignId}/stop`, {
  method: 'POST',
  headers: { authorization: KEY },
});
await sleep(2000);
const perNumber = db
  .prepare(
    'select count(*) as numbers, sum(n) as calls, sum(case when n > 1 then 1 else 0 end) as duplicated ' +
      'from (select to_number, count(*) as n from calls where campaign_id = ? group by to_number)',
  )
  .get(campaignId) as { numbers: number; calls: number; duplicated: number };
clearInterval(sampler);
db.close();
await kill(server, 'SIGTERM');
fs.rmSync(dataDir, { recursive: true, force: true });

console.log(
  JSON.stringify(
    {
      numbers: NUMBERS,
      time_scale: SCALE,
      accept_ms: Math.round(acceptMs),
      configured_calls_per_minute: CPM,
      achieved_calls_in_first_clock_minute: inFirstMinute,
      dispatch_rate_error_percent: Number(((100 * (inFirstMinute - CPM)) / CPM).toFixed(2)),
      most_calls_in_any_clock_minute: busiest,
      calls_before_crash: beforeCrash,
      calls_one_clock_minute_after_restart: afterRestart,
      numbers_called: perNumber.numbers,
      calls_total: perNumber.calls,
      numbers_called_twice: perNumber.duplicated,
      peak_rss_mb: Math.round(peakRss / 1024 / 1024),
    },
    null,
    2,
  ),
);
