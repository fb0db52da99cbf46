import { concatPcm, resample, SAMPLE_RATE } from '../../media/audio.js';
import type { PcmChunk, TtsProvider, TtsRequest } from './types.js';
import { withRetries } from '../base.js';

/** Kept audio is served in pieces of this many 8 kHz samples (200 ms). */
const PIECE = 1600;

/** One synthesis under way: its chunks so far, shared by every call saying the same words. */
interface Flight {
  chunks: PcmChunk[];
  done: boolean;
  error: unknown;
  wake: Set<() => void>;
}

/**
 * Remembers what a TTS provider said, by voice, language and words, so that a sentence every call
 * says (a first sentence, a goodbye, a voicemail message) is synthesised once per process: it then
 * plays at once, costs nothing at the vendor, and spawns no espeak-ng. Calls asking for the same
 * words while they are being synthesised share that synthesis. A synthesis runs to its end even
 * when the call that asked for it is interrupted (each caller stops reading on its own signal), so
 * what is kept is always whole; the least recently used go first beyond `maxBytes`. Audio comes
 * out at the telephone rate (8 kHz), resampled once here instead of by every call that plays it.
 */
export class CachedTts implements TtsProvider {
  readonly name: string;
  private readonly entries = new Map<string, PcmChunk[]>();
  private readonly flights = new Map<string, Flight>();
  private bytes = 0;

  constructor(
    readonly provider: TtsProvider,
    private readonly options: { maxBytes?: number; maxEntryBytes?: number } = {},
  ) {
    this.name = provider.name;
  }

  async *synthesize(request: TtsRequest): AsyncGenerator<PcmChunk> {
    const key = `${request.voice}\u0000${request.language}\u0000${request.text}`;
    const cached = this.entries.get(key);
    if (cached) {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, cached);
      for (const chunk of cached) {
        if (request.signal?.aborted) return;
        yield chunk;
        // Kept audio is all there at once: hand back to the event loop between chunks, so that a
        // burst of calls saying the same sentence never holds up the 20 ms frame clock.
        await new Promise((resolve) => setImmediate(resolve));
      }
      return;
    }
    const flight = this.flights.get(key) ?? this.start(key, request);
    let next = 0;
    for (;;) {
      if (request.signal?.aborted) return;
      if (next < flight.chunks.length) {
        yield flight.chunks[next++]!;
        continue;
      }
      if (flight.error !== undefined) throw flight.error;
      if (flight.done) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          flight.wake.delete(wake);
          request.signal?.removeEventListener('abort', wake);
          resolve();
        };
        flight.wake.add(wake);
        request.signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }

  private start(key: string, request: TtsRequest): Flight {
    const flight: Flight = { chunks: [], done: false, error: undefined, wake: new Set() };
    this.flights.set(key, flight);
    const wakeAll = () => {
      for (const wake of [...flight.wake]) wake();
    };
    const limit = this.options.maxEntryBytes ?? 2 * 1024 * 1024;
    void (async () => {
      let size = 0;
      try {
        const { signal: _ignored, ...whole } = request;
        // A synthesis that failed retryably before any audio is tried again, once, if that can start
        // within 1.5 s (the caller is waiting for the agent's words).
        const audio = withRetries(() => this.provider.synthesize(whole), {
          retries: 1,
          backoffMs: 200,
          withinMs: 1500,
        });
        for await (const chunk of audio) {
          // At the telephone rate once, here, rather than by every call that plays it.
          flight.chunks.push(
            chunk.sampleRate === SAMPLE_RATE
              ? chunk
              : { pcm: resample(chunk.pcm, chunk.sampleRate, SAMPLE_RATE), sampleRate: SAMPLE_RATE },
          );
          size += chunk.pcm.byteLength;
          wakeAll();
        }
        flight.done = true;
        if (size > 0 && size <= limit) this.keep(key, flight.chunks);
      } catch (error) {
        flight.error = error ?? new Error('speech synthesis failed');
      } finally {
        this.flights.delete(key);
        wakeAll();
      }
    })();
    return flight;
  }

  /** Keeps a whole synthesis (8 kHz already) in 200 ms pieces. */
  private keep(key: string, chunks: PcmChunk[]): void {
    const pcm = concatPcm(chunks.map((c) => c.pcm));
    const pieces: PcmChunk[] = [];
    for (let at = 0; at < pcm.length; at += PIECE)
      pieces.push({ pcm: pcm.slice(at, at + PIECE), sampleRate: SAMPLE_RATE });
    this.entries.set(key, pieces);
    this.bytes += pcm.byteLength;
    const max = this.options.maxBytes ?? 32 * 1024 * 1024;
    for (const [oldest, value] of this.entries) {
      if (this.bytes <= max) break;
      this.entries.delete(oldest);
      this.bytes -= value.reduce((sum, c) => sum + c.pcm.byteLength, 0);
    }
  }
}
