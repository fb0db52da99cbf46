/**
 * In-band DTMF: tone generation for pressing keys over the audio path (carriers cannot send
 * out-of-band digits in the middle of a media stream), and a streaming detector for the digits a
 * caller or our own agent plays (the sandbox IVR listens with it).
 *
 * The detector runs Goertzel filters on the eight DTMF frequencies over 20 ms windows every 10 ms
 * and accepts a window when one row and one column tone stand well above the others of their
 * group, together hold most of the window's energy, are loud enough, and are within the twist
 * limits. A digit is reported once when 40 ms of windows agree, and again only after the key is
 * released, so one press is one digit.
 */
import { SAMPLE_RATE } from './audio.js';

const ROWS = [697, 770, 852, 941] as const;
const COLUMNS = [1209, 1336, 1477, 1633] as const;
const KEYPAD = ['123A', '456B', '789C', '*0#D'] as const;

const DIGIT_FREQUENCIES = new Map<string, [number, number]>();
KEYPAD.forEach((row, r) => [...row].forEach((key, c) => DIGIT_FREQUENCIES.set(key, [ROWS[r]!, COLUMNS[c]!])));

export interface DtmfToneOptions {
  /** Length of each key's tone. Default 100 ms. */
  toneMs?: number;
  /** Silence after each key. Default 60 ms. */
  gapMs?: number;
  /** Peak amplitude of the low (row) tone; the high tone is 2 dB louder, as telephones send. Default 7000. */
  amplitude?: number;
  sampleRate?: number;
}

