/**
 * The speech providers the configuration asks for (OPENLINE_TTS, DEEPGRAM_API_KEY, ...), built once
 * at start-up. The audio leg speaks through `tts` with the voice `ttsVoiceFor` picks and listens
 * through `stt`; without Deepgram settings `stt` is null and the leg uses what else it has.
 */
import type { Config } from '../config.js';
import { providerVoiceId } from '../domain/voices.js';
import { DeepgramStt } from './stt/deepgram.js';
import type { SttProvider } from './stt/types.js';
import { ElevenLabsTts } from './tts/elevenlabs.js';
import { EspeakTts, espeakAvailable, espeakVoiceFor } from './tts/espeak.js';
import { OpenAiTts } from './tts/openai.js';
import type { TtsProvider } from './tts/types.js';
import { CachedTts } from './tts/cache.js';

export interface Speech {
  tts: TtsProvider;
  stt: SttProvider | null;
  /**
   * The TTS provider's voice id for a call: its `voice` (curated name, id or RL/HQ form; unknown
   * or absent = the provider's default voice) and, for espeak-ng, its `language`.
   */
  ttsVoiceFor(request: { voice?: string | null; language?: string | null }): string;
  /**
   * The voice that says a call's sentences when its provider fails for good (after its retries):
   * the local espeak-ng voice, when it is installed and is not already the call's voice.
   */
  fallback: { tts: TtsProvider; voiceFor(request: { language?: string | null }): string } | null;
}

export function createSpeech(config: Pick<Config, 'speech'>, options: { localVoice?: boolean } = {}): Speech {
  const { speech } = config;
  let tts: TtsProvider;
  switch (speech.tts) {
    case 'openai':
      tts = new OpenAiTts(speech.openai);
      break;
    case 'elevenlabs':
      // speechConfig refuses OPENLINE_TTS=elevenlabs without a key.
      tts = new ElevenLabsTts({ ...speech.elevenlabs, apiKey: speech.elevenlabs.apiKey ?? '' });
      break;
    case 'espeak':
      tts = new EspeakTts();
      break;
  }
  const stt = speech.deepgram ? new DeepgramStt(speech.deepgram) : null;
  const vendor = speech.tts;
  const local = vendor !== 'espeak' && (options.localVoice ?? espeakAvailable());
  return {
    // What every call says alike (first sentences, goodbyes) is synthesised once.
    tts: new CachedTts(tts),
    stt,
    fallback: local
      ? {
          tts: new CachedTts(new EspeakTts()),
          voiceFor: (request) => espeakVoiceFor('', request.language ?? 'en-US'),
        }
      : null,
    ttsVoiceFor(request) {
      const voice = providerVoiceId(vendor, request.voice);
      return vendor === 'espeak' ? espeakVoiceFor(voice, request.language ?? 'en-US') : voice;
    },
  };
}
