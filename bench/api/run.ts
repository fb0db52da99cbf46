// API benchmark: authenticated GET /v1/calls/{id} and POST /v1/calls against a bare Fastify
// hello-world, each server in its own process, 50 connections, on SQLite.
// Usage: npm run bench:api [-- --seconds 10 --connections 50]
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '8' }, connections: { type: 'string', default: '50' } },
});
const duration = Number(values.seconds);
const connections = Number(values.connections);

interface Started {
  child: ChildProcess;
  info: { port: number; key?: string; callId?: string };
}

async function start(kind: string): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/api/server.ts', kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const [line] = (await once(lines, 'line')) as [string];
  return { child, info: JSON.parse(line) as Started['info'] };
}

async function stop(started: Started): Promise<void> {
  started.child.kill('SIGTERM');
  await once(started.child, 'exit');
}

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

const ROUNDS = 3;

/** Median of ROUNDS measured runs after a warm-up: a VM's figures swing by a fifth from run to run. */
async function load(name: string, options: autocannon.Options): Promise<Figures> {
  // The warm-up lets V8 optimise the hot paths before anything is measured.
  await autocannon({ ...options, duration: 5 });
  const runs: Figures[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const result = await autocannon({ ...options, duration });
    runs.push({
      name,
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors,
      non2xx: result.non2xx,
    });
  }
  runs.sort((a, b) => a.rps - b.rps);
  return runs[Math.floor(ROUNDS / 2)]!;
}

const results: Figures[] = [];
const hello = await start('hello');
results.push(await load('hello-world GET /', { url: `http://127.0.0.1:${hello.info.port}/`, connections }));
await stop(hello);

const openline = await start('openline');
const base = `http://127.0.0.1:${openline.info.port}`;
const headers = { authorization: openline.info.key ?? '', 'content-type': 'application/json' };
results.push(
  await load('GET /v1/calls/{id}', { url: `${base}/v1/calls/${openline.info.callId}`, connections, headers }),
);
results.push(
  await load('POST /v1/calls', {
    url: `${base}/v1/calls`,
    method: 'POST',
    connections,
    headers,
    body: JSON.stringify({ phone_number: '+14155550100', task: 'Benchmark call', start_time: '2099-01-01 00:00:00' }),
  }),
);
await stop(openline);

const helloRps = results[0]?.rps ?? 1;
console.log(
  `\nAPI benchmark: ${connections} connections, median of ${ROUNDS} runs of ${duration} s, SQLite, node ${process.version}`,
);
console.log(
  'run'.padEnd(22),
  'req/s'.padStart(9),
  'p50 ms'.padStart(8),
  'p99 ms'.padStart(8),
  'vs hello'.padStart(9),
  'errors'.padStart(7),
);
for (const r of results) {
  console.log(
    r.name.padEnd(22),
    r.rps.toFixed(0).padStart(9),
    r.p50.toFixed(1).padStart(8),
    r.p99.toFixed(1).padStart(8),
    `${((r.rps / helloRps) * 100).toFixed(0)}%`.padStart(9),
    String(r.errors + r.non2xx).padStart(7),
  );
}
