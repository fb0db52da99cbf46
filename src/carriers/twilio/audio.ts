import type { Config } from '../../config.js';
import { audioLegSettings, createAudioLeg } from '../../media/audio-leg.js';
import { backgroundMixer } from '../../media/background.js';
import type { FrameScheduler } from '../../media/pacer.js';
import { createVad } from '../../media/vad.js';
import type { Speech } from '../../providers/speech.js';
import type { AudioLegFactory, TwilioLogger } from './carrier.js';

/**
 * The audio pipeline of Twilio calls from the configuration: the speech providers of
 * OPENLINE_TTS / DEEPGRAM_API_KEY (src/providers/speech.ts), a Silero VAD per call (the energy VAD
 * when onnxruntime cannot load), the background track, recordings under DATA_DIR, paced on the
 * process's 20 ms frame scheduler.
 */
export function twilioAudioLegs(
  config: Pick<Config, 'dataDir'>,
  speech: Speech,
  scheduler: FrameScheduler,
  log?: TwilioLogger,
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
      ...(log ? { log } : {}),
      ...(onProviderError && {
        onProviderError: (kind: 'stt' | 'tts') =>
          onProviderError(kind === 'tts' ? speech.tts.name : (speech.stt?.name ?? 'stt')),
      }),
    });
}
