/**
 * A tiny scripted agent for sandbox tests: it records what it hears on a leg and waits for
 * events on the test's clock, so a test reads like the call it places.
 */
import assert from 'node:assert/strict';
import type { Clock } from '../../src/clock.js';
import type { CallLeg, LegEvent } from '../../src/carriers/types.js';

export type EventOf<T extends LegEvent['type']> = Extract<LegEvent, { type: T }>;

export class ScriptedAgent {
  readonly events: LegEvent[] = [];
  /** Interim transcripts, kept apart so that `events` reads as the turn structure. */
  readonly partials: string[] = [];
  /** Events before this index have been consumed by `next`. */
  private cursor = 0;
  private wake: (() => void) | null = null;

  constructor(
    readonly leg: CallLeg,
    private readonly clock: Clock,
  ) {
    leg.on((event) => {
      if (event.type === 'speech_partial') {
        this.partials.push(event.text);
        return;
      }
      this.events.push(event);
      this.wake?.();
    });
  }

  /** Texts of every utterance heard so far. */
  get heard(): string[] {
    return this.events.filter((e): e is EventOf<'speech'> => e.type === 'speech').map((e) => e.text);
  }

  get hungUp(): boolean {
    return this.events.some((e) => e.type === 'hangup');
  }

  /**
   * The next not yet consumed event of `type` (matching `test`), waiting up to `timeoutMs` of
   * clock time; events skipped on the way are consumed too.
   */
  async next<T extends LegEvent['type']>(
    type: T,
    test: (event: EventOf<T>) => boolean = () => true,
    timeoutMs = 120_000,
  ): Promise<EventOf<T>> {
    const deadline = this.clock.now().getTime() + timeoutMs;
    for (;;) {
      while (this.cursor < this.events.length) {
        const event = this.events[this.cursor++] as LegEvent;
        if (event.type === type && test(event as EventOf<T>)) return event as EventOf<T>;
      }
      const remaining = deadline - this.clock.now().getTime();
      if (remaining <= 0) {
        throw new Error(`no ${type} event within ${timeoutMs} ms; heard: ${JSON.stringify(this.heard)}`);
      }
      await new Promise<void>((resolve) => {
        const cancel = this.clock.setTimer(resolve, remaining);
        this.wake = () => {
          cancel();
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /** The next utterance whose text matches `pattern`. */
  hear(pattern: RegExp, timeoutMs?: number): Promise<EventOf<'speech'>> {
    return this.next('speech', (e) => pattern.test(e.text), timeoutMs);
  }

  /** Says `text` and waits until it has been played. */
  async say(text: string): Promise<void> {
    await this.leg.speak(text);
  }
}

export function clockMs(clock: Clock): number {
  return clock.now().getTime();
}

/**
 * Asserts a clock duration lies in [min, max], with slack for real timers: the scaled clock
 * follows real time, where a timer may fire a millisecond early and, on a loaded machine, tens of
 * milliseconds late (seconds of clock time at the scales tests use). The slack stays well below
 * the differences the tests tell apart.
 */
export function assertBetween(actual: number, min: number, max: number, what = 'duration'): void {
  const early = 1000;
  const late = 10_000;
  if (actual < min - early || actual > max + late) {
    throw new assert.AssertionError({ message: `${what}: ${actual} ms, expected ${min} to ${max} ms` });
  }
}
