/**
 * Streaming single-tone (beep) detector: the beep of an answering machine, a fax CNG tone, a SIT
 * tone. Each 20 ms frame loud enough to matter is windowed (Hann, zero-padded to 256 points) and
 * transformed; the frame is tonal when one spectral peak between 300 and 3400 Hz (the telephone
 * band) holds most of the frame's energy. Consecutive tonal frames at a steady frequency form a
 * tone, reported with its frequency and duration when it ends, if it lasted at least 100 ms. A
 * machine's beep is one or a few such tones anywhere in the band, from a tenth of a second to two
 * seconds, sometimes two or three short ones in a row (each is reported); a person never makes one.
 *
 * Speech does not fire it (its energy spreads over many harmonics and its pitch moves), nor do
 * DTMF keys (two peaks, each with half the energy, and too short), nor line noise (no peak holds
 * the energy). A vowel can hold one harmonic steady for a few frames, so a tone shorter than
 * 150 ms must be cleaner (its peak holding 90 % of the energy on average) than a longer one.
 *
 * A beep is a synthetic sinusoid, and a run of tonal frames is taken for one only if it behaves as
 * one (the steadiness tests, `strict`; a voice, even a synthetic one holding a vowel on one pitch,
 * does not): its frames' fine frequencies (interpolated peak) spread over at most 5 Hz or 0.3 %
 * (four times their median distance from their median: an even glide's whole extent; a vowel's
 * pitch and formants drift), its level changes by at most 1.5 dB from frame to frame and strays
 * by at most 3 dB from the straight line that best follows it over each 0.6 s of the tone (a
 * syllable swells and fades; a line's AGC turning the level up or down as the beep plays, or
 * swinging it over a second or two, moves it evenly at that scale), and nothing stands
 * within 22 dB of it where a voice's neighbouring harmonics would be (f/2, 2f, 3f/2, 2f/3, 4f/3,
 * 3f/4, 5f/4; an odd distortion such as mu-law's gives a sinusoid only odd harmonics), and it
 * starts and stops abruptly: it stands 12 dB above what its frequency held two frames before its
 * first tonal frame and two after its last (a vowel's harmonic grows out of and fades into the
 * syllable; a pitch that glides on by under 2.5 % a frame has no edge at all). The first and last
 * frames (partly tone) are left out of the steadiness, and in a long tone the most outlying eighth
 * of its frames' levels each way (a click, a lost packet). Over 1,500 espeak-ng utterances of
 * ordinary greetings in 124 languages and 89 variants at pitch 0-99 and 80-260 wpm
 * (bench/amd/voices.ts; none of the held-out set's voices), the tests take the tones of 60 ms or
 * more found at 250-3600 Hz from 477 to 3 (seed 1, on which they were chosen) and from 435 to 4
 * (seed 2): a high voice's fundamental held on one pitch at 274-421 Hz, 4 of the 7 of 100 ms or
 * more at 300 Hz or above. Every beep of the training set passes.
 * Frames below the level gate cost one pass over the samples.
 */
import { FRAME_MS, SAMPLE_RATE } from '../media/audio.js';

export interface DetectedTone {
  /** Mean frequency over the tone, Hz. */
  frequencyHz: number;
  durationMs: number;
}

/** How sinusoid-like a run of tonal frames was (see ToneDetector's steadiness tests). */
export interface ToneSteadiness {
  /**
   * Spread of the frames' fine frequency estimates, Hz, edge frames left out: four times their
   * median distance from their median (an even glide's whole extent).
   */
  spreadHz: number;
  /** Largest change of the peak's level between consecutive frames, dB, edge frames left out. */
  levelStepDb: number;
  /**
   * Spread of the peak's level around the straight line that best fits it over the run (least
   * squares, in dB), edge frames left out: an even rise or fall (the line's AGC) is no spread.
   */
  levelSpreadDb: number;
  /** Mean over the frames of the strongest harmonically related component, dB below the peak. */
  harmonicDb: number;
  /**
   * How far the tone's level stands above what its frequency held two frames before its first
   * tonal frame (the frame before may hold part of it), dB; Infinity after a different tone.
   */
  onsetDb: number;
  /** The same two frames after its last tonal frame (Infinity when it did not end in a gap). */
  offsetDb: number;
}

