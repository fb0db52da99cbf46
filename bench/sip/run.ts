// SIP load benchmark (`npm run bench:sip`): N concurrent calls placed by sipp (Debian's
// sip-tester) to one of the account's numbers over SIP on loopback, with RTP both ways (the agent
// speaks, sipp echoes its audio back, so every call carries media in each direction), held for a
// while. This process is the server: the figures are its CPU per call and the lateness of its
// outbound frames (the 20 ms grid plus the audio each call keeps at the far end) over the steady
// part of the run, when every call is up.
// Usage: npm run bench:sip [-- --calls 200 --hold 40]
import { spawn } from 'node:child_process';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createTestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '200' }, hold: { type: 'string', default: '40' } },
});
const calls = Number(values.calls);
const holdS = Number(values.hold);

const sipPort = await freeUdpPort();
const t = await createTestApp({
  env: { OPENLINE_SIP_LISTEN: `127.0.0.1:${sipPort}`, OPENLINE_RTP_PORTS: '20000-29999' },
});
await t.services.startWorkers();
const bought = await t.request('POST', '/v1/inbound/purchase', {
  area_code: '415',
  prompt: 'You are the front desk of Sunny Dental. Greet the caller and answer briefly.',
  first_sentence: 'Hello, thank you for calling Sunny Dental, this is Ava. How can I help you today?',
});
if (bought.status !== 200) throw new Error(`buying a number: ${JSON.stringify(bought.body)}`);
const number = String(bought.body.phone_number);

const rate = 50; // calls set up per second
const rampS = Math.ceil(calls / rate);
const sipp = spawn(
  'sipp',
  [
    '-sn',
    'uac',
    `127.0.0.1:${sipPort}`,
    '-i',
    '127.0.0.1',
    '-p',
    String(await freeUdpPort()),
    '-s',
    number.slice(1),
    '-r',
    String(rate),
    '-l',
    String(calls),
    '-m',
    String(calls),
    '-d',
    String(holdS * 1000),
    '-rtp_echo',
    '-mp',
    '40000',
    '-nostdin',
    '-timeout',
    `${holdS + rampS + 60}s`,
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
const exited = new Promise<number | null>((resolve) => sipp.on('exit', resolve));

// The steady window: every call up (ramp plus a few seconds), until shortly before the first hangs up.
const settleS = rampS + 4;
const windowS = Math.max(5, holdS - rampS - 8);
await new Promise((resolve) => setTimeout(resolve, settleS * 1000));
const live = t.services.engine.activeCount;
t.services.frames.stats.reset();
const loop = monitorEventLoopDelay({ resolution: 5 });
loop.enable();
const cpuStart = process.cpuUsage();
const wallStart = performance.now();
await new Promise((resolve) => setTimeout(resolve, windowS * 1000));
const cpu = process.cpuUsage(cpuStart);
loop.disable();
const wallMs = performance.now() - wallStart;
const stats = t.services.frames.stats;
const late = stats.lateFrames;
const frames = stats.frames;
const p99 = stats.percentile(0.99);
const max = stats.maxMs;
const code = await exited;
await new Promise((resolve) => setTimeout(resolve, 2000));
const list = await t.request('GET', `/v1/calls?inbound=true&limit=1000`);
const records = list.body.calls as { completed: boolean; status: string }[];
await t.close();

const cpuMs = (cpu.user + cpu.system) / 1000;
const perCall = cpuMs / live / (wallMs / 1000);
console.log(
  `\nSIP load on ${os.cpus().length} cores: ${calls} calls from sipp over UDP, RTP both ways, held ${holdS} s\n`,
);
console.log('| figure | value |');
console.log('| --- | ---: |');
console.log(`| calls up in the window | ${live} |`);
console.log(`| server CPU (one core = 100 %) | ${((cpuMs / wallMs) * 100).toFixed(0)} % |`);
console.log(
  `| CPU per call | ${perCall.toFixed(2)} ms per second of call (${((perCall / 1000) * 100).toFixed(2)} % of a core) |`,
);
console.log(`| outbound frames in the window | ${frames} |`);
console.log(`| frames late > 20 ms | ${late} |`);
console.log(`| lateness p99 / max | ${p99.toFixed(1)} ms / ${max.toFixed(1)} ms |`);
console.log(
  `| event loop delay p99 / max | ${(loop.percentile(99) / 1e6).toFixed(1)} ms / ${(loop.max / 1e6).toFixed(1)} ms |`,
);
console.log(`| calls on record, completed | ${records.length}, ${records.filter((r) => r.completed).length} |`);
console.log(`| sipp exit code (0: every call succeeded) | ${code} |`);
