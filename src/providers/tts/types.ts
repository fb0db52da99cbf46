/**
 * Streaming text-to-speech port. A provider turns text into PCM chunks as they are synthesised,
 * so the first audio can go out before the whole sentence is ready; the audio leg resamples to
 * 8 kHz, frames, paces and sends them.
 */

import { ProviderError } from '../errors.js';

export interface TtsRequest {
  /** The words to say, with the call's pronunciation_guide already applied. */
  text: string;
  /** The provider's own voice id, from the voice catalogue mapping. */
  voice: string;
  /** BCP-47 language of the call. */
  language: string;
  /** Aborted on barge-in: stop synthesising and end the iteration. */
  signal?: AbortSignal;
}

export interface PcmChunk {
  /** 16-bit linear mono PCM. */
  pcm: Int16Array;
  sampleRate: number;
}

export interface TtsProvider {
  readonly name: string;
  synthesize(request: TtsRequest): AsyncIterable<PcmChunk>;
}

/**
 * What a provider throws from `synthesize` when it cannot speak: `retryable` says whether the same
 * request may succeed later (a timeout, 429, 5xx), `status` is the vendor's HTTP status if any. An
 * aborted request is not an error: the iteration just ends.
 */
export class TtsError extends ProviderError {}