export interface ToneDetectorOptions {
  /** Lowest and highest tone frequency, Hz. Defaults 300 and 3400. */
  minHz?: number;
  maxHz?: number;
  /** Shortest tone reported. Default 100 ms. */
  minDurationMs?: number;
  /** Quietest tone, dBFS RMS. Default -45. */
  minLevelDbfs?: number;
  /** Share of a frame's energy the peak must hold. Default 0.8. */
  minPurity?: number;
  /** A tone shorter than SHORT_TONE_MS must hold this share on average over its frames. Default 0.9. */
  minShortPurity?: number;
  /** How far a frame's frequency may stray from the tone's mean: beeps are steady, voices glide. Default 0.01 (1 %). */
  maxDeviation?: number;
  /** Apply the steadiness tests (a sinusoid's, see the class). Default true. */
  strict?: boolean;
  /** Largest spread of the frames' fine frequencies: the larger of this many Hz... Default 5. */
  maxSpreadHz?: number;
  /** ...and this share of the frequency. Default 0.003. */
  maxSpreadShare?: number;
  /** Largest level change between consecutive frames, dB. Default 1.5. */
  maxLevelStepDb?: number;
  /** Largest level spread over the tone around its straight-line trend over each 0.6 s, dB. Default 3. */
  maxLevelSpreadDb?: number;
  /** Strongest harmonically related component allowed (mean over the frames), dB under the peak. Default -22. */
  maxHarmonicDb?: number;
  /** How far the tone must rise above and fall below what its frequency held just around it, dB. Default 12. */
  minEdgeDb?: number;
}

const FFT_SIZE = 256;
const BIN_HZ = SAMPLE_RATE / FFT_SIZE;
/** Bins either side of the peak that belong to it (the Hann main lobe of a 20 ms window is +-100 Hz). */
const PEAK_HALF_WIDTH = 3;
/** Non-tonal frames tolerated inside a tone (a noise burst) before it is considered ended. */
const MAX_GAP_FRAMES = 1;
/** Tones shorter than this must be cleaner (`minShortPurity`): a vowel can look like a brief tone. */
export const SHORT_TONE_MS = 150;
/** Frames of a run whose frequency and level are kept for the steadiness tests (4 s). */
const MAX_RUN_FRAMES = 200;
/** A frequency change from one tonal frame to the next of at most this share is a glide (a voice), not a step. */
const GLIDE_SHARE = 0.025;
/**
 * Where a voice's neighbouring harmonics lie when the peak is its 1st to 4th harmonic, as multiples
 * of the peak's frequency: f0 = f/n puts harmonics at f(n-1)/n and f(n+1)/n (and 2f for n = 1).
 * An odd nonlinearity (mu-law, a little clipping) gives a sinusoid odd harmonics (3f, 5f), none of these.
 */
const HARMONIC_RATIOS = [2, 1 / 2, 3 / 2, 2 / 3, 4 / 3, 3 / 4, 5 / 4];

/**
 * The strongest component of the last spectrum at a frequency harmonically related to `hz`
 * (HARMONIC_RATIOS) above the line's noise there, relative to the peak's lobe power, dB: a
 * sinusoid has none, a voice's harmonics sit 10-25 dB under its strongest one. The noise in a bin
 * is the median bin's power over ln 2 (the mean of noise whose power is exponentially distributed).
 */
function harmonicRatioDb(hz: number, lobe: number): number {
  const sorted = Array.from(power.subarray(1)).sort((a, b) => a - b);
  const noisePerBin = sorted[sorted.length >> 1]! / Math.LN2;
  let strongest = 0;
  for (const ratio of HARMONIC_RATIOS) {
    const at = hz * ratio;
    if (Math.abs(at - hz) <= (PEAK_HALF_WIDTH + 1) * BIN_HZ) continue;
    const bin = Math.round(at / BIN_HZ);
    if (bin < 2 || bin > HALF - 1) continue;
    strongest = Math.max(strongest, power[bin - 1]! + power[bin]! + power[bin + 1]! - 3 * noisePerBin);
  }
  return 10 * Math.log10(Math.max(strongest, 1e-9) / lobe);
}

