/**
 * Inbound frame cost (`npm run bench:media-inbound`): what one caller frame costs the event loop,
 * from the websocket message's bytes to the VAD's score applied, without sockets or a carrier
 * process, so that nothing but the server's own work is timed.
 *
 * N audio legs (TwilioMediaStream over an in-memory socket -> audio leg with its VAD, tone
 * detector and a scripted STT) get a Twilio `media` message each every 20 ms, in real time, the
 * caller speaking (espeak-ng) on a 6 s cycle. Printed: the synchronous handling of a message (as
 * the socket's message handler runs it), mean and p99, and this process's CPU per frame in all
 * (scores applied, turns, timers; Silero's inference process not included).
 *
 * Options: --calls=N (default 200), --seconds=N (default 20), --vad=silero|energy (default both).
 */
import { parseStreamMessage, TwilioMediaStream } from '../../src/carriers/twilio/media-stream.js';
import { createAudioLeg, audioLegSettings, type AudioLeg } from '../../src/media/audio-leg.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { closeSharedSileroModel, sharedSileroModel } from '../../src/media/vad-silero.js';
import { createVad, type VadKind } from '../../src/media/vad.js';
import { ScriptedStt, ToneTts } from '../../src/testing/audio-fakes.js';
import { callRequest } from '../../src/testing/call-request.js';
import { MemorySocket } from '../../src/testing/memory-socket.js';
import { callerUtterance } from './speech.js';

const args = process.argv.slice(2);
const option = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const CALLS = Number(option('calls') ?? 200);
const SECONDS = Number(option('seconds') ?? 20);
const vadOption = option('vad') as VadKind | undefined;
if (!(Number.isInteger(CALLS) && CALLS > 0)) throw new Error('--calls must be a positive integer');
if (!(SECONDS >= 1)) throw new Error('--seconds must be at least 1');
if (vadOption !== undefined && vadOption !== 'silero' && vadOption !== 'energy')
  throw new Error('--vad must be silero or energy');

const FRAME_MS = 20;
const CYCLE_FRAMES = 300;
const SILENT = Buffer.alloc(160, 0xff).toString('base64');

interface Call {
  socket: MemorySocket;
  stream: TwilioMediaStream;
  leg: AudioLeg;
  seq: number;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

async function measure(vadKind: VadKind, speech: string[]): Promise<void> {
  const scheduler = new FrameScheduler({ phases: 4, aheadFrames: 2 });
  const calls: Call[] = [];
  for (let i = 0; i < CALLS; i++) {
    // Outbound messages are dropped, not kept.
    const socket = new MemorySocket(false);
    const stream = new TwilioMediaStream(socket.ws, {
      streamSid: `MZinbound${i}`,
      callSid: `CAinbound${i}`,
      accountSid: 'ACinbound',
      customParameters: {},
    });
    const leg = createAudioLeg(
      stream,
      audioLegSettings(`inbound-${i}`, callRequest({ background_track: 'none' }), 'x'),
      {
        stt: new ScriptedStt({ lines: Array(100).fill('what are your opening hours'), finalLatencyMs: 50 }),
        tts: new ToneTts({ firstChunkMs: 80, msPerChar: 60 }),
        vad: await createVad(vadKind),
        scheduler,
      },
    );
    calls.push({ socket, stream, leg, seq: 0 });
  }
  const frames = Math.round((SECONDS * 1000) / FRAME_MS);
  const handled = new Float64Array(frames * CALLS);
  let n = 0;
  const began = performance.now();
  const cpuStart = process.cpuUsage();
  for (let f = 0; f < frames; f++) {
    // Real time: the VAD's answers and the legs' timers run between ticks, as on a live server.
    const due = began + f * FRAME_MS;
    const wait = due - performance.now();
    await new Promise((resolve) => (wait > 0 ? setTimeout(resolve, wait) : setImmediate(resolve)));
    for (let c = 0; c < CALLS; c++) {
      const call = calls[c]!;
      // Calls talk at staggered moments of the cycle, as the media benchmark's callers do.
      const at = (f + c * 7) % CYCLE_FRAMES;
      const payload = at < speech.length ? speech[at]! : SILENT;
      const message = Buffer.from(
        `{"event":"media","sequenceNumber":"${++call.seq}","media":{"track":"inbound","chunk":"${f + 1}",` +
          `"timestamp":"${f * FRAME_MS}","payload":"${payload}"},"streamSid":"MZinbound${c}"}`,
      );
      const t0 = performance.now();
      const parsed = parseStreamMessage(message);
      if (parsed) call.stream.receive(parsed);
      handled[n++] = performance.now() - t0;
    }
  }
  const wall = performance.now() - began;
  const cpu = process.cpuUsage(cpuStart);
  await Promise.all(calls.map((call) => call.leg.hangup()));
  scheduler.stop();
  const sorted = handled.subarray(0, n).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  const skipped = calls.reduce((k, call) => k + (call.leg.skippedFrames ?? 0), 0);
  const us = (ms: number) => (ms * 1000).toFixed(1);
  console.log(
    `  ${vadKind} VAD, ${CALLS} calls, ${n} frames: message handled mean ${us(sum / n)} us, p50 ${us(percentile(sorted, 0.5))} us, ` +
      `p99 ${us(percentile(sorted, 0.99))} us, max ${us(sorted[n - 1]!)} us; this process's CPU per frame in all ` +
      `${us((cpu.user + cpu.system) / 1000 / n)} us (${(((cpu.user + cpu.system) / 1000 / wall) * 100).toFixed(1)}% of a core); ` +
      `frames the VAD skipped ${skipped}`,
  );
}

const speech = callerUtterance();
const payloads: string[] = [];
for (let at = 0; at + 160 <= speech.length; at += 160) payloads.push(speech.subarray(at, at + 160).toString('base64'));
console.log(`bench:media-inbound: ${CALLS} calls, ${SECONDS} s, Node ${process.version}`);
for (const kind of vadOption ? [vadOption] : (['silero', 'energy'] as const)) {
  if (kind === 'silero') await sharedSileroModel();
  await measure(kind, payloads);
}
await closeSharedSileroModel();
process.exit(0);
