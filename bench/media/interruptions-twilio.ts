/**
 * The interruption benchmark over Twilio (`npm run bench:interruptions -- --carrier=twilio`): the
 * whole server on loopback (the API places the call, Twilio's REST API and media stream are the
 * local emulator's, src/testing/twilio-emulator.ts), the speech recogniser a Deepgram-protocol
 * server (src/testing/fake-deepgram.ts) whose first interim words arrive 200 ms of voice after the
 * onset, as a fast real one; or no recogniser at all (VAD alone).
 *
 * Each trial is one outbound call: the agent says a long first sentence; 1.2 s into the stream the
 * callee says "Wait, wait, sorry, I have a question about that." (espeak-ng) over it. Measured at
 * the carrier, from the onset of the callee's voice (the first 5 ms of it above the noise, as the
 * emulator sent it):
 * - silent: the end of the agent's last voiced frame Twilio played (frames dropped by a `clear`
 *   never play), i.e. when the callee stops hearing the agent;
 * - last sent: the arrival of the agent's last voiced frame on the websocket before that;
 * - clear: the arrival of the stream's `clear` (sent when the words make an interruption);
 * - cut: the call's transcript keeps the first sentence cut where it was heard ("...").
 */
import { performance } from 'node:perf_hooks';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { TwilioEmulator, type EmulatorAccount } from '../../src/testing/twilio-emulator.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { ToneTts } from '../../src/testing/audio-fakes.js';
import { freeTcpPort } from '../../src/testing/ports.js';
import { audioLegSettings, createAudioLeg } from '../../src/media/audio-leg.js';
import { decodeMulaw, rms } from '../../src/media/audio.js';
import { backgroundMixer } from '../../src/media/background.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { createVad, type VadKind } from '../../src/media/vad.js';
import { DeepgramStt } from '../../src/providers/stt/deepgram.js';
import { callerUtterance } from './speech.js';

const ACCOUNT: EmulatorAccount = { accountSid: `AC${'7'.repeat(32)}`, authToken: 'bench-auth-token' };
const LONG =
  'Let me read you the whole list of available appointment times for next week, slowly and clearly, ' +
  'starting with Monday morning at nine and going on through the afternoon until five.';
const LINE = 'wait wait sorry I have a question';
/** When the callee starts talking, ms after the stream started (the agent has been talking ~1 s). */
const AT_MS = 1200;

/** The callee's words without trailing silence, and where its voice starts (ms into the PCM). */
function callerSpeech(): { pcm: Int16Array; leadMs: number; talkMs: number } {
  const full = decodeMulaw(callerUtterance('Wait, wait, sorry, I have a question about that.'));
  let end = full.length;
  while (end > 160 && rms(full.subarray(end - 160, end)) < 200) end -= 160;
  const pcm = full.slice(0, end);
  let lead = 0;
  while (lead + 40 <= pcm.length && rms(pcm.subarray(lead, lead + 40)) < 200) lead += 40;
  return { pcm, leadMs: lead / 8, talkMs: ((end - lead) / 8000) * 1000 };
}

export interface TwilioTrial {
  /** Onset -> the end of the agent's last voiced frame played at the carrier. */
  silentMs: number;
  /** Onset -> the agent's last voiced frame (before the silence) arriving at the carrier. */
  lastSentMs: number;
  /** Onset -> the stream's `clear` arriving, or null without one. */
  clearMs: number | null;
  /** The first sentence was cut (an interruption) in the transcript. */
  cut: boolean;
  /** The call record's own figure (latency.interruptions.silent_ms_max). */
  recordSilentMs: number | null;
}

interface Setup {
  t: TestApp;
  emulator: TwilioEmulator;
  deepgram: FakeDeepgram;
  scheduler: FrameScheduler;
}

