/**
 * Two connected ends of a simulated telephone line. What one end says, keys or plays reaches the
 * other end as LegEvents with the timing a real line would have, measured on the injected Clock.
 *
 * Text mode carries utterances as text with their speaking time; `sendAudio` already carries
 * 20 ms mu-law frames so that an audio mode can reuse the same pair.
 */
import type { Clock } from '../../clock.js';
import type { CallLeg, LegEvent, LegListener, SpeakResult, SpeechText, TransferResult } from '../types.js';
import { textOf } from '../../media/sentences.js';

export interface LegTiming {
  /** Speaking time of one word. Default 60000/165 (165 words a minute). */
  msPerWord: number;
  /** Added to every utterance: breath, onset and trailing silence. Default 300. */
  utteranceOverheadMs: number;
  /** Length of one DTMF tone. Default 100. */
  dtmfDigitMs: number;
  /** What `w` in a DTMF string waits. Default 500. */
  dtmfPauseMs: number;
}

export const DEFAULT_TIMING: LegTiming = {
  msPerWord: 60_000 / 165,
  utteranceOverheadMs: 300,
  dtmfDigitMs: 100,
  dtmfPauseMs: 500,
};

export interface LegPairOptions extends Partial<LegTiming> {
  /** Default 'text'. */
  mode?: 'text' | 'audio';
  /** Names of the two ends in observations and logs. Default ['A', 'B']. */
  labels?: [string, string];
  /**
   * Decides a transfer asked by `end`. Without it, transfers fail. A handler that succeeds is
   * expected to have moved the far end elsewhere (see `SandboxLegEnd.rebind`).
   */
  onTransfer?: (end: SandboxLegEnd, to: string) => Promise<TransferResult>;
  /** Sees every event an end sends toward its peer (except audio frames), for call logs. */
  observe?: (from: SandboxLegEnd, event: LegEvent) => void;
}

interface Settings {
  clock: Clock;
  mode: 'text' | 'audio';
  timing: LegTiming;
  onTransfer: LegPairOptions['onTransfer'];
  observe: LegPairOptions['observe'];
}

const DTMF = /^[0-9*#A-Dw]*$/;

export function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w.length > 0);
}

/** How long saying `text` takes on a line with `timing`. */
export function speakingTimeMs(text: string, timing: LegTiming = DEFAULT_TIMING): number {
  const count = words(text).length;
  return count === 0 ? 0 : Math.round(count * timing.msPerWord + timing.utteranceOverheadMs);
}

/** Rejections of our own cut-offs are expected; the caller looks at what was played instead. */
const ignore = () => {};

export class SandboxLegEnd implements CallLeg {
  readonly mode: 'text' | 'audio';
  private peer: SandboxLegEnd | null = null;
  private readonly listeners = new Set<LegListener>();
  /** Events for this end's listeners, held until someone listens so that none is lost. */
  private readonly inbox: LegEvent[] = [];
  private flushScheduled = false;
  private hangupQueued = false;
  private isFinished = false;
  /** Cuts everything this end is playing when the call ends for it. */
  private cut = new AbortController();
  private speechTail: Promise<unknown> = Promise.resolve();
  private dtmfTail: Promise<unknown> = Promise.resolve();
  private resolveClosed!: () => void;
  /** Settles when this end is done: hung up by either side, dropped, or transferred away. */
  readonly closed = new Promise<void>((resolve) => (this.resolveClosed = resolve));

  constructor(
    readonly label: string,
    private readonly settings: Settings,
  ) {
    this.mode = settings.mode;
  }

  get finished(): boolean {
    return this.isFinished;
  }

  /** The end this one talks to, until the call ends or is rebound. */
  get far(): SandboxLegEnd | null {
    return this.peer;
  }

  on(listener: LegListener): () => void {
    this.listeners.add(listener);
    this.scheduleFlush();
    return () => this.listeners.delete(listener);
  }

