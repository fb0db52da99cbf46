/**
 * background_track: ambience played under the agent, generated here (never downloaded) as
 * seamlessly looping 8 kHz tracks, each made once per process on first use and shared by every
 * call (a deterministic seed per kind, so all processes play the same track):
 *
 * - `office`: a distant murmur of a few voices, room rumble, and bursts of keyboard typing.
 * - `cafe`: a babble of several nearer voices with the clink of cups and glasses now and then.
 * - `restaurant`: a denser babble of many voices, steadier and quieter than the cafe (the seed calls
 *   it subtler), with fewer clinks.
 * - null: light line static (a faint band-limited hiss).
 * - `none`: nothing.
 *
 * Voices are synthetic: pulse trains at wandering pitches through formant resonators, shaped into
 * syllables and phrases, so they sound like speech from across a room without any word in them.
 * Levels sit far under speech (-37 to -46 dBFS RMS). The BackgroundMixer plays a track on a call:
 * the pacer asks it for background-only frames when the agent is silent and mixes it under the
 * agent's frames as they leave (PCM sums with a soft limiter so loud speech does not clip).
 */
import { FRAME_SAMPLES, SAMPLE_RATE, decodeMulawInto, encodeMulaw, seededRandom } from './audio.js';
import type { FrameFill } from './pacer.js';

export type BackgroundKind = 'office' | 'cafe' | 'restaurant' | 'static';

/** The track for a background_track value: null is line static, `none` (or anything unknown) none. */
export function backgroundKind(value: string | null | undefined): BackgroundKind | null {
  if (value === null || value === undefined) return 'static';
  return value === 'office' || value === 'cafe' || value === 'restaurant' ? value : null;
}

export interface BackgroundTrack {
  kind: BackgroundKind;
  /** One loop of 16-bit PCM at 8 kHz, a whole number of 20 ms frames. */
  pcm: Int16Array;
  /** The same loop as mu-law, ready to send. */
  mulaw: Buffer;
}

const LOOP_SECONDS = 12;
const CROSSFADE_SECONDS = 0.5;
const LEVELS_DBFS: Record<BackgroundKind, number> = { office: -42, cafe: -37, restaurant: -40, static: -46 };
const SEEDS: Record<BackgroundKind, number> = { office: 11, cafe: 23, restaurant: 37, static: 53 };

const tracks = new Map<BackgroundKind, BackgroundTrack>();

/** The looping track of a kind, generated on first use (some tens of milliseconds) and kept. */
export function backgroundTrack(kind: BackgroundKind): BackgroundTrack {
  let track = tracks.get(kind);
  if (!track) {
    const pcm = generate(kind);
    track = { kind, pcm, mulaw: encodeMulaw(pcm) };
    tracks.set(kind, track);
  }
  return track;
}

/** Generates every track now (about a tenth of a second each), so no call start pays for it. */
export function preloadBackgroundTracks(): void {
  for (const kind of Object.keys(LEVELS_DBFS) as BackgroundKind[]) backgroundTrack(kind);
}

/** Soft limiter above this magnitude: sums of speech and ambience bend into full scale instead of wrapping. */
const KNEE = 28000;
const HEADROOM = 32767 - KNEE;

/** Plays a background track on one call: FrameFill for its pacer. */
export class BackgroundMixer implements FrameFill {
  private frame = 0;
  private readonly frames: number;
  private readonly scratch = new Int16Array(FRAME_SAMPLES);

  /** `startFrame` offsets the loop so calls do not play it in step; default random. */
  constructor(
    readonly track: BackgroundTrack | null,
    startFrame?: number,
  ) {
    this.frames = track ? track.pcm.length / FRAME_SAMPLES : 0;
    if (this.frames > 0) this.frame = Math.floor(startFrame ?? Math.random() * this.frames) % this.frames;
  }

  /** The next frame of background alone (a fresh 160-byte buffer), or null without a track. */
  fill(): Buffer | null {
    if (!this.track) return null;
    const at = this.advance() * FRAME_SAMPLES;
    const out = Buffer.allocUnsafe(FRAME_SAMPLES);
    this.track.mulaw.copy(out, 0, at, at + FRAME_SAMPLES);
    return out;
  }

