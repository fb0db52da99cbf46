// SIP load benchmark (`npm run bench:sip`): N concurrent calls placed by sipp (Debian's
// sip-tester) to one of the account's numbers over SIP on loopback, with RTP both ways, held for a
// while: the agent greets, then every twelve seconds the caller speaks (sipp plays the G.711 A-law
// speech of its g711a.pcap, 7 s) and the agent answers. This process is the server, with the
// media benchmark's fakes for speech (bench/media/run.ts): a scripted STT whose final comes 50 ms
// after the leg asks for it, a TTS whose first audio comes after 80 ms, and the offline agent.
// The figures are its CPU per call and the lateness of its outbound frames (the 20 ms grid plus
// the audio each call keeps at the far end) over the steady part of the run, when every call is
// up, and voice-to-voice: the calls' recorded latency, end of the caller's speech to the first
// frame of the answer sent.
// By default every caller keeps the same schedule (calls set up 50 a second, so their turns end
// within a few seconds of each other: the worst case); with --spread each caller first waits a
// random time (uniform, up to SPREAD_MS) before it speaks, as callers who do not all talk at once.
// Usage: npm run bench:sip [-- --calls 200 --hold 40 --spread]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createTestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { ScriptedStt, ToneTts } from '../../src/testing/audio-fakes.js';
import type { Speech } from '../../src/providers/speech.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '200' },
    hold: { type: 'string', default: '40' },
    spread: { type: 'boolean', default: false },
  },
});
const spread = values.spread === true;
const calls = Number(values.calls);
const holdS = Number(values.hold);

const PCAP = '/usr/share/sip-tester/g711a.pcap';
if (!fs.existsSync(PCAP)) throw new Error(`${PCAP} is missing: apt-get install sip-tester`);
/** The caller speaks every SPEAK_EVERY_MS after GREETING_MS (the greeting lasts about 5 s, the pcap 7 s). */
const GREETING_MS = 6000;
const SPEAK_EVERY_MS = 12_000;
/** With --spread, the longest a caller waits before it first speaks. */
const SPREAD_MS = 6000;
const plays = Math.max(1, Math.floor((holdS * 1000 - GREETING_MS) / SPEAK_EVERY_MS));

// The media benchmark's fakes (bench/media/run.ts): STT final 50 ms after Finalize, TTS first audio after 80 ms.
const speech: Speech = {
  stt: new ScriptedStt({
    lines: Array.from({ length: calls * (plays + 1) }, () => 'I would like to book a cleaning on Thursday.'),
    finalLatencyMs: 50,
  }),
  tts: new ToneTts({ firstChunkMs: 80, msPerChar: 60 }),
  fallback: null,
  ttsVoiceFor: () => 'tone',
};

const sipPort = await freeUdpPort();
const t = await createTestApp({
  env: { OPENLINE_SIP_LISTEN: `127.0.0.1:${sipPort}`, OPENLINE_RTP_PORTS: '20000-29999' },
  speech,
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
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-bench-sip-'));
const scenario = path.join(dir, 'caller.xml');
fs.writeFileSync(scenario, callerScenario());
const errors = path.join(dir, 'errors.log');
const sipp = spawn(
  'sipp',
  [
    '-sf',
    scenario,
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
    '-mp',
    '40000',
    '-nostdin',
    '-timeout',
    `${holdS + rampS + 60}s`,
    '-trace_err',
    '-error_file',
    errors,
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
const records = list.body.calls as { call_id: string; completed: boolean; status: string }[];
// Voice-to-voice: every answered turn of every call, as its record gives it.
const voiceToVoice: number[] = [];
for (const r of records) {
  const record = await t.request('GET', `/v1/calls/${r.call_id}`);
  const latency = record.body.latency as { turns: { total_ms: number }[] } | null;
  for (const turn of latency?.turns ?? []) voiceToVoice.push(turn.total_ms);
}
voiceToVoice.sort((a, b) => a - b);
const at = (q: number) => voiceToVoice[Math.min(voiceToVoice.length - 1, Math.floor(q * voiceToVoice.length))] ?? NaN;
await t.close();
const sippErrors = fs.existsSync(errors) ? fs.readFileSync(errors, 'utf8').trim() : '';
fs.rmSync(dir, { recursive: true, force: true });

const cpuMs = (cpu.user + cpu.system) / 1000;
const perCall = cpuMs / live / (wallMs / 1000);
console.log(
  `\nSIP load on ${os.cpus().length} cores (load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')} at the end): ` +
    `${calls} calls from sipp over UDP, RTP both ways, held ${holdS} s, the caller speaking ${plays} times, ` +
    (spread
      ? `each first after a random wait of up to ${SPREAD_MS / 1000} s (--spread)\n`
      : 'every caller on the same schedule\n'),
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
console.log(
  `| voice-to-voice p50 / p99 / max (${voiceToVoice.length} turns) | ${at(0.5).toFixed(0)} ms / ${at(0.99).toFixed(0)} ms / ${(voiceToVoice.at(-1) ?? NaN).toFixed(0)} ms |`,
);
console.log(`| calls on record, completed | ${records.length}, ${records.filter((r) => r.completed).length} |`);
console.log(`| sipp exit code (0: every call succeeded) | ${code} |`);
if (sippErrors) console.log(`\nsipp's errors (the last 20 lines):\n${sippErrors.split('\n').slice(-20).join('\n')}`);

/**
 * The caller of every call: INVITE offering PCMA with telephone-events, the greeting heard, then
 * the pcap's speech every SPEAK_EVERY_MS until the hold time is over, then BYE.
 */
function callerScenario(): string {
  const speakAndWait = `  <nop><action><exec play_pcap_audio="${PCAP}" /></action></nop>\n  <pause milliseconds="${SPEAK_EVERY_MS}" />\n`;
  const rest = Math.max(500, holdS * 1000 - GREETING_MS - plays * SPEAK_EVERY_MS);
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="bench-caller">
  <send retrans="500"><![CDATA[
INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
To: <sip:[service]@[remote_ip]:[remote_port]>
Call-ID: [call_id]
CSeq: 1 INVITE
Contact: <sip:caller@[local_ip]:[local_port]>
Max-Forwards: 70
Content-Type: application/sdp
Content-Length: [len]

v=0
o=caller 53655765 2353687637 IN IP[local_ip_type] [local_ip]
s=-
c=IN IP[media_ip_type] [media_ip]
t=0 0
m=audio [media_port] RTP/AVP 8 101
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/8000
]]></send>
  <recv response="100" optional="true" />
  <recv response="180" optional="true" />
  <recv response="200" />
  <send><![CDATA[
ACK sip:[service]@[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
Call-ID: [call_id]
CSeq: 1 ACK
Max-Forwards: 70
Content-Length: 0
]]></send>
  <pause milliseconds="${GREETING_MS}" />
${spread ? `  <pause distribution="uniform" min="0" max="${SPREAD_MS}" />\n` : ''}${speakAndWait.repeat(plays)}  <pause milliseconds="${rest}" />
  <send retrans="500"><![CDATA[
BYE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
Call-ID: [call_id]
CSeq: 2 BYE
Max-Forwards: 70
Content-Length: 0
]]></send>
  <recv response="200" />
</scenario>
`;
}