  speak(source: SpeechText, options: { signal?: AbortSignal } = {}): Promise<SpeakResult> {
    // One end's utterances play one after another, as a carrier's playback queue would. Text
    // carries a reply whole: a streamed one is said once it is all written.
    const turn = this.speechTail.then(async () => this.playUtterance((await textOf(source)).trim(), options.signal));
    this.speechTail = turn.catch(ignore);
    return turn;
  }

  sendDtmf(digits: string): Promise<void> {
    const keys = digits.replace(/W/g, 'w');
    if (!DTMF.test(keys)) return Promise.reject(new RangeError(`invalid DTMF digits: ${digits}`));
    const turn = this.dtmfTail.then(() => this.playDigits(keys));
    this.dtmfTail = turn.catch(ignore);
    return turn;
  }

  /** Plays a single tone (a beep) toward the far end; the event arrives when the tone ends. */
  async playTone(frequencyHz: number, durationMs: number): Promise<void> {
    if (!(await this.wait(durationMs))) return;
    this.send({ type: 'tone', at: this.now(), frequencyHz, durationMs });
  }

  /** Sends one 20 ms mu-law frame (audio mode). Frames are not delayed: their pacing is the sender's. */
  sendAudio(payload: Buffer): void {
    this.send({ type: 'audio', at: this.now(), payload });
  }

  async transfer(to: string): Promise<TransferResult> {
    if (this.isFinished) return { ok: false, reason: 'The call has already ended' };
    const handler = this.settings.onTransfer;
    if (!handler) return { ok: false, reason: 'This line does not support transfers' };
    const result = await handler(this, to);
    if (result.ok && !this.isFinished) this.finish();
    return result;
  }

  hangup(): Promise<void> {
    this.end('remote');
    return Promise.resolve();
  }

  /** The network drops the call: both ends hear a `network` hangup. */
  drop(): void {
    for (const end of [this, this.peer]) {
      if (!end || end.isFinished) continue;
      end.deliver({ type: 'hangup', at: this.now(), reason: 'network' });
      end.finish(true);
    }
  }

  /**
   * Connects this end to a new end, handing it over from its current peer: the old peer is done
   * silently, as a transferring leg is. Returns the new peer, for whoever answers the transfer.
   */
  rebind(label: string): SandboxLegEnd {
    const old = this.peer;
    if (old && !old.isFinished) old.finish();
    const fresh = new SandboxLegEnd(label, this.settings);
    fresh.peer = this;
    this.peer = fresh;
    return fresh;
  }

  /** Hangs up from this end: the peer hears `reason`, this end hears nothing more. Idempotent. */
  private end(reason: 'remote' | 'network'): void {
    if (this.isFinished) return;
    const peer = this.peer;
    this.finish();
    if (peer && !peer.isFinished) {
      peer.deliver({ type: 'hangup', at: this.now(), reason });
      this.settings.observe?.(this, { type: 'hangup', at: this.now(), reason });
      peer.finish(true);
    }
  }

  /** `keepInbox`: the end still hears what was sent before (ending with the hangup event). */
  private finish(keepInbox = false): void {
    if (this.isFinished) return;
    this.isFinished = true;
    if (!keepInbox) this.inbox.length = 0;
    this.cut.abort();
    this.resolveClosed();
  }

  private async playUtterance(text: string, signal: AbortSignal | undefined): Promise<SpeakResult> {
    if (this.isFinished || signal?.aborted) return { played: '', interrupted: true };
    const all = words(text);
    if (all.length === 0) return { played: '', interrupted: false };
    const durationMs = speakingTimeMs(text, this.settings.timing);
    const startedAt = this.now().getTime();
    this.send({ type: 'speech_start', at: this.now() });
    // Word by word, with an interim transcript after each, as a streaming recogniser would hear it.
    const stepMs = durationMs / all.length;
    let completed = true;
    for (let i = 1; i <= all.length && completed; i++) {
      // Each word is due at a fixed offset from the start, so a late timer does not delay the rest.
      completed = await this.wait(Math.max(0, startedAt + i * stepMs - this.now().getTime()), signal);
      if (completed && i < all.length)
        this.send({ type: 'speech_partial', text: all.slice(0, i).join(' '), at: this.now() });
    }
    if (completed) {
      this.send({ type: 'speech', text, at: this.now(), durationMs });
      return { played: text, interrupted: false };
    }
    const elapsedMs = Math.max(0, Math.min(durationMs, this.now().getTime() - startedAt));
    const played = all.slice(0, Math.floor((all.length * elapsedMs) / durationMs)).join(' ');
    // A hangup cuts the utterance with nothing more to hear; a barge-in leaves what was said.
    if (!this.isFinished) this.send({ type: 'speech', text: played, at: this.now(), durationMs: elapsedMs });
    return { played, interrupted: true };
  }