async function setUp(vad: VadKind, recogniser: boolean): Promise<Setup> {
  const emulator = await TwilioEmulator.start([ACCOUNT]);
  // Every voiced stretch the recogniser hears gets the interruption's words (espeak's commas may split it).
  const deepgram = await FakeDeepgram.start({ transcripts: Array.from({ length: 500 }, () => LINE), wordMs: 200 });
  const port = await freeTcpPort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const t = await createTestApp({
    env: {
      TWILIO_ACCOUNT_SID: ACCOUNT.accountSid,
      TWILIO_AUTH_TOKEN: ACCOUNT.authToken,
      OPENLINE_TWILIO_API_URL: emulator.url,
      OPENLINE_PUBLIC_URL: publicUrl,
      TWILIO_PHONE_NUMBER: '+12025550400',
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  // As the server builds its carrier legs (src/carriers/audio-legs.ts), with the VAD and recogniser under test.
  const scheduler = new FrameScheduler({ phases: 4, aheadFrames: t.services.config.audioAheadMs / 20 });
  t.services.twilio.useAudioLeg((transport, request, callId, control) =>
    createAudioLeg(transport, audioLegSettings(callId, request, 'bench-voice'), {
      stt: recogniser ? new DeepgramStt({ apiKey: deepgram.apiKey, baseUrl: deepgram.url }) : null,
      tts: new ToneTts({ msPerChar: 25 }),
      vad: createVad(vad),
      scheduler,
      background: backgroundMixer(request.background_track),
      transfer: control.transfer,
      hangup: control.hangup,
    }),
  );
  await t.services.startWorkers();
  return { t, emulator, deepgram, scheduler };
}

async function tearDown(s: Setup): Promise<void> {
  await s.t.close();
  s.scheduler.stop();
  await s.emulator.close();
  await s.deepgram.close();
}

let numbers = 0;
async function trial(s: Setup, speech: ReturnType<typeof callerSpeech>): Promise<TwilioTrial> {
  const to = `+1202555${String(1000 + numbers++).padStart(4, '0')}`;
  s.emulator.scripts.set(to, { say: [{ atMs: AT_MS, pcm: speech.pcm }], hangupAfterMs: AT_MS + 4000 });
  const sent = await s.t.request('POST', '/v1/calls', {
    phone_number: to,
    task: 'Read the appointment times.',
    first_sentence: LONG,
  });
  if (sent.status !== 200) throw new Error(`the call was refused: ${JSON.stringify(sent.body)}`);
  const call = await waitForCall(s.t, String(sent.body.call_id));
  const far = s.emulator.callTo(to)!;
  const onset = AT_MS + speech.leadMs;
  const voiced = (f: { payload: Buffer }) => rms(decodeMulaw(f.payload)) > 200;
  const played = far.frames.filter((f) => !f.dropped).sort((a, b) => a.playAtMs - b.playAtMs);
  const talking = played.some((f) => voiced(f) && f.playAtMs >= onset - 100 && f.playAtMs < onset);
  if (!talking) throw new Error('the agent was not talking at the onset: nothing to measure');
  // The first frame played from the onset on that is not the agent's voice: it fell silent there.
  const silentAt = played.find((f) => f.playAtMs + 20 > onset && !voiced(f))?.playAtMs ?? Infinity;
  const lastVoiced = played.filter((f) => voiced(f) && f.playAtMs < silentAt).at(-1)!;
  if (process.env.BENCH_VERBOSE) {
    const before = far.frames.filter((f) => f.arrivedMs < onset);
    const cushion = before.map((f) => f.playAtMs - f.arrivedMs);
    console.error(
      `buffered at the carrier before the onset: last ${cushion.at(-1)?.toFixed(0)} ms, max ${Math.max(...cushion).toFixed(0)} ms; ` +
        `frames ${before.length}, first at ${before[0]?.arrivedMs.toFixed(0)} ms`,
    );
  }
  const clearAt = far.clearedAtMs.find((at) => at >= onset);
  const first = (call.transcripts as { user: string; text: string }[]).find((t) => t.user === 'assistant');
  const interruptions = (call.latency as { interruptions?: { silent_ms_max: number | null } } | null)?.interruptions;
  return {
    silentMs: silentAt - onset,
    lastSentMs: lastVoiced.arrivedMs - onset,
    clearMs: clearAt === undefined ? null : clearAt - onset,
    cut: first?.text.endsWith('...') ?? false,
    recordSilentMs: interruptions?.silent_ms_max ?? null,
  };
}

const pct = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
};
const ms = (xs: number[]) => (xs.length ? `${pct(xs, 0.5).toFixed(0)} / ${Math.max(...xs).toFixed(0)} ms` : '-');

/** Runs the Twilio table: `trials` calls per VAD, with and without the recogniser. */
export async function runTwilio(trials: number): Promise<void> {
  const speech = callerSpeech();
  console.log(
    `\nInterruptions over Twilio media streams (emulator, loopback): ${trials} calls each, ` +
      `the callee's voice ${speech.talkMs.toFixed(0)} ms, agent audio kept 40 ms ahead\n`,
  );
  console.log(
    '| VAD | recogniser | onset -> silent at the carrier p50 / max | -> last voiced frame sent | -> clear | cut | record silent_ms p50 |',
  );
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const vad of ['silero', 'energy'] as VadKind[]) {
    for (const recogniser of [true, false]) {
      const s = await setUp(vad, recogniser);
      const results: TwilioTrial[] = [];
      const started = performance.now();
      // One call first, not measured: the process loads the VAD's model and warms up its code.
      await trial(s, speech);
      for (let i = 0; i < trials; i++) results.push(await trial(s, speech));
      await tearDown(s);
      const clears = results.map((r) => r.clearMs).filter((x): x is number => x !== null);
      const record = results.map((r) => r.recordSilentMs).filter((x): x is number => x !== null);
      console.log(
        `| ${vad} | ${recogniser ? 'Deepgram protocol, first words +200 ms' : 'none (VAD alone)'} | ${ms(
          results.map((r) => r.silentMs),
        )} | ${ms(results.map((r) => r.lastSentMs))} | ${ms(clears)} | ${results.filter((r) => r.cut).length} of ${trials} | ${
          record.length ? `${pct(record, 0.5).toFixed(0)} ms` : '-'
        } |`,
      );
      if (process.env.BENCH_VERBOSE) console.error(`(${((performance.now() - started) / 1000).toFixed(1)} s)`);
    }
  }
}
