import type { PacerTimer } from '../media/pacer.js';

/**
 * A PacerTimer whose time moves only when a test says so, for deterministic pacing tests:
 * `advance` fires due timers at their due time, `stall` moves time without firing anything (an
 * event loop blocked by other work), so the next `advance` finds them overdue.
 */
export class ManualTimer implements PacerTimer {
  private time = 0;
  private seq = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, ms: number): () => void {
    const timer = { at: this.time + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `ms`, firing every timer that falls due, each at its due time. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const next = this.timers.reduce<(typeof this.timers)[number] | undefined>(
        (best, t) => (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq) ? t : best),
        undefined,
      );
      if (!next || next.at > end) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.time = Math.max(this.time, next.at);
      next.fn();
    }
    this.time = end;
  }

  /** Moves time forward without firing timers, as a blocked event loop would. */
  stall(ms: number): void {
    this.time += ms;
  }

  get pending(): number {
    return this.timers.length;
  }
}
