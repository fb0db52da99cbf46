/**
 * Byte streams to PCM chunks, shared by the TTS vendors: raw 16-bit little-endian PCM split at any
 * byte (an HTTP chunk may end in the middle of a sample), a WAV stream whose header carries
 * placeholder sizes (espeak-ng writing to a pipe), and mu-law.
 */
import { decodeMulaw } from '../../media/audio.js';
import { TtsError, type PcmChunk } from './types.js';
import type { Watchdog } from '../base.js';
import { errorMessage } from '../../domain/records.js';

const EMPTY = new Int16Array(0);

/** Turns 16-bit little-endian PCM bytes into whole samples, keeping an odd byte for the next push. */
export class Pcm16Decoder {
  private carry: number | undefined;

  push(bytes: Uint8Array): Int16Array {
    const available = bytes.length + (this.carry === undefined ? 0 : 1);
    const out = new Int16Array(available >> 1);
    let at = 0;
    let i = 0;
    if (this.carry !== undefined && bytes.length > 0) {
      out[i++] = ((this.carry | (bytes[0]! << 8)) << 16) >> 16;
      this.carry = undefined;
      at = 1;
    }
    for (; at + 1 < bytes.length; at += 2) out[i++] = ((bytes[at]! | (bytes[at + 1]! << 8)) << 16) >> 16;
    if (at < bytes.length) this.carry = bytes[at];
    return out;
  }
}

/** Largest header we wait through before deciding a stream is not a WAV we can read. */
const MAX_HEADER_BYTES = 64 * 1024;

/**
 * Reads a streamed WAV: parses the RIFF header as it arrives, then passes the data chunk's bytes
 * through as samples until the stream ends. The RIFF and data sizes are ignored, because a writer
 * that streams (espeak-ng --stdout) cannot know them and writes placeholders.
 */
export class WavStreamReader {
  /** Set once the `fmt ` chunk has been read. */
  sampleRate: number | undefined;
  private header = Buffer.alloc(0);
  private inData = false;
  private readonly pcm = new Pcm16Decoder();

  push(bytes: Uint8Array): Int16Array {
    if (this.inData) return this.pcm.push(bytes);
    this.header = Buffer.concat([this.header, bytes]);
    const h = this.header;
    if (h.length < 12) return EMPTY;
    if (h.toString('ascii', 0, 4) !== 'RIFF' || h.toString('ascii', 8, 12) !== 'WAVE') {
      throw new Error('the audio is not a RIFF/WAVE stream');
    }
    for (let at = 12; at + 8 <= h.length;) {
      const id = h.toString('ascii', at, at + 4);
      const size = h.readUInt32LE(at + 4);
      if (id === 'data') {
        if (this.sampleRate === undefined) throw new Error('the WAV stream has no fmt chunk before its data');
        this.inData = true;
        const rest = h.subarray(at + 8);
        this.header = Buffer.alloc(0);
        return this.pcm.push(rest);
      }
      if (at + 8 + size > h.length) break;
      if (id === 'fmt ') this.readFormat(h.subarray(at + 8, at + 8 + size));
      at += 8 + size + (size & 1);
    }
    if (h.length > MAX_HEADER_BYTES) throw new Error('the WAV stream has no data chunk');
    return EMPTY;
  }

  private readFormat(fmt: Buffer): void {
    if (fmt.length < 16) throw new Error('the WAV fmt chunk is too short');
    const format = fmt.readUInt16LE(0);
    const channels = fmt.readUInt16LE(2);
    const bits = fmt.readUInt16LE(14);
    if (format !== 1 || channels !== 1 || bits !== 16) {
      throw new Error(`the WAV stream is not 16-bit mono PCM (format ${format}, ${channels} channels, ${bits} bits)`);
    }
    this.sampleRate = fmt.readUInt32LE(4);
  }
}

/**
 * Yields a streamed HTTP body as PCM chunks as the bytes arrive. An abort of `signal` ends the
 * iteration quietly (the fetch underneath is aborted by the same signal). A body that breaks off,
 * or sends nothing for `watchdog.ms` (the fetch carries the watchdog's signal too), is a retryable
 * TtsError naming the vendor.
 */
export async function* pcmFromBody(
  body: AsyncIterable<Uint8Array>,
  options: {
    vendor: string;
    sampleRate: number;
    encoding: 'pcm16' | 'mulaw';
    signal: AbortSignal | undefined;
    watchdog: Watchdog;
    /**
     * The server may send a WAV stream instead of the raw PCM asked for (OpenAI-compatible servers
     * that ignore response_format): a body opening with RIFF is read as WAV, at its header's rate.
     */
    wavAllowed?: boolean;
  },
): AsyncGenerator<PcmChunk> {
  const { signal, watchdog } = options;
  const decoder = new Pcm16Decoder();
  // Until four bytes came, whether the body is a WAV stream is not known.
  let opening: Buffer | undefined = options.wavAllowed ? Buffer.alloc(0) : undefined;
  let wav: WavStreamReader | undefined;
  const decode = (bytes: Uint8Array): Int16Array => {
    if (wav) return wav.push(bytes);
    if (opening) {
      const head = Buffer.concat([opening, bytes]);
      opening = head.length < 4 ? head : undefined;
      if (opening) return EMPTY;
      if (head.toString('latin1', 0, 4) === 'RIFF') {
        wav = new WavStreamReader();
        return wav.push(head);
      }
      bytes = head;
    }
    return options.encoding === 'mulaw' ? decodeMulaw(bytes) : decoder.push(bytes);
  };
  try {
    watchdog.resume();
    for await (const bytes of body) {
      if (signal?.aborted) return;
      const pcm = decode(bytes);
      if (pcm.length === 0) continue;
      watchdog.pause();
      yield { pcm, sampleRate: wav?.sampleRate ?? options.sampleRate };
      watchdog.resume();
    }
    // A body shorter than four bytes: raw audio after all.
    if (opening && opening.length > 0 && !signal?.aborted) {
      const pcm = options.encoding === 'mulaw' ? decodeMulaw(opening) : decoder.push(opening);
      if (pcm.length > 0) yield { pcm, sampleRate: options.sampleRate };
    }
  } catch (error) {
    if (signal?.aborted) return;
    if (watchdog.fired) {
      throw new TtsError(`${options.vendor} sent no audio for ${watchdog.ms} ms`, true, undefined, { cause: error });
    }
    const message = errorMessage(error);
    throw new TtsError(`${options.vendor} stopped sending audio: ${message}`, true, undefined, { cause: error });
  }
}
