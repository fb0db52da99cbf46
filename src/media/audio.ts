/**
 * Audio primitives every part of the voice pipeline shares: the telephone format (G.711 mu-law,
 * 8 kHz, mono, 20 ms frames), conversions between mu-law and 16-bit linear PCM, resampling, and
 * frame-level measurements. Pure functions over typed arrays; no I/O.
 */

/** Telephone audio: 8,000 samples a second. */
export const SAMPLE_RATE = 8000;
/** One media frame lasts 20 ms (Twilio media streams, RTP ptime 20). */
export const FRAME_MS = 20;
/** Samples (and mu-law bytes) in one 20 ms frame at 8 kHz. */
export const FRAME_SAMPLES = (SAMPLE_RATE * FRAME_MS) / 1000;
/** mu-law byte of digital silence (linear 0). */
export const MULAW_SILENCE = 0xff;

const BIAS = 0x84;
const CLIP = 32635;

/** Encodes one linear sample (-32768..32767) as a G.711 mu-law byte. */
export function linearToMulaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** Decodes one G.711 mu-law byte to a linear sample. */
export function mulawToLinear(byte: number): number {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + BIAS) << exponent) - BIAS;
  return u & 0x80 ? -magnitude : magnitude;
}

const DECODE_TABLE = Int16Array.from({ length: 256 }, (_, b) => mulawToLinear(b));
const ENCODE_TABLE = Uint8Array.from({ length: 65536 }, (_, i) => linearToMulaw(i - 32768));

/** Encodes one linear sample as a G.711 A-law byte (PCMA, the codec of most trunks outside North America). */
export function linearToAlaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample))) >> 3;
  const sign = s >= 0 ? 0x80 : 0;
  if (s < 0) s = -s - 1;
  let exponent = 0;
  for (let v = s >> 4; v > 1 && exponent < 7; v >>= 1) exponent++;
  const mantissa = exponent === 0 ? (s >> 1) & 0x0f : (s >> exponent) & 0x0f;
  const code = exponent === 0 && s < 32 ? s >> 1 : (Math.min(exponent, 7) << 4) | mantissa;
  return (sign | code) ^ 0x55;
}

/** Decodes one G.711 A-law byte to a linear sample. */
export function alawToLinear(byte: number): number {
  const a = byte ^ 0x55;
  const exponent = (a >> 4) & 0x07;
  const mantissa = a & 0x0f;
  const magnitude = exponent === 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1);
  return a & 0x80 ? magnitude : -magnitude;
}

const MULAW_TO_ALAW = Uint8Array.from({ length: 256 }, (_, b) => linearToAlaw(mulawToLinear(b)));
const ALAW_TO_MULAW = Uint8Array.from({ length: 256 }, (_, b) => linearToMulaw(alawToLinear(b)));

/** Re-encodes G.711 between its two laws, byte for byte (a table lookup per sample). */
export function mulawToAlaw(bytes: Uint8Array): Buffer {
  return mulawToAlawInto(bytes, Buffer.allocUnsafe(bytes.length));
}

/** mu-law bytes -> A-law bytes into `out` from `offset`, without allocating (an RTP packet's payload). */
export function mulawToAlawInto<T extends Uint8Array>(bytes: Uint8Array, out: T, offset = 0): T {
  for (let i = 0; i < bytes.length; i++) out[offset + i] = MULAW_TO_ALAW[bytes[i]!]!;
  return out;
}

export function alawToMulaw(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = ALAW_TO_MULAW[bytes[i]!]!;
  return out;
}

/** mu-law bytes -> 16-bit linear PCM. */
export function decodeMulaw(bytes: Uint8Array): Int16Array {
  return decodeMulawInto(bytes, new Int16Array(bytes.length));
}

/** Samples in one slab of allocPcm's pool (32 KB, about 100 frames). */
const PCM_SLAB_SAMPLES = 16 * 1024;
let pcmSlab = new Int16Array(PCM_SLAB_SAMPLES);
let pcmSlabUsed = 0;

/**
 * A PCM array for a frame-sized block, carved out of a shared slab as Node's Buffer pool carves
 * small Buffers: fifty frames a second per call would otherwise each be an ArrayBuffer of their own,
 * which the garbage collector has to track and sweep one by one. The array is the caller's to keep
 * (a kept one keeps its slab alive); it is a view, so its `buffer` is the slab's (use byteOffset).
 * Larger blocks get an array of their own.
 */
