/**
 * WAV files: encoding (16-bit PCM mono or stereo, G.711 mu-law), a tolerant parser (RIFF chunks in
 * any order, odd-size padding, and the streamed headers of tools that write before they know the
 * length, such as `espeak-ng --stdout` with sizes of 0x7ffff000 or 0), and the CallRecorder that
 * writes both directions of a call, time-aligned, to a stereo file as the call goes.
 */
import { open, type FileHandle } from 'node:fs/promises';

import { FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, decodeMulawInto, resample } from './audio.js';

export const WAVE_FORMAT_PCM = 1;
export const WAVE_FORMAT_MULAW = 7;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;

export interface WavFormat {
  /** WAVE_FORMAT_PCM (16-bit) or WAVE_FORMAT_MULAW (8-bit G.711). */
  format: typeof WAVE_FORMAT_PCM | typeof WAVE_FORMAT_MULAW;
  channels: number;
  sampleRate: number;
}

/** Size of the header wavHeader writes before the data: 44 bytes for PCM, 58 for mu-law. */
export function wavHeaderBytes(format: WavFormat['format']): number {
  return format === WAVE_FORMAT_PCM ? 44 : 58;
}

/**
 * The RIFF header for `dataBytes` of audio. Non-PCM formats carry the 18-byte fmt chunk and the
 * fact chunk the format requires.
 */
export function wavHeader(format: WavFormat, dataBytes: number): Buffer {
  const pcm = format.format === WAVE_FORMAT_PCM;
  const bits = pcm ? 16 : 8;
  const blockAlign = (format.channels * bits) / 8;
  const header = Buffer.alloc(wavHeaderBytes(format.format));
  let at = 0;
  at = header.write('RIFF', at, 'latin1');
  at = header.writeUInt32LE(Math.min(0xffffffff, header.length - 8 + dataBytes), at);
  at += header.write('WAVEfmt ', at, 'latin1');
  at = header.writeUInt32LE(pcm ? 16 : 18, at);
  at = header.writeUInt16LE(format.format, at);
  at = header.writeUInt16LE(format.channels, at);
  at = header.writeUInt32LE(format.sampleRate, at);
  at = header.writeUInt32LE(format.sampleRate * blockAlign, at);
  at = header.writeUInt16LE(blockAlign, at);
  at = header.writeUInt16LE(bits, at);
  if (!pcm) {
    at = header.writeUInt16LE(0, at); // cbSize
    at += header.write('fact', at, 'latin1');
    at = header.writeUInt32LE(4, at);
    at = header.writeUInt32LE(Math.floor(dataBytes / blockAlign), at);
  }
  at += header.write('data', at, 'latin1');
  header.writeUInt32LE(Math.min(0xffffffff, dataBytes), at);
  return header;
}

/** 16-bit PCM (interleaved when stereo) as a WAV file. */
export function encodeWav(samples: Int16Array, options: { sampleRate?: number; channels?: number } = {}): Buffer {
  const channels = options.channels ?? 1;
  if (samples.length % channels !== 0) throw new RangeError('sample count is not a multiple of the channels');
  const header = wavHeader(
    { format: WAVE_FORMAT_PCM, channels, sampleRate: options.sampleRate ?? SAMPLE_RATE },
    samples.byteLength,
  );
  return Buffer.concat([header, pcmBytes(samples)]);
}

/** G.711 mu-law bytes (mono) as a format-7 WAV file. */
export function encodeMulawWav(bytes: Uint8Array, sampleRate = SAMPLE_RATE): Buffer {
  const header = wavHeader({ format: WAVE_FORMAT_MULAW, channels: 1, sampleRate }, bytes.length);
  return Buffer.concat([header, bytes]);
}

export interface ParsedWav {
  /** The format tag of the file (1 PCM, 7 mu-law; extensible files report their sub-format). */
  format: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  /** The data chunk's bytes as stored. */
  data: Buffer;
  /** The audio as 16-bit linear PCM, channels interleaved. */
  samples: Int16Array;
  durationMs: number;
}