  /** The agent's mu-law frame with the next frame of background under it (a new buffer). */
  mix(frame: Buffer): Buffer {
    if (!this.track) return frame;
    const at = this.advance() * FRAME_SAMPLES;
    const pcm = decodeMulawInto(frame, this.scratch);
    const bg = this.track.pcm;
    const n = Math.min(frame.length, FRAME_SAMPLES);
    for (let i = 0; i < n; i++) pcm[i] = limit(pcm[i]! + bg[at + i]!);
    return encodeMulaw(n === FRAME_SAMPLES ? pcm : pcm.subarray(0, n));
  }

  private advance(): number {
    const frame = this.frame;
    this.frame = frame + 1 === this.frames ? 0 : frame + 1;
    return frame;
  }
}

/** The mixer for a call's background_track value (`none` gives one that adds nothing). */
export function backgroundMixer(value: string | null | undefined, startFrame?: number): BackgroundMixer {
  const kind = backgroundKind(value);
  return new BackgroundMixer(kind ? backgroundTrack(kind) : null, startFrame);
}

function limit(sum: number): number {
  const magnitude = sum < 0 ? -sum : sum;
  if (magnitude <= KNEE) return sum;
  const bent = KNEE + HEADROOM * Math.tanh((magnitude - KNEE) / HEADROOM);
  return sum < 0 ? -Math.round(bent) : Math.round(bent);
}

// ---- generation ----

/** A second-order IIR section (RBJ audio-EQ cookbook). */
class Biquad {
  private b0 = 1;
  private b1 = 0;
  private b2 = 0;
  private a1 = 0;
  private a2 = 0;
  private x1 = 0;
  private x2 = 0;
  private y1 = 0;
  private y2 = 0;

  static lowpass(hz: number, q = Math.SQRT1_2): Biquad {
    return new Biquad().set('lowpass', hz, q);
  }

  static highpass(hz: number, q = Math.SQRT1_2): Biquad {
    return new Biquad().set('highpass', hz, q);
  }

  static bandpass(hz: number, q: number): Biquad {
    return new Biquad().set('bandpass', hz, q);
  }

  /** Retunes without clearing the state (formants glide from syllable to syllable). */
  set(type: 'lowpass' | 'highpass' | 'bandpass', hz: number, q: number): this {
    const w = (2 * Math.PI * Math.min(hz, SAMPLE_RATE * 0.45)) / SAMPLE_RATE;
    const cos = Math.cos(w);
    const alpha = Math.sin(w) / (2 * q);
    const a0 = 1 + alpha;
    if (type === 'lowpass') {
      this.b0 = this.b2 = (1 - cos) / 2 / a0;
      this.b1 = (1 - cos) / a0;
    } else if (type === 'highpass') {
      this.b0 = this.b2 = (1 + cos) / 2 / a0;
      this.b1 = -(1 + cos) / a0;
    } else {
      this.b0 = alpha / a0;
      this.b1 = 0;
      this.b2 = -alpha / a0;
    }
    this.a1 = (-2 * cos) / a0;
    this.a2 = (1 - alpha) / a0;
    return this;
  }

  step(x: number): number {
    const y = this.b0 * x + this.b1 * this.x1 + this.b2 * this.x2 - this.a1 * this.y1 - this.a2 * this.y2;
    this.x2 = this.x1;
    this.x1 = x;
    this.y2 = this.y1;
    this.y1 = y;
    return y;
  }
}

interface BabbleOptions {
  voices: number;
  /** Pause between a voice's phrases, seconds (min, max). */
  pause: [number, number];
  /** Length of a phrase, seconds. */
  phrase: [number, number];
  /** Upper edge of the room's muffling, Hz. */
  muffleHz: number;
}

const ENVELOPE_STEPS = 1024;
/** A syllable's loudness over its length: sin^2 from 0 to pi. */
const ENVELOPE = Float32Array.from(
  { length: ENVELOPE_STEPS + 1 },
  (_, i) => Math.sin((Math.PI * i) / ENVELOPE_STEPS) ** 2,
);