export function allocPcm(samples: number): Int16Array {
  if (samples > PCM_SLAB_SAMPLES / 8) return new Int16Array(samples);
  if (pcmSlabUsed + samples > PCM_SLAB_SAMPLES) {
    pcmSlab = new Int16Array(PCM_SLAB_SAMPLES);
    pcmSlabUsed = 0;
  }
  const out = pcmSlab.subarray(pcmSlabUsed, pcmSlabUsed + samples);
  pcmSlabUsed += samples;
  return out;
}

/** mu-law bytes -> 16-bit linear PCM into `out` (at least as long), without allocating: per-frame hot paths. */
export function decodeMulawInto(bytes: Uint8Array, out: Int16Array): Int16Array {
  for (let i = 0; i < bytes.length; i++) out[i] = DECODE_TABLE[bytes[i]!]!;
  return out;
}

/** 16-bit linear PCM -> mu-law bytes into `out` (at least as long), without allocating. */
export function encodeMulawInto<T extends Uint8Array>(pcm: Int16Array, out: T): T {
  for (let i = 0; i < pcm.length; i++) out[i] = ENCODE_TABLE[pcm[i]! + 32768]!;
  return out;
}

/** 16-bit linear PCM -> mu-law bytes. */
export function encodeMulaw(pcm: Int16Array): Buffer {
  return encodeMulawInto(pcm, Buffer.allocUnsafe(pcm.length));
}

/**
 * Resamples 16-bit PCM between rates by linear interpolation. When lowering the rate, a moving
 * average over the decimation span first removes most of what would alias (speech synthesised at
 * 16 or 22.05 kHz brought down to the telephone's 8 kHz).
 */
export function resample(pcm: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate || pcm.length === 0) return pcm;
  let source: Int16Array | Float32Array = pcm;
  const ratio = fromRate / toRate;
  if (Number.isInteger(ratio) && ratio > 1) return decimate(pcm, ratio);
  if (ratio > 1) {
    const span = Math.max(1, Math.round(ratio));
    const smoothed = new Float32Array(pcm.length);
    let sum = 0;
    for (let i = 0; i < pcm.length; i++) {
      sum += pcm[i]!;
      if (i >= span) sum -= pcm[i - span]!;
      smoothed[i] = sum / Math.min(i + 1, span);
    }
    source = smoothed;
  }
  const length = Math.floor(pcm.length / ratio);
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) {
    const pos = i * ratio;
    const left = Math.floor(pos);
    const right = Math.min(left + 1, source.length - 1);
    const frac = pos - left;
    out[i] = Math.round(source[left]! * (1 - frac) + source[right]! * frac);
  }
  return out;
}

/**
 * resample() for a stream that arrives in chunks of any size (a browser's microphone in 128- or
 * 2048-sample pieces): the same moving average and linear interpolation, carried across chunk
 * boundaries, so the chunks joined sound as the whole would, with no click at each boundary and no
 * drift from rounding each chunk's length. The output lags the input by one input sample.
 */
export class StreamResampler {
  /** Input samples per output sample. */
  private readonly step: number;
  /** The moving average's span (1 when raising the rate). */
  private readonly span: number;
  /** The last `span` input samples, for the average across a boundary. */
  private readonly recent: Int16Array;
  private recentAt = 0;
  private sum = 0;
  private seen = 0;
  /** The last smoothed sample of the previous chunk (position 0 of the next one). */
  private previous = 0;
  /** Where the next output sample falls, in input samples after `previous`. */
  private position = 0;

  constructor(fromRate: number, toRate: number) {
    this.step = fromRate / toRate;
    this.span = Math.max(1, Math.round(this.step));
    this.recent = new Int16Array(this.span);
  }

  push(pcm: Int16Array): Int16Array {
    const smoothed = new Float32Array(pcm.length);
    for (let i = 0; i < pcm.length; i++) {
      const sample = pcm[i]!;
      this.sum += sample - this.recent[this.recentAt]!;
      this.recent[this.recentAt] = sample;
      this.recentAt = (this.recentAt + 1) % this.span;
      this.seen++;
      smoothed[i] = this.sum / Math.min(this.seen, this.span);
    }
    const out = new Int16Array(Math.max(0, Math.ceil((pcm.length - this.position) / this.step)));
    let n = 0;
    while (this.position < pcm.length && n < out.length) {
      const left = Math.floor(this.position);
      const frac = this.position - left;
      const a = left === 0 ? this.previous : smoothed[left - 1]!;
      out[n++] = Math.round(a * (1 - frac) + smoothed[left]! * frac);
      this.position += this.step;
    }
    this.position -= pcm.length;
    if (pcm.length > 0) this.previous = smoothed[pcm.length - 1]!;
    return n === out.length ? out : out.subarray(0, n);
  }
}

