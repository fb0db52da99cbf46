/**
 * Time as the service sees it. Everything that waits (ringing, speaking, max_duration, scheduled
 * calls, retries) goes through a Clock, so tests run the same code in accelerated time.
 */
export interface Clock {
  now(): Date;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Runs `fn` after `ms` of this clock's time; returns a function that cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
  /** Clock milliseconds per real millisecond (1 in production). */
  readonly scale: number;
}

/**
 * A clock whose time runs `scale` times faster than real time from the moment it is made.
 * scale 1 is the system clock; tests use e.g. 200 so that a 30 s ring takes 150 ms.
 */
export class ScaledClock implements Clock {
  private readonly realStart = Date.now();
  private readonly start: number;

  constructor(
    readonly scale = 1,
    start: Date = new Date(),
  ) {
    if (!(scale > 0)) throw new Error('clock scale must be positive');
    this.start = start.getTime();
  }

  now(): Date {
    if (this.scale === 1 && this.start === this.realStart) return new Date();
    return new Date(this.start + (Date.now() - this.realStart) * this.scale);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const onAbort = () => {
        cancel();
        reject(signal?.reason as Error);
      };
      const cancel = this.setTimer(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(fn: () => void, ms: number): () => void {
    // Node timers overflow past 2^31-1 ms: wait in steps for longer delays (e.g. a scheduled call).
    const realMs = Math.max(0, ms / this.scale);
    const MAX = 2_000_000_000;
    let handle: NodeJS.Timeout;
    const arm = (remaining: number) => {
      handle = setTimeout(() => (remaining > MAX ? arm(remaining - MAX) : fn()), Math.min(remaining, MAX));
    };
    arm(realMs);
    return () => clearTimeout(handle);
  }
}

export const systemClock: Clock = new ScaledClock(1);

/** ISO 8601 UTC text, the storage and response format of every time. */
export function iso(date: Date): string {
  return date.toISOString();
}
