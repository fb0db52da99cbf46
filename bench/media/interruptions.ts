/**
 * Interruption benchmark (`npm run bench:interruptions`): how fast the agent falls silent when a
 * caller speaks over it, and how a backchannel resumes it, on the audio call leg and call session
 * every carrier uses (in process: the carrier's end plays and records what it is sent in real
 * time, the caller's audio streams back at 20 ms a frame).
 *
 * For each trial the agent says a long sentence; 600 ms in, the caller speaks over it:
 * - "interrupt": "wait wait I have a question" (the recogniser's interim words come 200 ms after
 *   the onset, as a fast real one) -> onset to the agent's last voiced frame at the carrier;
 * - "backchannel": "uh huh" (500 ms) -> onset to silence, then the end of the caller's voice to
 *   the agent's audio again, and whether the sentence was played whole (no turn lost).
 * VADs: Silero (as the server runs) and the energy VAD. Options: --trials=N (default 10);
 * --carrier=twilio measures at the carrier instead, over Twilio media streams with a
 * Deepgram-protocol recogniser (bench/media/interruptions-twilio.ts); --echo [--calls=N] counts the
 * agent's pauses and self-interruptions over two-minute calls on a line that echoes it
 * (bench/media/interruptions-echo.ts).
 */
import { CallSession } from '../../src/calls/session.js';
import { systemClock } from '../../src/clock.js';
import type { Agent, Turn } from '../../src/agent/types.js';
import { audioLegSettings, createAudioLeg } from '../../src/media/audio-leg.js';
import { decodeMulaw, rms } from '../../src/media/audio.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { createVad, type VadKind } from '../../src/media/vad.js';
import { ScriptedStt, ToneTts, createMediaPair } from '../../src/testing/audio-fakes.js';
import { callerUtterance } from './speech.js';
import { callRequest } from '../../src/testing/call-request.js';
import { runTwilio } from './interruptions-twilio.js';
import { runEcho } from './interruptions-echo.js';

const trials = Number(process.argv.find((a) => a.startsWith('--trials='))?.slice(9) ?? 10);
if (process.argv.includes('--carrier=twilio')) {
  await runTwilio(trials);
  process.exit(0);
}
if (process.argv.includes('--echo')) {
  await runEcho(Number(process.argv.find((a) => a.startsWith('--calls='))?.slice(8) ?? 3));
  process.exit(0);
}
const LONG = 'Let me read you the whole list of available appointment times for next week, slowly and clearly.';
const scheduler = new FrameScheduler({ phases: 4, aheadFrames: 2 });
/** The caller's words, spoken by espeak-ng (Silero hears real speech only), without their trailing silence. */
const speech = (text: string): Int16Array => {
  const pcm = decodeMulaw(callerUtterance(text));
  let end = pcm.length;
  while (end > 160 && rms(pcm.subarray(end - 160, end)) < 200) end -= 160;
  return pcm.slice(0, end);
};
const CALLER = {
  interrupt: {
    line: 'wait wait sorry I have a question',
    pcm: speech('Wait, wait, sorry, I have a question about that.'),
  },
  backchannel: { line: 'uh huh', pcm: speech('Uh huh.') },
};

const agent: Agent = {
  label: 'bench',
  respond: (input) => Promise.resolve({ say: input.kind === 'start' ? LONG : null, action: null }),
};

interface Trial {
  /** Caller onset to the agent's last voiced frame sent. */
  silentMs: number;
  /** End of the caller's voice to the agent's first voiced frame again (backchannels). */
  resumedMs: number | null;
  /** The whole sentence was played (backchannels). */
  whole: boolean;
}

async function trial(vadKind: VadKind, kind: 'interrupt' | 'backchannel'): Promise<Trial> {
  const request = callRequest({ task: 'Read the appointment times.' });
  const { transport, far } = createMediaPair({ playoutMs: 40 });
  const { line, pcm } = CALLER[kind];
  const leg = createAudioLeg(transport, audioLegSettings('bench', request, 'test-voice'), {
    stt: new ScriptedStt({ lines: [line], partialEveryFrames: 10 }),
    tts: new ToneTts({ msPerChar: 25 }),
    vad: await createVad(vadKind),
    scheduler,
  });
  const voiced: number[] = [];
  far.onFrame((frame) => {
    if (rms(decodeMulaw(frame)) > 200) voiced.push(performance.now());
  });
  const transcript: Turn[] = [];
  const controller = new AbortController();
  const session = new CallSession({
    callId: 'bench',
    request,
    inbound: true,
    variables: {},
    leg,
    agent,
    clock: systemClock,
    recorder: { transcript: (turn) => Promise.resolve(void transcript.push(turn)) },
    signal: controller.signal,
  });
  const outcome = session.run();
  far.startStreaming();
  while (voiced.length < 30) await new Promise((resolve) => setTimeout(resolve, 5));
  const onset = performance.now();
  const talkMs = (pcm.length / 8000) * 1000;
  far.talk(pcm);
  const voiceEnd = onset + talkMs;
  await new Promise((resolve) => setTimeout(resolve, kind === 'interrupt' ? 2000 : 1500));
  const before = voiced.filter((t) => t < onset + talkMs);
  const silentMs = Math.max(0, (before.at(-1) ?? onset) - onset + 20);
  let resumedMs: number | null = null;
  if (kind === 'backchannel') {
    const again = voiced.find((t) => t > voiceEnd);
    resumedMs = again === undefined ? null : again - voiceEnd;
    while (!transcript.some((t) => t.role === 'assistant')) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  controller.abort();
  await outcome;
  const said = transcript.find((t) => t.role === 'assistant')?.text ?? '';
  return { silentMs, resumedMs, whole: said === LONG };
}

const pct = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
};

console.log(`\nInterruptions: ${trials} trials each, agent audio kept 40 ms ahead at the carrier\n`);
console.log('| VAD | caller | onset -> agent silent p50 / max | voice end -> resumed p50 / max | sentence whole |');
console.log('| --- | --- | ---: | ---: | ---: |');
for (const vad of ['silero', 'energy'] as VadKind[]) {
  for (const kind of ['interrupt', 'backchannel'] as const) {
    const results: Trial[] = [];
    for (let i = 0; i < trials; i++) results.push(await trial(vad, kind));
    const silent = results.map((r) => r.silentMs);
    const resumed = results.map((r) => r.resumedMs).filter((x): x is number => x !== null);
    console.log(
      `| ${vad} | ${kind} | ${pct(silent, 0.5).toFixed(0)} / ${Math.max(...silent).toFixed(0)} ms | ${
        kind === 'backchannel' ? `${pct(resumed, 0.5).toFixed(0)} / ${Math.max(...resumed).toFixed(0)} ms` : '-'
      } | ${kind === 'backchannel' ? `${results.filter((r) => r.whole).length} of ${trials}` : '-'} |`,
    );
  }
}
scheduler.stop();
process.exit(0);