/** Parses a WAV file of 8- or 16-bit PCM or mu-law. Throws on anything else. */
export function parseWav(file: Buffer): ParsedWav {
  if (file.length < 12 || file.toString('latin1', 0, 4) !== 'RIFF' || file.toString('latin1', 8, 12) !== 'WAVE') {
    throw new Error('not a RIFF/WAVE file');
  }
  // The RIFF size is not trusted: streamed files carry a placeholder there.
  let at = 12;
  let fmt: { format: number; channels: number; sampleRate: number; bits: number; blockAlign: number } | null = null;
  let data: Buffer | null = null;
  while (at + 8 <= file.length && !data) {
    const id = file.toString('latin1', at, at + 4);
    const declared = file.readUInt32LE(at + 4);
    const body = at + 8;
    const remaining = file.length - body;
    if (id === 'fmt ') {
      if (declared < 16 || declared > remaining) throw new Error('bad fmt chunk');
      let format = file.readUInt16LE(body);
      if (format === WAVE_FORMAT_EXTENSIBLE && declared >= 26) format = file.readUInt16LE(body + 24);
      fmt = {
        format,
        channels: file.readUInt16LE(body + 2),
        sampleRate: file.readUInt32LE(body + 4),
        blockAlign: file.readUInt16LE(body + 12),
        bits: file.readUInt16LE(body + 14),
      };
    } else if (id === 'data') {
      // A streamed header says 0 or "as big as possible" (0x7ffff000, 0xffffffff): take the rest.
      const size = declared === 0 || declared > remaining ? remaining : declared;
      data = file.subarray(body, body + size);
    }
    at = body + declared + (declared & 1);
  }
  if (!fmt) throw new Error('WAV file has no fmt chunk');
  if (!data) throw new Error('WAV file has no data chunk');
  if (fmt.channels < 1 || fmt.sampleRate < 1) throw new Error('bad WAV format');
  const samples = decodeSamples(fmt.format, fmt.bits, data);
  const frames = Math.floor(samples.length / fmt.channels);
  return {
    format: fmt.format,
    channels: fmt.channels,
    sampleRate: fmt.sampleRate,
    bitsPerSample: fmt.bits,
    data,
    samples: frames * fmt.channels === samples.length ? samples : samples.subarray(0, frames * fmt.channels),
    durationMs: (frames * 1000) / fmt.sampleRate,
  };
}

function decodeSamples(format: number, bits: number, data: Buffer): Int16Array {
  if (format === WAVE_FORMAT_PCM && bits === 16) {
    const out = new Int16Array(data.length >> 1);
    pcmBytes(out).set(data.subarray(0, out.length * 2));
    return out;
  }
  if (format === WAVE_FORMAT_PCM && bits === 8) {
    const out = new Int16Array(data.length);
    for (let i = 0; i < data.length; i++) out[i] = (data[i]! - 128) << 8;
    return out;
  }
  if (format === WAVE_FORMAT_MULAW && bits === 8) return decodeMulawInto(data, new Int16Array(data.length));
  throw new Error(`unsupported WAV encoding: format ${format}, ${bits} bits`);
}

/** A WAV file as 8 kHz mono PCM (channels averaged, resampled): what the telephone path takes. */
export function wavToPcm8k(file: Buffer | ParsedWav): Int16Array {
  const wav = Buffer.isBuffer(file) ? parseWav(file) : file;
  let mono = wav.samples;
  if (wav.channels > 1) {
    mono = new Int16Array(wav.samples.length / wav.channels);
    for (let i = 0; i < mono.length; i++) {
      let sum = 0;
      for (let c = 0; c < wav.channels; c++) sum += wav.samples[i * wav.channels + c]!;
      mono[i] = Math.round(sum / wav.channels);
    }
  }
  return resample(mono, wav.sampleRate, SAMPLE_RATE);
}

