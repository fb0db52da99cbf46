/**
 * Turn-taking over VAD scores: hysteresis turns the per-frame speech probability into speech
 * starts and ends, and the call's interruption_threshold sets how much trailing silence ends a
 * turn. Pure and frame-driven: time is counted in 20 ms frames of inbound audio, so the same
 * audio gives the same turns however fast it is fed (tests, benchmarks, a loaded machine).
 */

import { FRAME_MS } from './audio.js';

/**
 * Trailing silence (ms) after the last voiced frame that ends the caller's turn, from the call's
 * interruption_threshold ("patience before responding; lower = faster"): 4 ms per unit, bounded
 * to 100..2000 ms. The default 100 waits 400 ms; 50 waits 200 ms; 200 waits 800 ms. The session
 * waits as long after a text leg's utterance, so both modes answer alike.
 */
export function endOfTurnMs(interruptionThreshold: number): number {
  return Math.min(2000, Math.max(100, interruptionThreshold * 4));
}

export interface TurnDetectorOptions {
  /** The call's interruption_threshold (default 100). */
  interruptionThreshold: number;
  /** A frame whose score reaches this counts as voiced. Default 0.5. */
  startScore?: number;
  /** While speaking, a frame below this counts as silent (hysteresis: lower than startScore). Default 0.35. */
  endScore?: number;
  /** Voiced frames in a row that make a start (filters clicks). Default 3 (60 ms). */
  startFrames?: number;
}

export type TurnSignal =
  /** Speech began; `startFrame` is the first voiced frame of the run that confirmed it. */
  | { type: 'start'; startFrame: number }
  /** Enough trailing silence followed the last voiced frame: the turn's audio is over. */
  | { type: 'end'; startFrame: number; lastVoicedFrame: number };

/**
 * Feeds on one VAD score per frame. Between a start and an end, a voiced frame resets the
 * trailing-silence count, so a pause shorter than the threshold's silence keeps the turn open.
 */
export class TurnDetector {
  readonly silenceFrames: number;
  private readonly startScore: number;
  private readonly endScore: number;
  private readonly startFrames: number;
  private frame = -1;
  private run = 0;
  private runStart = 0;
  private speaking = false;
  private startFrame = 0;
  private lastVoiced = 0;

  constructor(options: TurnDetectorOptions) {
    this.silenceFrames = Math.ceil(endOfTurnMs(options.interruptionThreshold) / FRAME_MS);
    this.startScore = options.startScore ?? 0.5;
    this.endScore = options.endScore ?? 0.35;
    this.startFrames = Math.max(1, options.startFrames ?? 3);
  }

  /** True between a start and its end. */
  get inSpeech(): boolean {
    return this.speaking;
  }

  /** Index of the frame last fed (0-based). */
  get frameIndex(): number {
    return this.frame;
  }

  /** Frames of silence since the last voiced frame (0 while voiced). */
  get silentFor(): number {
    return this.frame - this.lastVoiced;
  }

  /** Feeds the next frame's score; returns a signal when a start or an end happens on it. */
  push(score: number): TurnSignal | null {
    this.frame++;
    if (!this.speaking) {
      if (score >= this.startScore) {
        if (this.run === 0) this.runStart = this.frame;
        this.run++;
        if (this.run >= this.startFrames) {
          this.speaking = true;
          this.startFrame = this.runStart;
          this.lastVoiced = this.frame;
          this.run = 0;
          return { type: 'start', startFrame: this.startFrame };
        }
      } else {
        this.run = 0;
      }
      return null;
    }
    if (score >= this.endScore) {
      this.lastVoiced = this.frame;
      return null;
    }
    if (this.frame - this.lastVoiced >= this.silenceFrames) {
      this.speaking = false;
      return { type: 'end', startFrame: this.startFrame, lastVoicedFrame: this.lastVoiced };
    }
    return null;
  }
}
