import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { TwilioEmulator, type EmulatorAccount } from '../../src/testing/twilio-emulator.js';
import { audioLegSettings, createAudioLeg } from '../../src/media/audio-leg.js';
import { FRAME_SAMPLES, rms } from '../../src/media/audio.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import type { Vad } from '../../src/media/vad.js';
import { ScriptedStt, ToneTts } from '../../src/testing/audio-fakes.js';
import { freeTcpPort } from '../../src/testing/ports.js';

/** The server's own Twilio account in these tests, and a customer's (BYO through encrypted_key). */
export const SERVER: EmulatorAccount = { accountSid: `AC${'1'.repeat(32)}`, authToken: 'server-auth-token' };
export const CUSTOMER: EmulatorAccount = { accountSid: `AC${'2'.repeat(32)}`, authToken: 'customer-auth-token' };
export const OUR_NUMBER = '+12025550400';

export interface TwilioTest {
  t: TestApp;
  emulator: TwilioEmulator;
  /** The scripted STT of calls answered from now on: what the far end says, one line per utterance. */
  hear(lines: string[]): ScriptedStt;
  publicUrl: string;
  close(): Promise<void>;
}

/**
 * Openline listening on loopback with Twilio credentials pointing at the emulator, and the audio
 * pipeline on test fakes: a scripted STT (the caller's lines, one per utterance heard), a tone TTS
 * (a word is a tone, 10 ms per character) and a level VAD.
 */
export async function startTwilioTest(
  options: {
    lines?: string[];
    server?: boolean;
    /** The audio pipeline the server's configuration builds (with `env`), instead of the fakes. */
    configuredAudio?: boolean;
    env?: Record<string, string>;
  } = {},
): Promise<TwilioTest> {
  const emulator = await TwilioEmulator.start([SERVER, CUSTOMER]);
  const port = await freeTcpPort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const t = await createTestApp({
    env: {
      ...(options.server === false
        ? {}
        : { TWILIO_ACCOUNT_SID: SERVER.accountSid, TWILIO_AUTH_TOKEN: SERVER.authToken }),
      OPENLINE_TWILIO_API_URL: emulator.url,
      OPENLINE_PUBLIC_URL: publicUrl,
      TWILIO_PHONE_NUMBER: OUR_NUMBER,
      ...options.env,
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  // Paced as the server paces carrier audio: audioAheadMs (40 ms) kept at the carrier.
  const scheduler = new FrameScheduler({ phases: 4, aheadFrames: t.services.config.audioAheadMs / 20 });
  let stt = new ScriptedStt({ lines: options.lines ?? [] });
  const levelVad: Vad = { name: 'level', process: (frame) => (rms(frame) > 500 ? 1 : 0), reset() {} };
  if (!options.configuredAudio)
    t.services.twilio.useAudioLeg((transport, request, callId, control) =>
      createAudioLeg(transport, audioLegSettings(callId, request, 'test-voice'), {
        stt,
        tts: new ToneTts({ msPerChar: 10 }),
        vad: levelVad,
        scheduler,
        transfer: control.transfer,
        hangup: control.hangup,
      }),
    );
  await t.services.startWorkers();
  return {
    t,
    emulator,
    hear(lines) {
      stt = new ScriptedStt({ lines });
      return stt;
    },
    publicUrl,
    async close() {
      await t.close();
      scheduler.stop();
      await emulator.close();
    },
  };
}

/** How many 20 ms frames of `pcm` carry sound. */
export function voicedFrames(pcm: Int16Array): number {
  let n = 0;
  for (let i = 0; i + FRAME_SAMPLES <= pcm.length; i += FRAME_SAMPLES) {
    if (rms(pcm.subarray(i, i + FRAME_SAMPLES)) > 1000) n++;
  }
  return n;
}
