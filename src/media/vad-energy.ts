/**
 * Energy VAD: the fallback when Silero cannot load, and cheap enough for any number of calls (one
 * pass over the frame). A frame's speech probability rises with its level above the line's noise
 * floor, which is tracked by minimum statistics: the quietest frame of the last ~3 s (speech always
 * has quieter moments between words, so talking does not raise the floor; steady line noise does,
 * within one window). Frames below an absolute level are never speech.
 */
import type { Vad } from './vad.js';

export interface EnergyVadOptions {
  /** Level above the noise floor where the probability is 0.5, dB. Default 7. */
  midSnrDb?: number;
  /** Level under which nothing is speech, dBFS. Default -52. */
  minLevelDbfs?: number;
  /** How long the floor remembers a quiet moment. Default 3000 ms. */
  floorWindowMs?: number;
}

/** Sub-windows of the minimum tracker: the floor can rise every window / SUB_WINDOWS. */
const SUB_WINDOWS = 6;
/** The quietest frame of stationary noise sits about this far below its mean level. */
const FLOOR_BIAS_DB = 1.5;
const SILENCE_DBFS = -90;
/** Width of the probability's logistic slopes, dB. */
const SLOPE_DB = 2.5;

export class EnergyVad implements Vad {
  readonly name = 'energy';
  private readonly midSnr: number;
  private readonly minLevel: number;
  private readonly subFrames: number;
  private readonly minima = new Float64Array(SUB_WINDOWS);
  private slot = 0;
  private count = 0;
  private current = Infinity;
  /** Level of the last frame, dBFS (for tests and diagnostics). */
  lastLevelDbfs = SILENCE_DBFS;
  /** The current noise floor estimate, dBFS. */
  noiseFloorDbfs = SILENCE_DBFS;

  constructor(options: EnergyVadOptions = {}) {
    this.midSnr = options.midSnrDb ?? 7;
    this.minLevel = options.minLevelDbfs ?? -52;
    this.subFrames = Math.max(1, Math.round((options.floorWindowMs ?? 3000) / 20 / SUB_WINDOWS));
    this.reset();
  }

  process(frame: Int16Array): number {
    let sum = 0;
    for (let i = 0; i < frame.length; i++) sum += frame[i]! * frame[i]!;
    const meanSquare = frame.length > 0 ? sum / frame.length : 0;
    const level = meanSquare > 0 ? Math.max(SILENCE_DBFS, 10 * Math.log10(meanSquare / (32768 * 32768))) : SILENCE_DBFS;
    this.lastLevelDbfs = level;

    if (level < this.current) this.current = level;
    if (++this.count === this.subFrames) {
      this.minima[this.slot] = this.current;
      this.slot = (this.slot + 1) % SUB_WINDOWS;
      this.current = Infinity;
      this.count = 0;
    }
    let floor = this.current;
    for (let i = 0; i < SUB_WINDOWS; i++) if (this.minima[i]! < floor) floor = this.minima[i]!;
    this.noiseFloorDbfs = floor + FLOOR_BIAS_DB;

    const snr = level - this.noiseFloorDbfs;
    const aboveFloor = 1 / (1 + Math.exp(-(snr - this.midSnr) / SLOPE_DB));
    const audible = 1 / (1 + Math.exp(-(level - this.minLevel) / SLOPE_DB));
    return aboveFloor * audible;
  }

  reset(): void {
    this.minima.fill(Infinity);
    this.slot = this.count = 0;
    this.current = Infinity;
    this.noiseFloorDbfs = this.lastLevelDbfs = SILENCE_DBFS;
  }
}