  private async playDigits(keys: string): Promise<void> {
    const { dtmfDigitMs, dtmfPauseMs } = this.settings.timing;
    for (const key of keys) {
      if (!(await this.wait(key === 'w' ? dtmfPauseMs : dtmfDigitMs))) return;
      if (key !== 'w') this.send({ type: 'dtmf', at: this.now(), digit: key });
    }
  }

  /** Waits on the clock; false when the call ended for this end or `signal` aborted. */
  private async wait(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.isFinished) return false;
    const stop = signal ? AbortSignal.any([this.cut.signal, signal]) : this.cut.signal;
    try {
      await this.settings.clock.sleep(ms, stop);
      return !this.isFinished;
    } catch {
      return false;
    }
  }

  private send(event: LegEvent): void {
    const peer = this.peer;
    if (this.isFinished || !peer) return;
    if (event.type !== 'audio') this.settings.observe?.(this, event);
    peer.deliver(event);
  }

  private deliver(event: LegEvent): void {
    if (this.hangupQueued) return;
    if (event.type === 'hangup') this.hangupQueued = true;
    this.inbox.push(event);
    this.scheduleFlush();
  }

  /** Delivery is always asynchronous and in order, never inside the sender's call. */
  private scheduleFlush(): void {
    if (this.flushScheduled || this.inbox.length === 0 || this.listeners.size === 0) return;
    this.flushScheduled = true;
    queueMicrotask(() => {
      this.flushScheduled = false;
      try {
        while (this.inbox.length > 0 && this.listeners.size > 0) {
          const event = this.inbox.shift() as LegEvent;
          for (const listener of [...this.listeners]) listener(event);
        }
      } finally {
        // A throwing listener must not strand the events behind it.
        this.scheduleFlush();
      }
    });
  }

  private now(): Date {
    return this.settings.clock.now();
  }
}

/** What a persona drives: the far end of a line, in text mode (SandboxLegEnd) or audio mode. */
export interface PersonaLine {
  on(listener: LegListener): () => void;
  speak(text: string, options?: { signal?: AbortSignal }): Promise<SpeakResult>;
  /** A line it says next, given while it says the one before (audio mode synthesises it meanwhile). */
  prepare?(text: string): void;
  playTone(frequencyHz: number, durationMs: number): Promise<void>;
  hangup(): Promise<void>;
  /** Settles when the line is over for this end. */
  readonly closed: Promise<void>;
}

/** Two ends of one line: `a` is ours (the engine's), `b` the far end (a persona or another agent). */
export function createLegPair(clock: Clock, options: LegPairOptions = {}): { a: SandboxLegEnd; b: SandboxLegEnd } {
  const settings: Settings = {
    clock,
    mode: options.mode ?? 'text',
    timing: {
      msPerWord: options.msPerWord ?? DEFAULT_TIMING.msPerWord,
      utteranceOverheadMs: options.utteranceOverheadMs ?? DEFAULT_TIMING.utteranceOverheadMs,
      dtmfDigitMs: options.dtmfDigitMs ?? DEFAULT_TIMING.dtmfDigitMs,
      dtmfPauseMs: options.dtmfPauseMs ?? DEFAULT_TIMING.dtmfPauseMs,
    },
    onTransfer: options.onTransfer,
    observe: options.observe,
  };
  const [labelA, labelB] = options.labels ?? ['A', 'B'];
  const a = new SandboxLegEnd(labelA, settings);
  const b = a.rebind(labelB);
  return { a, b };
}