// Shared scratch and tables: pure computation on one thread, so every detector can use them.
// The 256-point real transform runs as a 128-point complex one over (even, odd) sample pairs.
const HALF = FFT_SIZE / 2;
const re = new Float64Array(HALF);
const im = new Float64Array(HALF);
const power = new Float64Array(HALF + 1);
const BIT_REVERSED = new Uint16Array(HALF);
for (let i = 0, bits = Math.log2(HALF); i < HALF; i++) {
  let r = 0;
  for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
  BIT_REVERSED[i] = r;
}
/** e^{-2 pi i k / 256}, k = 0..128: the 128-point twiddles are every other one. */
const COS = Float64Array.from({ length: HALF + 1 }, (_, k) => Math.cos((2 * Math.PI * k) / FFT_SIZE));
const SIN = Float64Array.from({ length: HALF + 1 }, (_, k) => -Math.sin((2 * Math.PI * k) / FFT_SIZE));
const hannCache = new Map<number, Float64Array>();

function hann(length: number): Float64Array {
  let w = hannCache.get(length);
  if (!w) {
    w = Float64Array.from({ length }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 0.5)) / length));
    hannCache.set(length, w);
  }
  return w;
}

/**
 * Power spectrum (bins 0..128) of the 256-point transform of `x` zero-padded: a 128-point complex
 * FFT of the packed samples, then the split into the real signal's spectrum.
 */
function powerSpectrum(x: Float64Array, length: number): void {
  re.fill(0);
  im.fill(0);
  for (let i = 0; i < length; i++) {
    const m = BIT_REVERSED[i >> 1]!;
    if (i & 1) im[m] = x[i]!;
    else re[m] = x[i]!;
  }
  for (let size = 2; size <= HALF; size <<= 1) {
    const half = size >> 1;
    const step = (2 * HALF) / size;
    for (let start = 0; start < HALF; start += size) {
      for (let j = 0, t = 0; j < half; j++, t += step) {
        const a = start + j;
        const b = a + half;
        const xr = re[b]! * COS[t]! - im[b]! * SIN[t]!;
        const xi = re[b]! * SIN[t]! + im[b]! * COS[t]!;
        re[b] = re[a]! - xr;
        im[b] = im[a]! - xi;
        re[a] = re[a]! + xr;
        im[a] = im[a]! + xi;
      }
    }
  }
  for (let k = 0; k <= HALF; k++) {
    const zr = re[k & (HALF - 1)]!;
    const zi = im[k & (HALF - 1)]!;
    const cr = re[(HALF - k) & (HALF - 1)]!;
    const ci = -im[(HALF - k) & (HALF - 1)]!;
    // Even samples' spectrum (Z + conj Z') / 2 and odd samples' (Z - conj Z') / 2i.
    const er = (zr + cr) / 2;
    const ei = (zi + ci) / 2;
    const or = (zi - ci) / 2;
    const oi = -(zr - cr) / 2;
    const xr = er + or * COS[k]! - oi * SIN[k]!;
    const xi = ei + or * SIN[k]! + oi * COS[k]!;
    power[k] = xr * xr + xi * xi;
  }
}

const windowed = new Float64Array(FFT_SIZE);

/** Streaming beep detector over 8 kHz PCM, fed 20 ms frames. */
export class ToneDetector {
  private readonly minBin: number;
  private readonly maxBin: number;
  private readonly minHz: number;
  private readonly maxHz: number;
  private readonly minFrames: number;
  private readonly minPower: number;
  private readonly minPurity: number;
  private readonly minShortPurity: number;
  private readonly maxDeviation: number;
  private readonly strict: boolean;
  private readonly maxSpreadHz: number;
  private readonly maxSpreadShare: number;
  private readonly maxLevelStepDb: number;
  private readonly maxLevelSpreadDb: number;
  private readonly maxHarmonicDb: number;
  private readonly minEdgeDb: number;
  private runFrames = 0;
  private runSpan = 0;
  private runHzSum = 0;
  private runPuritySum = 0;
  private runHarmonicSum = 0;
  private gap = 0;
  /** The purity, peak level (dB) and harmonic ratio (dB) of the last frame found tonal. */
  private purity = 0;
  private peakDb = 0;
  private harmonicDb = 0;
  /** The run's frames' fine frequencies and peak levels (the first MAX_RUN_FRAMES of them). */
  private readonly runHz = new Float64Array(MAX_RUN_FRAMES);
  private readonly runDb = new Float64Array(MAX_RUN_FRAMES);
  /** The last three frames' power spectra (the current one first); quiet frames are all zero. */
  private spectra = [new Float64Array(HALF + 1), new Float64Array(HALF + 1), new Float64Array(HALF + 1)];
  private quiet = [true, true, true];
  /** What the tone's lobe held two frames after its last tonal frame, or -1 when it did not end in a gap. */
  private offsetPower = -1;
  /** The run's first frame's peak bin, and the power its lobe held two frames before (onset). */
  private runPeakBin = 0;
  private onsetPower = 0;
  /** The peak bin of the last frame found tonal. */
  private peakBin = 0;
  /** The fine frequency of the run's last tonal frame. */
  private lastHz = 0;
  /** The steadiness of the last run ended or checked, for diagnostics. */
  lastSteadiness: ToneSteadiness | null = null;