/**
 * The bytes of 16-bit PCM, little-endian as WAV and raw PCM streams carry it (the host order on
 * every supported CPU): a view of `samples`, to be copied (Buffer.from) where it is kept or sent.
 */
export function pcmBytes(samples: Int16Array): Buffer {
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}

export interface CallGridOptions {
  /** Milliseconds, monotonic. Default performance.now. */
  now?: () => number;
  /** How long a slot waits for late frames before it is handed on (jitter). Default 300 ms. */
  holdMs?: number;
  /** Handed on in chunks of at least this much audio. Default 1000 ms. */
  flushMs?: number;
}

/** A recorder's options are its grid's. */
export type CallRecorderOptions = CallGridOptions;

export interface RecordingInfo {
  path: string;
  durationMs: number;
  bytes: number;
}

const INBOUND = 0;
const OUTBOUND = 1;
/**
 * How far behind the clock a side's next slot may fall before its next frame is re-aligned to
 * the clock (the side was silent). Inbound tolerates network jitter; outbound comes from our own
 * pacer, on time.
 */
const SLACK_SLOTS = [10, 2] as const;
const STEREO_FRAME = FRAME_SAMPLES * 2;
const STEREO_FORMAT: WavFormat = { format: WAVE_FORMAT_PCM, channels: 2, sampleRate: SAMPLE_RATE };

/**
 * Both sides of a call on one time line, as 8 kHz 16-bit stereo: left = inbound (the far end),
 * right = outbound (the agent). Both sides sit on one 20 ms grid counted from the grid's start;
 * each side's frames follow one another in their slots, a side that fell silent resumes at the
 * current slot, and slots a side sent nothing for are silence. Slots are handed to `sink` in
 * order, `holdMs` after their time (late frames still find their place), in chunks of `flushMs`,
 * so memory stays at a few hundred milliseconds. The recording and live listening both read it.
 */
export class CallGrid {
  private readonly now: () => number;
  private readonly start: number;
  private readonly holdSlots: number;
  private readonly flushSlots: number;
  /** Interleaved stereo PCM of slots [baseSlot, baseSlot + capacity). */
  private pending: Int16Array;
  private baseSlot = 0;
  private readonly cursor = [0, 0];
  private readonly scratch = new Int16Array(FRAME_SAMPLES);
  private ended = false;

  constructor(
    /** Takes each chunk of interleaved stereo samples; the array is reused after it returns. */
    private readonly sink: (stereo: Int16Array) => void,
    options: CallGridOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.start = this.now();
    this.holdSlots = Math.ceil((options.holdMs ?? 300) / FRAME_MS);
    this.flushSlots = Math.max(1, Math.ceil((options.flushMs ?? 1000) / FRAME_MS));
    this.pending = new Int16Array((this.holdSlots + this.flushSlots + 16) * STEREO_FRAME);
  }

  /** A frame heard from the far end: 160 bytes of mu-law or 160 PCM samples. */
  inbound(frame: Buffer | Int16Array): void {
    this.write(INBOUND, frame);
  }

  /** A frame sent to the far end. */
  outbound(frame: Buffer | Int16Array): void {
    this.write(OUTBOUND, frame);
  }

