// Pacing density benchmark: N simulated calls in one process, each with an outbound FramePacer on
// the shared 20 ms scheduler (agent speech in turns with marks, a background track mixed under it
// and played alone between turns, each frame sent as a Twilio media message: base64 inside JSON)
// and 50 inbound frames a second (a Twilio media message parsed, mu-law decoded, scored by the
// VAD). Inbound frames arrive from 20 staggered "network" timers, as websocket messages do.
// Reports per run: outbound frames more than 20 ms late, lateness p50/p99/max, slots skipped,
// event-loop delay p99, inbound frames scored against expected, VAD windows skipped because the
// model fell behind (Silero), and CPU (% of one core) of the process and of Silero's inference
// process. Run it on an otherwise idle machine: other processes' load shows up as lateness.
// Usage: npx tsx bench/media/pacer.ts [--calls 200,400] [--seconds 20] [--vad energy|silero]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { FRAME_SAMPLES, decodeMulawInto, encodeMulaw, tone } from '../../src/media/audio.js';
import { BackgroundMixer, backgroundTrack } from '../../src/media/background.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { sharedSileroModel } from '../../src/media/vad-silero.js';
import { createVad, type Vad } from '../../src/media/vad.js';
import { wavToPcm8k } from '../../src/media/wav.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '200,400' },
    seconds: { type: 'string', default: '20' },
    vad: { type: 'string', default: 'energy' },
  },
});
const CALLS = values.calls.split(',').map(Number);
const SECONDS = Number(values.seconds);
const VAD_KIND = values.vad === 'silero' ? 'silero' : 'energy';
const WARMUP_MS = 2000;
const NETWORK_TIMERS = 20;

/** Speech-like outbound audio: a gliding two-tone "voice" with syllable envelopes, as mu-law frames. */
function agentTurn(seconds: number): Buffer[] {
  const pcm = tone([180, 720], seconds * 1000, 9000);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(pcm[i]! * Math.sin((Math.PI * i) / 1600) ** 2);
  const frames: Buffer[] = [];
  for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
    frames.push(encodeMulaw(pcm.subarray(at, at + FRAME_SAMPLES)));
  }
  return frames;
}

/**
 * One caller's side as Twilio media messages, looped: a sentence of espeak-ng speech (a tone
 * complex without espeak-ng), then 3 s of listening on a hissing line, like a caller who talks
 * about 40 % of the time.
 */
function inboundMessages(): string[] {
  let talk: Int16Array;
  try {
    talk = wavToPcm8k(
      execFileSync('espeak-ng', ['--stdout', 'Yes, I can do Tuesday at three, if that works for you.']),
    );
  } catch {
    talk = tone([150, 450, 900], 2000, 7000);
  }
  const listen = new Int16Array(3 * 8000);
  let seed = 1;
  for (let i = 0; i < listen.length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    listen[i] = ((seed >>> 16) % 200) - 100; // about -55 dBFS of hiss
  }
  const out: string[] = [];
  for (const pcm of [talk, listen]) {
    for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
      const payload = encodeMulaw(pcm.subarray(at, at + FRAME_SAMPLES)).toString('base64');
      out.push(JSON.stringify({ event: 'media', streamSid: 'MZbench', media: { track: 'inbound', payload } }));
    }
  }
  return out;
}

/** CPU time of Silero's inference process (a child: not in process.cpuUsage), from /proc. */
async function inferenceCpuMs(): Promise<number> {
  if (VAD_KIND !== 'silero') return 0;
  try {
    const pid = (await sharedSileroModel()).pid;
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in 1/100 s
  } catch {
    return 0;
  }
}

interface Result {
  calls: number;
  frames: number;
  late: number;
  p50: number;
  p99: number;
  max: number;
  skipped: number;
  loopDelayP99: number;
  inboundScored: number;
  inboundExpected: number;
  vadWindowsSkipped: number;
  cpuPercent: number;
  inferenceCpuPercent: number;
}