  constructor(options: ToneDetectorOptions = {}) {
    this.minHz = options.minHz ?? 300;
    this.maxHz = options.maxHz ?? 3400;
    this.minBin = Math.max(PEAK_HALF_WIDTH + 1, Math.floor(this.minHz / BIN_HZ));
    this.maxBin = Math.min(HALF - PEAK_HALF_WIDTH - 1, Math.ceil(this.maxHz / BIN_HZ));
    this.minFrames = Math.ceil((options.minDurationMs ?? 100) / FRAME_MS);
    const level = 32768 * 10 ** ((options.minLevelDbfs ?? -45) / 20);
    this.minPower = level * level;
    this.minPurity = options.minPurity ?? 0.8;
    this.minShortPurity = options.minShortPurity ?? 0.9;
    this.maxDeviation = options.maxDeviation ?? 0.01;
    this.strict = options.strict ?? true;
    this.maxSpreadHz = options.maxSpreadHz ?? 5;
    this.maxSpreadShare = options.maxSpreadShare ?? 0.003;
    this.maxLevelStepDb = options.maxLevelStepDb ?? 1.5;
    this.maxLevelSpreadDb = options.maxLevelSpreadDb ?? 3;
    this.maxHarmonicDb = options.maxHarmonicDb ?? -22;
    this.minEdgeDb = options.minEdgeDb ?? 12;
  }

  /** Feeds one frame; returns the tone that just ended, if it was long enough. */
  push(frame: Int16Array): DetectedTone | null {
    const hz = this.frameFrequency(frame);
    if (hz > 0) {
      const mean = this.runFrames > 0 ? this.runHzSum / this.runFrames : hz;
      if (this.runFrames > 0 && Math.abs(hz - mean) > Math.max(5, this.maxDeviation * mean)) {
        // A different tone right after this one: end it, start the next. One or two frames at
        // another frequency were the start of this one (a frame partly tone reads off), so it keeps
        // their onset. Else a pitch that moved by at most GLIDE_SHARE from one frame to the next
        // glided (a voice) and neither tone has an edge there; a machine's tones step by a musical
        // interval or more, and that step is their edge.
        if (this.runFrames <= 2) {
          const onset = this.onsetPower;
          const ended = this.finish();
          this.extend(hz, onset);
          return ended;
        }
        const glided = Math.abs(hz - this.lastHz) <= GLIDE_SHARE * this.lastHz;
        if (glided) this.offsetPower = Infinity;
        const ended = this.finish();
        this.extend(hz, glided ? Infinity : -1);
        return ended;
      }
      this.extend(hz);
      return null;
    }
    if (this.runFrames === 0) return null;
    if (++this.gap > MAX_GAP_FRAMES) {
      // This frame is the second after the tone's last: none of the tone is left in it.
      this.offsetPower = this.lobeIn(0, this.runPeakBin);
      return this.finish();
    }
    return null;
  }

  /** The tone in progress once it has lasted the minimum duration, or null. */
  get current(): DetectedTone | null {
    return this.isTone() ? this.describe() : null;
  }

  /** Ends the stream: returns a tone still sounding if it was long enough. */
  flush(): DetectedTone | null {
    return this.runFrames > 0 ? this.finish() : null;
  }

  reset(): void {
    this.runFrames = this.runSpan = this.runHzSum = this.runPuritySum = this.runHarmonicSum = this.gap = 0;
  }