  /** Hands on everything up to now (or to the last frame written); later frames are ignored. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.flush(Math.max(this.clockSlot(), this.cursor[INBOUND]!, this.cursor[OUTBOUND]!));
  }

  private clockSlot(): number {
    return Math.floor((this.now() - this.start) / FRAME_MS);
  }

  private write(side: number, frame: Buffer | Int16Array): void {
    if (this.ended) return;
    const nowSlot = this.clockSlot();
    let slot = this.cursor[side]!;
    if (slot < nowSlot - SLACK_SLOTS[side as 0 | 1]) slot = nowSlot;
    if (slot < this.baseSlot) slot = this.baseSlot; // later than the hold: the next slot still open
    this.cursor[side] = slot + 1;

    const pcm = frame instanceof Int16Array ? frame : decodeMulawInto(frame, this.scratch);
    const offset = this.ensure(slot) * STEREO_FRAME + side;
    const n = Math.min(FRAME_SAMPLES, pcm.length);
    for (let i = 0; i < n; i++) this.pending[offset + 2 * i] = pcm[i]!;

    if (nowSlot - this.holdSlots >= this.baseSlot + this.flushSlots) this.flush(nowSlot - this.holdSlots);
  }

  /** Index of `slot` in the pending buffer, growing it if a side ran far ahead of the clock. */
  private ensure(slot: number): number {
    const index = slot - this.baseSlot;
    const capacity = this.pending.length / STEREO_FRAME;
    if (index >= capacity) {
      const bigger = new Int16Array(Math.max(capacity * 2, index + 16) * STEREO_FRAME);
      bigger.set(this.pending);
      this.pending = bigger;
    }
    return index;
  }

  /** Hands slots [baseSlot, endSlot) to the sink and shifts the rest down. */
  private flush(endSlot: number): void {
    const count = endSlot - this.baseSlot;
    if (count <= 0) return;
    this.ensure(endSlot - 1);
    const samples = count * STEREO_FRAME;
    this.sink(this.pending.subarray(0, samples));
    const keep = this.pending.length - samples;
    this.pending.copyWithin(0, samples);
    this.pending.fill(0, keep);
    this.baseSlot = endSlot;
  }
}

/**
 * Records a call as an 8 kHz 16-bit stereo WAV (the CallGrid's two sides). Audio is written to
 * disk as the call goes (the header carries streamed sizes until close() finalises them).
 */
export class CallRecorder {
  private readonly grid: CallGrid;
  private dataBytes = 0;
  /** Disk writes in order; null once the file could not be opened. Never rejects. */
  private chain: Promise<FileHandle | null>;
  private failure: unknown = null;
  private closing: Promise<RecordingInfo> | null = null;

  constructor(
    readonly path: string,
    options: CallRecorderOptions = {},
  ) {
    this.grid = new CallGrid((stereo) => this.append(stereo), options);
    // Streamed sizes until close(): a reader of the unfinished file takes the data to its end.
    this.chain = open(path, 'w').then(
      async (file) => {
        await file.write(wavHeader(STEREO_FORMAT, 0x7ffff000)).catch((error: unknown) => (this.failure ??= error));
        return file;
      },
      (error: unknown) => {
        this.failure ??= error;
        return null;
      },
    );
  }

  /** A frame heard from the far end: 160 bytes of mu-law or 160 PCM samples. */
  inbound(frame: Buffer | Int16Array): void {
    if (!this.closing) this.grid.inbound(frame);
  }

  /** A frame sent to the far end. */
  outbound(frame: Buffer | Int16Array): void {
    if (!this.closing) this.grid.outbound(frame);
  }

  /** Writes what is left, finalises the header and closes the file. Idempotent. */
  close(): Promise<RecordingInfo> {
    this.closing ??= (async () => {
      this.grid.end();
      const file = await this.chain;
      if (!file) throw this.failure;
      try {
        if (this.failure) throw this.failure;
        await file.write(wavHeader(STEREO_FORMAT, this.dataBytes), 0, wavHeaderBytes(WAVE_FORMAT_PCM), 0);
      } finally {
        await file.close();
      }
      return {
        path: this.path,
        durationMs: (this.dataBytes / 4 / SAMPLE_RATE) * 1000,
        bytes: this.dataBytes + wavHeaderBytes(WAVE_FORMAT_PCM),
      };
    })();
    return this.closing;
  }

  private append(stereo: Int16Array): void {
    const chunk = Buffer.from(pcmBytes(stereo)); // a copy: the grid reuses its buffer
    this.dataBytes += chunk.length;
    this.chain = this.chain.then(async (file) => {
      if (file && !this.failure) await file.write(chunk).catch((error: unknown) => (this.failure ??= error));
      return file;
    });
  }
}
