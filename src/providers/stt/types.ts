/**
 * Streaming speech-to-text port. The audio leg opens one stream per call, writes every inbound
 * 20 ms frame to it and hears interim and final transcripts back.
 */

import { ProviderError } from '../errors.js';

export interface SttOptions {
  /** BCP-47 language of the call (seed `language`, e.g. "en-US"). */
  language: string;
  /** Seed `keywords`: words to boost, each optionally "word:boost". */
  keywords: readonly string[];
  /** Inbound audio format: always mu-law 8 kHz mono on telephone legs. */
  encoding: 'mulaw';
  sampleRate: 8000;
  /**
   * Optional: milliseconds of silence after which the provider may call the utterance finished
   * (Deepgram's `endpointing`). Default: the provider's own setting (300 ms for Deepgram).
   */
  endpointingMs?: number;
}

export type SttEvent =
  /**
   * What has been recognised so far of the utterance under way, since its last `final`: the
   * finals already reported are not repeated (Deepgram's interim results work this way).
   */
  | { type: 'partial'; text: string }
  /**
   * A settled piece of transcript. `endOfUtterance` is true when the provider judged that the
   * speaker finished (Deepgram's speech_final); otherwise more finals of the same turn may follow.
   */
  | { type: 'final'; text: string; endOfUtterance: boolean }
  /** The provider failed; the stream is unusable after this. */
  | { type: 'error'; message: string };

export interface SttStream {
  on(listener: (event: SttEvent) => void): () => void;
  /** One inbound frame of mu-law audio. */
  write(frame: Buffer): void;
  /** Asks the provider to settle what it has heard now (the VAD saw the speaker stop). */
  finalize(): void;
  /**
   * The audio written that no final has covered yet, oldest first (a bounded tail). Once the stream
   * broke, the audio leg gives it to the stream that replaces it, which hears those words again
   * rather than losing them. A provider that cannot tell what its finals covered leaves it out.
   */
  unsettled?(): Buffer[];
  close(): Promise<void>;
}

export interface SttProvider {
  readonly name: string;
  open(options: SttOptions): Promise<SttStream>;
}

/**
 * What `SttProvider.open` rejects with when no stream could be opened (refused key, unreachable
 * server, handshake timeout). `retryable` says whether trying again may succeed. Failures after
 * the stream opened arrive as `error` events instead.
 */
export class SttError extends ProviderError {}