  /** Whether the tone under way is one: long enough, a short one clean enough, and steady as a sinusoid. */
  private isTone(): boolean {
    if (this.runFrames < this.minFrames) return false;
    if (this.runSpan * FRAME_MS < SHORT_TONE_MS && this.runPuritySum / this.runFrames < this.minShortPurity)
      return false;
    const s = this.steadiness();
    this.lastSteadiness = s;
    if (!this.strict) return true;
    const mean = this.runHzSum / this.runFrames;
    return (
      s.spreadHz <= Math.max(this.maxSpreadHz, this.maxSpreadShare * mean) &&
      s.levelStepDb <= this.maxLevelStepDb &&
      s.levelSpreadDb <= this.maxLevelSpreadDb &&
      s.harmonicDb <= this.maxHarmonicDb &&
      s.onsetDb >= this.minEdgeDb &&
      s.offsetDb >= this.minEdgeDb
    );
  }

  /**
   * The run's steadiness over its stored frames, the first and last left out (they may be partly
   * tone); in a long run the most outlying eighth of the frames each way (a click, a lost packet)
   * are left out too.
   */
  private steadiness(): ToneSteadiness {
    const n = Math.min(this.runFrames, MAX_RUN_FRAMES);
    const from = n > 3 ? 1 : 0;
    const to = n > 3 ? n - 1 : n;
    const count = to - from;
    const trim = Math.floor(count / 8);
    const hz = Array.from(this.runHz.subarray(from, to)).sort((a, b) => a - b);
    const residuals = levelsAroundTrend(this.runDb.subarray(from, to)).sort((a, b) => a - b);
    const steps: number[] = [];
    for (let i = from + 1; i < to; i++) steps.push(Math.abs(this.runDb[i]! - this.runDb[i - 1]!));
    steps.sort((a, b) => a - b);
    // Each outlying frame makes two steps.
    const step = steps.length > 0 ? steps[Math.max(0, steps.length - 1 - 2 * trim)]! : 0;
    const median = sortedMiddle(this.runDb.subarray(from, to));
    // Four times the median distance from the median frequency: a pitch gliding evenly over the
    // tone gives its whole glide, a steady tone with a few disturbed frames (a splice, a click) not.
    const middleHz = hz[count >> 1]!;
    const deviations = hz.map((f) => Math.abs(f - middleHz)).sort((a, b) => a - b);
    // -1: no edge to test; 0: a quiet frame (below the level gate); Infinity: a glide, no edge.
    const contrast = (p: number) => (p < 0 ? Infinity : p === 0 ? 200 : median - 10 * Math.log10(p));
    return {
      onsetDb: contrast(this.onsetPower),
      offsetDb: contrast(this.offsetPower),
      spreadHz: 4 * deviations[deviations.length >> 1]!,
      levelStepDb: step,
      levelSpreadDb: residuals[count - 1 - trim]! - residuals[trim]!,
      harmonicDb: this.runHarmonicSum / this.runFrames,
    };
  }

  /** The power spectrum `age` frames back (0: this frame) holds around `bin`, 0 for a quiet frame. */
  private lobeIn(age: number, bin: number): number {
    if (this.quiet[age]) return 0;
    const spectrum = this.spectra[age]!;
    let lobe = 0;
    for (let k = bin - PEAK_HALF_WIDTH; k <= bin + PEAK_HALF_WIDTH; k++) lobe += spectrum[k]!;
    return lobe;
  }

  /**
   * Adds a tonal frame to the run. A run's first frame notes the onset: `onset` (-1: right after a
   * different tone, so no onset to test; Infinity: glided into from one) or else what its lobe held
   * two frames before (the frame before may hold part of the tone, the one before that none of it).
   */
  private extend(hz: number, onset?: number): void {
    if (this.runFrames === 0) {
      this.runPeakBin = this.peakBin;
      this.onsetPower = onset ?? this.lobeIn(2, this.peakBin);
    }
    this.lastHz = hz;
    // Frames of a gap inside the tone count towards its duration.
    this.runSpan += 1 + this.gap;
    this.gap = 0;
    if (this.runFrames < MAX_RUN_FRAMES) {
      this.runHz[this.runFrames] = hz;
      this.runDb[this.runFrames] = this.peakDb;
    }
    this.runFrames++;
    this.runHzSum += hz;
    this.runPuritySum += this.purity;
    this.runHarmonicSum += this.harmonicDb;
  }