async function run(calls: number): Promise<Result> {
  const scheduler = new FrameScheduler();
  const turns = [agentTurn(2), agentTurn(3.2), agentTurn(1.4)];
  const messages = inboundMessages();
  const track = backgroundTrack('cafe');
  let bytesOut = 0;
  let measuring = false;
  let inboundScored = 0;
  const stops: (() => void)[] = [];
  let stopped = false;
  const vads: Vad[] = [];

  for (let c = 0; c < calls; c++) {
    const streamSid = `MZ${c.toString().padStart(32, '0')}`;
    const sink = {
      sendMedia(frame: Buffer) {
        bytesOut += JSON.stringify({ event: 'media', streamSid, media: { payload: frame.toString('base64') } }).length;
      },
      sendMark(name: string) {
        bytesOut += JSON.stringify({ event: 'mark', streamSid, mark: { name } }).length;
      },
    };
    let turn = c;
    const pacer = scheduler.createPacer(sink, {
      fill: new BackgroundMixer(track),
      // After each turn, a pause of 0.5-2.5 s, then the next turn.
      onDrain: () => void setTimeout(speak, 500 + ((c * 37 + turn * 101) % 2000)),
    });
    const speak = () => {
      if (stopped) return;
      const frames = turns[turn++ % turns.length]!;
      for (let at = 0; at < frames.length; at += 25) {
        pacer.enqueue(frames.slice(at, at + 25));
        pacer.mark(`turn${turn}:${at}`);
      }
    };
    setTimeout(speak, (c * 13) % 1000);
    stops.push(() => pacer.close());
    vads.push(await createVad(VAD_KIND));
  }

  // Inbound: each network timer delivers one frame to each of its calls every 20 ms, on absolute
  // deadlines; after a stall the overdue frames arrive together, as a socket's backlog would.
  const pcm = new Int16Array(FRAME_SAMPLES);
  // Each caller is somewhere else in the loop.
  const cursor = Array.from({ length: calls }, (_, c) => (c * 37) % messages.length);
  const origin = performance.now();
  for (let t = 0; t < NETWORK_TIMERS; t++) {
    const first = Math.floor((t * calls) / NETWORK_TIMERS);
    const last = Math.floor(((t + 1) * calls) / NETWORK_TIMERS);
    const phase = (t * 20) / NETWORK_TIMERS;
    let next = 0;
    const deliver = () => {
      if (stopped) return;
      const due = Math.floor((performance.now() - origin - phase) / 20);
      for (; next <= due; next++) {
        for (let c = first; c < last; c++) {
          const parsed = JSON.parse(messages[cursor[c]!]!) as { media: { payload: string } };
          cursor[c] = (cursor[c]! + 1) % messages.length;
          decodeMulawInto(Buffer.from(parsed.media.payload, 'base64'), pcm);
          const score = vads[c]!.process(pcm);
          if (typeof score === 'number') {
            if (measuring) inboundScored++;
          } else {
            score.then(
              () => measuring && inboundScored++,
              () => undefined,
            );
          }
        }
      }
      setTimeout(deliver, Math.max(0, origin + phase + next * 20 - performance.now()));
    };
    deliver();
  }

  await new Promise((resolve) => setTimeout(resolve, WARMUP_MS));
  scheduler.stats.reset();
  scheduler.skippedSlots = 0;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  measuring = true;
  const cpu = process.cpuUsage();
  const inferenceCpu = await inferenceCpuMs();
  const wall = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const used = process.cpuUsage(cpu);
  const inferenceUsed = (await inferenceCpuMs()) - inferenceCpu;
  const elapsed = performance.now() - wall;
  measuring = false;
  loop.disable();
  stopped = true;
  for (const stop of stops) stop();
  scheduler.stop();
  await Promise.all(vads.map((vad) => vad.close?.()));
  const stats = scheduler.stats;
  if (bytesOut === 0) throw new Error('nothing was sent');
  return {
    calls,
    frames: stats.frames,
    late: stats.lateFrames,
    p50: stats.percentile(0.5),
    p99: stats.percentile(0.99),
    max: stats.maxMs,
    skipped: scheduler.skippedSlots,
    loopDelayP99: loop.percentile(99) / 1e6,
    inboundScored,
    inboundExpected: Math.round((calls * elapsed) / 20),
    vadWindowsSkipped: vads.reduce((n, vad) => n + ((vad as { skippedWindows?: number }).skippedWindows ?? 0), 0),
    cpuPercent: ((used.user + used.system) / 1000 / elapsed) * 100,
    inferenceCpuPercent: (inferenceUsed / elapsed) * 100,
  };
}

console.log(
  `pacing benchmark: ${SECONDS} s per run after ${WARMUP_MS / 1000} s warm-up, VAD ${VAD_KIND}, node ${process.version}, ` +
    `${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)} at start`,
);
console.log(
  'calls  frames_out  late>20ms  p50_ms  p99_ms  max_ms  slots_skipped  loop_p99_ms  inbound_scored/expected  vad_windows_skipped  cpu_%  inference_cpu_%',
);
for (const calls of CALLS) {
  const r = await run(calls);
  console.log(
    [
      String(r.calls).padStart(5),
      String(r.frames).padStart(10),
      String(r.late).padStart(10),
      r.p50.toFixed(1).padStart(7),
      r.p99.toFixed(1).padStart(7),
      r.max.toFixed(1).padStart(7),
      String(r.skipped).padStart(14),
      r.loopDelayP99.toFixed(1).padStart(12),
      `${r.inboundScored}/${r.inboundExpected}`.padStart(24),
      String(r.vadWindowsSkipped).padStart(20),
      r.cpuPercent.toFixed(0).padStart(6),
      r.inferenceCpuPercent.toFixed(0).padStart(16),
    ].join(' '),
  );
}
if (VAD_KIND === 'silero') await (await sharedSileroModel()).close();