/**
 * resample() for a whole ratio (16 or 24 kHz to 8 kHz, what most voices send): every output sample
 * falls on an input sample, so it is the moving average ending there, computed for that sample
 * alone, to the same value (the average rounded to 32 bits as resample's smoothed array holds it),
 * without smoothing the samples in between into an array of their own.
 */
function decimate(pcm: Int16Array, ratio: number): Int16Array {
  const out = new Int16Array(Math.floor(pcm.length / ratio));
  for (let i = 0; i < out.length; i++) {
    const end = i * ratio;
    const start = Math.max(0, end - ratio + 1);
    let sum = 0;
    for (let j = start; j <= end; j++) sum += pcm[j]!;
    out[i] = Math.round(Math.fround(sum / (end - start + 1)));
  }
  return out;
}

/** Root-mean-square level of PCM samples, 0..32768. */
export function rms(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) sum += pcm[i]! * pcm[i]!;
  return Math.sqrt(sum / pcm.length);
}

/** Level in dBFS (0 = full scale, about -90 for digital silence). */
export function dbfs(pcm: Int16Array): number {
  return 20 * Math.log10(Math.max(rms(pcm), 1) / 32768);
}

/**
 * Goertzel power of one frequency over a block of samples: the cheap single-bin DFT used for DTMF
 * and answering-machine beeps. Returned relative to the block's total energy (0..1), so that the
 * result does not depend on loudness.
 */
export function goertzel(pcm: Int16Array, frequencyHz: number, sampleRate = SAMPLE_RATE): number {
  const n = pcm.length;
  if (n === 0) return 0;
  // The exact frequency rather than the nearest DFT bin: DTMF tones fall between bins of short blocks.
  const coeff = 2 * Math.cos((2 * Math.PI * frequencyHz) / sampleRate);
  let s1 = 0;
  let s2 = 0;
  let energy = 0;
  for (let i = 0; i < n; i++) {
    const x = pcm[i]!;
    energy += x * x;
    const s0 = x + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  if (energy === 0) return 0;
  const power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
  // A pure tone at the bin puts (n/2)^2 * A^2 / ... into power and n*A^2/2 into energy: normalise to 1.
  return Math.min(1, (2 * power) / (n * energy));
}

/** A sine tone (or the sum of several, as DTMF is) as 16-bit PCM. */
export function tone(
  frequenciesHz: readonly number[],
  durationMs: number,
  amplitude = 8000,
  sampleRate = SAMPLE_RATE,
): Int16Array {
  const length = Math.round((sampleRate * durationMs) / 1000);
  const out = new Int16Array(length);
  const each = amplitude / Math.max(1, frequenciesHz.length);
  for (let i = 0; i < length; i++) {
    let v = 0;
    for (const f of frequenciesHz) v += each * Math.sin((2 * Math.PI * f * i) / sampleRate);
    out[i] = Math.round(v);
  }
  return out;
}

/** Silence of the given length as 16-bit PCM. */
export function silence(durationMs: number, sampleRate = SAMPLE_RATE): Int16Array {
  return new Int16Array(Math.round((sampleRate * durationMs) / 1000));
}

/** Joins PCM chunks into one array. */
export function concatPcm(chunks: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * Cuts PCM into 20 ms mu-law frames of exactly FRAME_SAMPLES bytes; the last frame is padded with
 * silence.
 */
export function toFrames(pcm: Int16Array): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at < pcm.length; at += FRAME_SAMPLES) {
    const slice = pcm.subarray(at, at + FRAME_SAMPLES);
    const frame = Buffer.alloc(FRAME_SAMPLES, MULAW_SILENCE);
    encodeMulaw(slice).copy(frame);
    frames.push(frame);
  }
  return frames;
}

/** Seeded uniform [0, 1) (mulberry32): the same generated audio in every process and run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