  private finish(): DetectedTone | null {
    const tone = this.isTone() ? this.describe() : null;
    this.reset();
    this.offsetPower = -1;
    return tone;
  }

  private describe(): DetectedTone {
    return { frequencyHz: Math.round(this.runHzSum / this.runFrames), durationMs: this.runSpan * FRAME_MS };
  }

  /** The frequency of the frame's single dominant tone, or 0 when it has none. */
  private frameFrequency(frame: Int16Array): number {
    const oldest = this.spectra[2]!;
    this.spectra[2] = this.spectra[1]!;
    this.spectra[1] = this.spectra[0]!;
    this.spectra[0] = oldest;
    this.quiet[2] = this.quiet[1]!;
    this.quiet[1] = this.quiet[0]!;
    this.quiet[0] = true;
    const n = Math.min(frame.length, FFT_SIZE);
    if (n < 32) return 0;
    let sum = 0;
    let squares = 0;
    for (let i = 0; i < n; i++) {
      const v = frame[i]!;
      sum += v;
      squares += v * v;
    }
    const mean = sum / n;
    if (squares / n - mean * mean < this.minPower) return 0;

    const w = hann(n);
    for (let i = 0; i < n; i++) windowed[i] = (frame[i]! - mean) * w[i]!;
    powerSpectrum(windowed, n);
    this.spectra[0]!.set(power);
    this.quiet[0] = false;
    let total = 0;
    for (let k = 1; k <= HALF; k++) total += power[k]!;
    let peak = this.minBin;
    for (let k = this.minBin + 1; k <= this.maxBin; k++) if (power[k]! > power[peak]!) peak = k;
    let lobe = 0;
    for (let k = peak - PEAK_HALF_WIDTH; k <= peak + PEAK_HALF_WIDTH; k++) lobe += power[k]!;
    if (lobe < this.minPurity * total) return 0;
    this.purity = lobe / total;
    this.peakDb = 10 * Math.log10(lobe);
    this.peakBin = peak;
    // Parabolic interpolation of the log spectrum around the peak.
    const a = Math.log(power[peak - 1]! + 1e-9);
    const b = Math.log(power[peak]! + 1e-9);
    const c = Math.log(power[peak + 1]! + 1e-9);
    const denominator = a - 2 * b + c;
    const delta = denominator < 0 ? (0.5 * (a - c)) / denominator : 0;
    const hz = (peak + Math.max(-0.5, Math.min(0.5, delta))) * BIN_HZ;
    // The peak search spans whole bins: allow a tone at the very edge of the range.
    if (hz < this.minHz * 0.97 || hz > this.maxHz * 1.03) return 0;
    this.harmonicDb = harmonicRatioDb(hz, lobe);
    return hz;
  }
}

/**
 * Frames either side of a frame in the stretch whose straight line its level is measured against
 * (0.6 s in all): a line's AGC bends a long beep's level over a second or two, evenly at this
 * scale, while a syllable swells and fades within it.
 */
const TREND_HALF_FRAMES = 15;

/**
 * Each level's distance from the least-squares straight line (by position) through the stretch of
 * 2 * TREND_HALF_FRAMES + 1 levels around it (kept inside the run: the whole run when shorter).
 */
function levelsAroundTrend(levels: Float64Array): number[] {
  const n = levels.length;
  const width = Math.min(n, 2 * TREND_HALF_FRAMES + 1);
  return Array.from(levels, (y, i) => {
    const from = Math.max(0, Math.min(i - TREND_HALF_FRAMES, n - width));
    const meanX = from + (width - 1) / 2;
    let meanY = 0;
    for (let j = from; j < from + width; j++) meanY += levels[j]! / width;
    let sxy = 0;
    let sxx = 0;
    for (let j = from; j < from + width; j++) {
      sxy += (j - meanX) * (levels[j]! - meanY);
      sxx += (j - meanX) ** 2;
    }
    const slope = sxx === 0 ? 0 : sxy / sxx;
    return y - (meanY + slope * (i - meanX));
  });
}

/** The middle value (the upper one of an even count). */
function sortedMiddle(values: Float64Array): number {
  const sorted = Array.from(values).sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}