/** Several synthetic voices talking at once, far enough away that no word comes through. */
function babble(length: number, random: () => number, options: BabbleOptions): Float32Array {
  const out = new Float32Array(length);
  for (let v = 0; v < options.voices; v++) {
    const basePitch = 95 + random() * 130;
    const loudness = 0.5 + random() * 0.5;
    const f1 = Biquad.bandpass(500, 4);
    const f2 = Biquad.bandpass(1500, 6);
    const f3 = Biquad.bandpass(2600, 8);
    let phase = random();
    let pitch = basePitch;
    let at = Math.floor(random() * options.pause[1] * SAMPLE_RATE);
    while (at < length) {
      const phraseEnd = Math.min(length, at + span(random, options.phrase));
      while (at < phraseEnd) {
        const syllable = Math.round((0.1 + random() * 0.16) * SAMPLE_RATE);
        f1.set('bandpass', 300 + random() * 550, 4);
        f2.set('bandpass', 900 + random() * 1500, 6);
        const voiced = random() < 0.8;
        const gain = loudness * (0.4 + random() * 0.6);
        const glide = (random() - 0.5) * 0.3;
        const step = ENVELOPE_STEPS / syllable;
        for (let j = 0; j < syllable && at + j < length; j++) {
          const env = ENVELOPE[(j * step) | 0]!;
          let x: number;
          if (voiced) {
            phase += (pitch * (1 + (glide * j) / syllable)) / SAMPLE_RATE;
            x = phase >= 1 ? 1 : 0;
            if (phase >= 1) phase -= 1;
            x += (random() - 0.5) * 0.08;
          } else {
            x = (random() - 0.5) * 0.5;
          }
          out[at + j]! += gain * env * (f1.step(x) + 0.6 * f2.step(x) + 0.25 * f3.step(x));
        }
        at += syllable + Math.round(random() * 0.06 * SAMPLE_RATE);
        // Pitch wanders within a voice's range from syllable to syllable.
        pitch = Math.max(basePitch * 0.8, Math.min(basePitch * 1.3, pitch * (0.94 + random() * 0.12)));
      }
      at += span(random, options.pause);
    }
  }
  const low = Biquad.lowpass(options.muffleHz);
  const high = Biquad.highpass(150);
  for (let i = 0; i < length; i++) out[i] = high.step(low.step(out[i]!));
  return out;
}

/** White noise through a band-pass: line hiss, room rumble. */
function filteredNoise(length: number, random: () => number, lowHz: number, highHz: number): Float32Array {
  const out = new Float32Array(length);
  const high = Biquad.highpass(lowHz);
  const low = Biquad.lowpass(highHz);
  for (let i = 0; i < length; i++) out[i] = low.step(high.step(random() * 2 - 1));
  return out;
}

function span(random: () => number, [min, max]: [number, number]): number {
  return Math.round((min + random() * (max - min)) * SAMPLE_RATE);
}

function rmsOf(x: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]! * x[i]!;
  return Math.sqrt(sum / Math.max(1, x.length));
}

/** Adds `bed`, scaled to `levelDbfs` RMS, into `into`. */
function addAtLevel(into: Float32Array, bed: Float32Array, levelDbfs: number): void {
  const gain = (32768 * 10 ** (levelDbfs / 20)) / Math.max(1e-9, rmsOf(bed));
  for (let i = 0; i < into.length; i++) into[i]! += bed[i]! * gain;
}

/** Folds a bed generated CROSSFADE longer than the loop into a seamless loop. */
function loop(bed: Float32Array, length: number): Float32Array {
  const fade = bed.length - length;
  const out = bed.slice(0, length);
  for (let i = 0; i < fade; i++) {
    const t = (Math.PI / 2) * (i / fade);
    out[i] = bed[i]! * Math.sin(t) + bed[length + i]! * Math.cos(t);
  }
  return out;
}

/**
 * Thickens a seamless loop into a crowd: adds copies of itself shifted round the loop by whole
 * seconds (far apart, the copies are different conversations) and brings the sum back to its level.
 */
