// Web call benchmark (`npm run bench:webrtc`): N concurrent web calls over real WebRTC on loopback.
// This process is the server (with the Deepgram emulator as its speech recogniser, espeak-ng as
// its voice and the offline model); a child process plays the browsers (bench/webrtc/caller.ts,
// werift peers: ICE, DTLS-SRTP, PCMU, the data channel). Figures: the time from starting a call to
// the answer of POST /v1/web-calls and to the first voiced audio of the agent's greeting (the
// "click to first agent audio" of a browser, less its microphone prompt), voice-to-voice latency
// (end of the caller's question to the first voiced audio of the answer), and the server's CPU
// per web call while every call is up.
// Usage: npm run bench:webrtc [-- --calls 20 --hold 30]
import { fork } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createTestApp } from '../../src/testing/harness.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import type { CallerFigures } from './caller.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '20' }, hold: { type: 'string', default: '30' } },
});
const calls = Number(values.calls);
const holdS = Number(values.hold);

const deepgram = await FakeDeepgram.start({
  transcripts: Array<string>(calls * 2).fill('Hello, I would like to know your opening hours please.'),
});
const t = await createTestApp({
  env: { DEEPGRAM_API_KEY: deepgram.apiKey, OPENLINE_DEEPGRAM_URL: deepgram.url },
});
await t.services.startWorkers();
const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
const agent = await t.request('POST', '/v1/agents', {
  prompt: 'You are the front desk of Sunny Dental. Answer briefly.',
  first_sentence: 'Hello, Sunny Dental, this is Ava.',
  max_duration: 5,
});
const agentId = String((agent.body.agent as { agent_id: string }).agent_id);

const here = path.dirname(fileURLToPath(import.meta.url));
const child = fork(path.join(here, 'caller.ts'), {
  execArgv: ['--import', 'tsx'],
  env: {
    ...process.env,
    BENCH_ORIGIN: origin,
    BENCH_KEY: t.key,
    BENCH_AGENT: agentId,
    BENCH_CALLS: String(calls),
    BENCH_HOLD_MS: String(holdS * 1000),
  },
});
const figures = new Promise<(CallerFigures | { error: string })[]>((resolve) => child.on('message', resolve as never));

// The steady window: every call up (they start 100 ms apart), until shortly before they end.
const settleS = Math.ceil(calls / 10) + 6;
await new Promise((resolve) => setTimeout(resolve, settleS * 1000));
const live = t.services.engine.activeCount;
t.services.frames.stats.reset();
const cpuStart = process.cpuUsage();
const wallStart = performance.now();
await new Promise((resolve) => setTimeout(resolve, Math.max(5, holdS - settleS - 4) * 1000));
const cpu = process.cpuUsage(cpuStart);
const wallMs = performance.now() - wallStart;
const stats = t.services.frames.stats;
const results = await figures;
await new Promise((resolve) => setTimeout(resolve, 1500));
const list = await t.request('GET', '/v1/calls?inbound=true&limit=1000');
const turns = await Promise.all(
  (list.body.calls as { call_id: string }[]).map(async (c) => {
    const record = await t.request('GET', `/v1/calls/${c.call_id}`);
    const b = record.body;
    return {
      transcripts: b.transcripts,
      status: b.status,
      ended_by: b.call_ended_by,
      error: b.error_message,
      answered_by: b.answered_by,
      length: b.call_length,
    };
  }),
);
if (process.env.BENCH_DEBUG)
  console.log(
    JSON.stringify(turns.slice(0, 2), null, 1),
    deepgram.connections.map((c) => ({ bytes: c.bytes, sent: c.sent.map((m) => JSON.stringify(m).slice(0, 150)) })),
  );
await t.close();
await deepgram.close();

const ok = results.filter((r): r is CallerFigures => !('error' in r));
for (const r of results) if ('error' in r) console.log(`failed: ${r.error}`);
const pct = (xs: number[], p: number) => {
  const sorted = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! : NaN;
};
const row = (name: string, xs: number[]) =>
  console.log(
    `| ${name} | ${pct(xs, 0.5).toFixed(0)} ms | ${pct(xs, 0.9).toFixed(0)} ms | ${Math.max(...xs).toFixed(0)} ms |`,
  );
const cpuMs = (cpu.user + cpu.system) / 1000;
const perCall = cpuMs / live / (wallMs / 1000);
console.log(
  `\nWeb calls on ${os.cpus().length} cores: ${calls} WebRTC callers (werift) on loopback, held ${holdS} s\n`,
);
console.log('| figure | p50 | p90 | max |');
console.log('| --- | ---: | ---: | ---: |');
row(
  'POST /v1/web-calls answered (from the offer)',
  ok.map((r) => r.setupMs),
);
row(
  'first voiced agent audio (from the offer)',
  ok.map((r) => r.firstAudioMs),
);
row(
  'voice-to-voice (end of question to answer)',
  ok.map((r) => r.voiceToVoiceMs ?? NaN),
);
console.log('\n| figure | value |');
console.log('| --- | ---: |');
console.log(`| calls answered / placed | ${ok.length} / ${calls} |`);
console.log(`| calls up in the window | ${live} |`);
console.log(`| questions answered | ${ok.filter((r) => r.voiceToVoiceMs !== null).length} |`);
console.log(`| server CPU (one core = 100 %) | ${((cpuMs / wallMs) * 100).toFixed(0)} % |`);
console.log(
  `| CPU per web call | ${perCall.toFixed(1)} ms per second of call (${((perCall / 1000) * 100).toFixed(2)} % of a core) |`,
);
console.log(`| outbound frames late > 20 ms | ${stats.lateFrames} of ${stats.frames} |`);