/** Whether `digits` holds only what dtmfTones plays. */
export function isDtmfString(digits: string): boolean {
  return /^[0-9*#A-Dwa-d]*$/i.test(digits);
}

/** How long a key's tone lasts by default: five 20 ms frames. */
export const DTMF_TONE_MS = 100;

/**
 * The tones of `digits` (0-9 * # A-D; `w` = a 500 ms pause, `W` = 1 s) as 16-bit PCM. Each key is
 * a tone then a gap; edges are ramped over 2 ms so keys do not click.
 */
export function dtmfTones(digits: string, options: DtmfToneOptions = {}): Int16Array {
  const rate = options.sampleRate ?? SAMPLE_RATE;
  const toneSamples = Math.round(((options.toneMs ?? DTMF_TONE_MS) * rate) / 1000);
  const gapSamples = Math.round(((options.gapMs ?? 60) * rate) / 1000);
  const lowAmp = options.amplitude ?? 7000;
  const highAmp = lowAmp * 10 ** (2 / 20);
  const ramp = Math.max(1, Math.round(0.002 * rate));
  let total = 0;
  for (const ch of digits) {
    if (ch === 'w') total += Math.round(0.5 * rate);
    else if (ch === 'W') total += rate;
    else if (DIGIT_FREQUENCIES.has(ch.toUpperCase())) total += toneSamples + gapSamples;
    else throw new RangeError(`invalid DTMF digit "${ch}"`);
  }
  const out = new Int16Array(total);
  let at = 0;
  for (const ch of digits) {
    if (ch === 'w' || ch === 'W') {
      at += ch === 'w' ? Math.round(0.5 * rate) : rate;
      continue;
    }
    const [low, high] = DIGIT_FREQUENCIES.get(ch.toUpperCase())!;
    const wl = (2 * Math.PI * low) / rate;
    const wh = (2 * Math.PI * high) / rate;
    for (let i = 0; i < toneSamples; i++) {
      const edge = Math.min(i, toneSamples - 1 - i);
      const env = edge >= ramp ? 1 : 0.5 - 0.5 * Math.cos((Math.PI * edge) / ramp);
      out[at + i] = Math.round(env * (lowAmp * Math.sin(wl * i) + highAmp * Math.sin(wh * i)));
    }
    at += toneSamples + gapSamples;
  }
  return out;
}

export interface DtmfDetectorOptions {
  /** Minimum level of each of the two tones, dBFS RMS. Default -38. */
  minToneDbfs?: number;
  /** How much weaker the high tone may be than the low one (normal twist), dB. Default 8. */
  maxNormalTwistDb?: number;
  /** How much stronger the high tone may be than the low one (reverse twist), dB. Default 6. */
  maxReverseTwistDb?: number;
  /** How far each tone must stand above the others of its group, dB. Default 8. */
  minDominanceDb?: number;
  /** Share of the window's energy the two tones must hold. Default 0.7. */
  minToneShare?: number;
  /** Shortest key press reported. Default 40 ms. */
  minDurationMs?: number;
}

/** Samples per analysis window (20 ms) and between windows (10 ms), at 8 kHz. */
const WINDOW = 160;
const HOP = 80;
const FREQUENCIES = [...ROWS, ...COLUMNS];
const COEFFS = Float64Array.from(FREQUENCIES, (f) => 2 * Math.cos((2 * Math.PI * f) / SAMPLE_RATE));
/** Consecutive windows without the digit that end a key press. */
const RELEASE_WINDOWS = 2;

/** Streaming DTMF detector over 8 kHz PCM, fed 20 ms frames (any length works). */
export class DtmfDetector {
  private readonly window = new Int16Array(WINDOW);
  private fill = 0;
  private readonly s1 = new Float64Array(8);
  private readonly s2 = new Float64Array(8);
  private readonly power = new Float64Array(8);
  private readonly minTonePower: number;
  private readonly minTwist: number;
  private readonly maxTwist: number;
  private readonly dominance: number;
  private readonly share: number;
  private readonly confirmWindows: number;
  private runKey = '';
  private runLength = 0;
  private misses = 0;
  private reported = '';

  constructor(options: DtmfDetectorOptions = {}) {
    const toneRms = 32768 * 10 ** ((options.minToneDbfs ?? -38) / 20);
    this.minTonePower = toneRms * toneRms;
    this.minTwist = 10 ** (-(options.maxNormalTwistDb ?? 8) / 10);
    this.maxTwist = 10 ** ((options.maxReverseTwistDb ?? 6) / 10);
    this.dominance = 10 ** ((options.minDominanceDb ?? 8) / 10);
    this.share = options.minToneShare ?? 0.7;
    // Windows of 20 ms every 10 ms: n agreeing windows span 20 + 10 (n - 1) ms.
    this.confirmWindows = Math.max(1, Math.ceil(((options.minDurationMs ?? 40) - 20) / 10) + 1);
  }

  /** Feeds samples (normally one 20 ms frame); returns the digits whose press was recognised ('' mostly). */
  push(frame: Int16Array): string {
    let digits = '';
    for (let i = 0; i < frame.length;) {
      const take = Math.min(HOP - this.fill, frame.length - i);
      this.window.set(frame.subarray(i, i + take), HOP + this.fill);
      this.fill += take;
      i += take;
      if (this.fill === HOP) {
        const digit = this.step(this.classify());
        if (digit) digits += digit;
        this.window.copyWithin(0, HOP);
        this.fill = 0;
      }
    }
    return digits;
  }

  /** Forgets any press in progress. */
  reset(): void {
    this.window.fill(0);
    this.fill = this.runLength = this.misses = 0;
    this.runKey = this.reported = '';
  }

  private step(key: string): string {
    if (key && key === this.runKey) this.runLength++;
    else {
      this.runKey = key;
      this.runLength = key ? 1 : 0;
    }
    if (!key) {
      if (++this.misses >= RELEASE_WINDOWS) this.reported = '';
      return '';
    }
    this.misses = 0;
    if (this.runLength >= this.confirmWindows && key !== this.reported) {
      this.reported = key;
      return key;
    }
    return '';
  }

  /** The key whose two tones this window holds, or ''. */
  private classify(): string {
    const x = this.window;
    let energy = 0;
    for (let i = 0; i < WINDOW; i++) energy += x[i]! * x[i]!;
    // Two tones at the minimum level need at least this much energy: silence costs no filtering.
    if (energy < 2 * this.minTonePower * WINDOW) return '';
    const s1 = this.s1.fill(0);
    const s2 = this.s2.fill(0);
    for (let i = 0; i < WINDOW; i++) {
      const v = x[i]!;
      for (let k = 0; k < 8; k++) {
        const s0 = v + COEFFS[k]! * s1[k]! - s2[k]!;
        s2[k] = s1[k]!;
        s1[k] = s0;
      }
    }
    // Mean-square power of each tone: a sine of amplitude A gives A^2 / 2.
    const norm = 2 / (WINDOW * WINDOW);
    for (let k = 0; k < 8; k++) {
      this.power[k] = (s1[k]! * s1[k]! + s2[k]! * s2[k]! - COEFFS[k]! * s1[k]! * s2[k]!) * norm;
    }
    const row = strongest(this.power, 0);
    const col = strongest(this.power, 4);
    const rowPower = this.power[row]!;
    const colPower = this.power[col]!;
    if (rowPower < this.minTonePower || colPower < this.minTonePower) return '';
    const twist = colPower / rowPower;
    if (twist < this.minTwist || twist > this.maxTwist) return '';
    for (let k = 0; k < 4; k++) {
      if (k !== row && this.power[k]! * this.dominance > rowPower) return '';
      if (k + 4 !== col && this.power[k + 4]! * this.dominance > colPower) return '';
    }
    if (rowPower + colPower < this.share * (energy / WINDOW)) return '';
    return KEYPAD[row]![col - 4]!;
  }
}

function strongest(power: Float64Array, from: number): number {
  let best = from;
  for (let k = from + 1; k < from + 4; k++) if (power[k]! > power[best]!) best = k;
  return best;
}

/** All digits pressed in a recording. */
export function detectDtmf(pcm: Int16Array, options?: DtmfDetectorOptions): string {
  return new DtmfDetector(options).push(pcm);
}