function crowd(track: Float32Array, copies: number): void {
  const level = rmsOf(track);
  const source = track.slice();
  const length = track.length;
  for (let c = 1; c <= copies; c++) {
    const shift = Math.round(((length / SAMPLE_RATE) * c) / (copies + 1)) * SAMPLE_RATE + 1234 * c;
    for (let i = 0; i < length; i++) track[i]! += source[(i + shift) % length]!;
  }
  const gain = level / Math.max(1e-9, rmsOf(track));
  for (let i = 0; i < length; i++) track[i]! *= gain;
}

/** Keyboard typing: bursts of short high clicks, wrapping round the loop. */
function addTyping(into: Float32Array, random: () => number, peakDbfs: number): void {
  const peak = 32768 * 10 ** (peakDbfs / 20);
  const length = into.length;
  let at = Math.floor(random() * 2 * SAMPLE_RATE);
  while (at < length) {
    const keys = 3 + Math.floor(random() * 12);
    for (let k = 0; k < keys; k++) {
      const click = Biquad.highpass(1200 + random() * 1500);
      const amp = peak * (0.5 + random() * 0.5);
      const size = Math.round(0.012 * SAMPLE_RATE);
      for (let j = 0; j < size; j++) {
        into[(at + j) % length]! += amp * Math.exp(-j / (0.0025 * SAMPLE_RATE)) * click.step(random() * 2 - 1);
      }
      at += Math.round((0.08 + random() * 0.14) * SAMPLE_RATE);
    }
    at += span(random, [1.5, 6]);
  }
}

/** Cups and glasses: decaying high partials, now and then. */
function addClinks(into: Float32Array, random: () => number, peakDbfs: number, every: [number, number]): void {
  const length = into.length;
  let at = span(random, [0, every[1]]);
  while (at < length) {
    const base = 2100 + random() * 1500;
    const partials = [base, base * 1.48, base * 0.62].filter((f) => f < SAMPLE_RATE * 0.45);
    const amp = 32768 * 10 ** ((peakDbfs - random() * 8) / 20);
    const decay = (0.04 + random() * 0.1) * SAMPLE_RATE;
    for (let j = 0; j < decay * 5; j++) {
      let v = 0;
      partials.forEach((f, p) => (v += Math.sin((2 * Math.PI * f * j) / SAMPLE_RATE) / (p + 1)));
      into[(at + j) % length]! += (amp * Math.exp(-j / decay) * v) / 1.8;
    }
    at += span(random, every);
  }
}

function generate(kind: BackgroundKind): Int16Array {
  const random = seededRandom(SEEDS[kind]);
  const length = LOOP_SECONDS * SAMPLE_RATE;
  const total = length + Math.round(CROSSFADE_SECONDS * SAMPLE_RATE);
  const level = LEVELS_DBFS[kind];
  const bed = new Float32Array(total);
  switch (kind) {
    case 'office':
      addAtLevel(bed, babble(total, random, { voices: 3, pause: [0.8, 4], phrase: [1, 3.5], muffleHz: 1600 }), level);
      addAtLevel(bed, filteredNoise(total, random, 40, 300), level - 6);
      break;
    case 'cafe':
      addAtLevel(bed, babble(total, random, { voices: 4, pause: [0.4, 2.5], phrase: [1, 4], muffleHz: 2800 }), level);
      addAtLevel(bed, filteredNoise(total, random, 100, 2500), level - 14);
      break;
    case 'restaurant':
      addAtLevel(bed, babble(total, random, { voices: 5, pause: [0.3, 1.5], phrase: [1.5, 5], muffleHz: 2400 }), level);
      addAtLevel(bed, filteredNoise(total, random, 100, 2000), level - 12);
      break;
    case 'static':
      addAtLevel(bed, filteredNoise(total, random, 300, 3400), level);
      break;
  }
  const track = loop(bed, length);
  // Voices are the costly part: the cafe's eight and the restaurant's fifteen are shifted copies.
  if (kind === 'cafe') crowd(track, 1);
  if (kind === 'restaurant') crowd(track, 2);
  if (kind === 'office') addTyping(track, random, level + 24);
  if (kind === 'cafe') addClinks(track, random, level + 18, [2, 6]);
  if (kind === 'restaurant') addClinks(track, random, level + 12, [4, 10]);
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(track[i]!)));
  return out;
}
