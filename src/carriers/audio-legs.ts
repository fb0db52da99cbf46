import type { Config } from '../config.js';
import type { CallRequest } from '../schemas/call-request.js';
import { audioLegSettings, createAudioLeg, type AudioLeg } from '../media/audio-leg.js';
import { backgroundMixer } from '../media/background.js';
import type { FrameScheduler } from '../media/pacer.js';
import type { MediaTransport } from '../media/transport.js';
import { createVad } from '../media/vad.js';
import type { Speech } from '../providers/speech.js';
import type { TransferResult } from './types.js';

/** What a carrier does for an audio leg beyond its media: hand-over and hang-up in its signalling. */
export interface LegControl {
  transfer(to: string): Promise<TransferResult>;
  hangup(): Promise<void>;
  /** Settles once the far end hears what is sent (AudioLegDeps.ready). */
  ready?: Promise<unknown>;
}

/**
 * Turns a media transport into the CallLeg the engine drives (src/media/audio-leg.ts
 * createAudioLeg: VAD, STT, TTS and in-band DTMF over the stream), with the call's settings;
 * `control` goes into its deps as transfer and hangup.
 */
export type AudioLegFactory = (
  transport: MediaTransport,
  request: CallRequest,
  callId: string,
  control: LegControl,
) => AudioLeg;

export interface CarrierLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

/**
 * The audio pipeline of carrier calls (Twilio media streams, SIP's RTP) from the configuration: the speech providers of
 * OPENLINE_TTS / DEEPGRAM_API_KEY (src/providers/speech.ts), a Silero VAD per call (the energy VAD
 * when onnxruntime cannot load), the background track, recordings under DATA_DIR, paced on the
 * process's 20 ms frame scheduler.
 */
export function carrierAudioLegs(
  config: Pick<Config, 'dataDir'>,
  speech: Speech,
  scheduler: FrameScheduler,
  log?: CarrierLogger,
  onProviderError?: (provider: string) => void,
): AudioLegFactory {
  return (transport, request, callId, control) =>
    createAudioLeg(transport, audioLegSettings(callId, request, speech.ttsVoiceFor(request)), {
      stt: speech.stt,
      tts: speech.tts,
      vad: createVad('silero', log ? { log } : {}),
      scheduler,
      background: backgroundMixer(request.background_track),
      ...(config.dataDir === ':memory:' ? {} : { dataDir: config.dataDir }),
      transfer: control.transfer,
      hangup: control.hangup,
      ...(control.ready && { ready: control.ready }),
      ...(log ? { log } : {}),
      ...(speech.fallback && { fallbackTts: { tts: speech.fallback.tts, voice: speech.fallback.voiceFor(request) } }),
      ...(onProviderError && {
        onProviderError: (kind: 'stt' | 'tts') =>
          onProviderError(kind === 'tts' ? speech.tts.name : (speech.stt?.name ?? 'stt')),
      }),
    });
}
