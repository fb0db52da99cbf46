/**
 * Outbound frame pacing. A carrier plays what we send as it arrives, so audio must leave at the
 * rate it plays: one 20 ms frame every 20 ms, neither in bursts (the far end's buffer grows and
 * barge-in gets slow) nor late (the far end runs dry and the voice stutters).
 *
 * One FrameScheduler serves every call of the process with a single timer: slot n is due at
 * origin + n * 20 ms (absolute deadlines, so timer lateness never accumulates into drift), and a
 * timer that fires late runs the missed slots back to back. Build one per process (in the service
 * bag) and give it to every call's FramePacer: 200 calls then cost one timer tick per 20 ms, not
 * 200 timers.
 *
 * A FramePacer is one call's outbound queue: frames and marks in order, sent one frame per slot;
 * a mark fires (transport mark + callback) once everything queued before it has been sent. When
 * the queue is empty an optional FrameFill supplies frames (a background track), and it can mix
 * itself under queued frames as they leave, so the background runs in real time whatever the
 * agent does. After silence the first frame leaves at once rather than at the next slot, so a
 * reply does not wait up to 20 ms for the grid.
 *
 * With `aheadFrames` (the server uses 2), each call keeps that many frames at the far end beyond
 * the one playing: when audio starts (or the far end has run dry) that many more leave at once,
 * then one per slot as before, so the far end is always that far ahead. A stall of the event loop,
 * or network jitter, shorter than the cushion then leaves no gap in what the caller hears. Barge-in
 * costs nothing more (the carrier's clear drops the far end's buffer); what it costs is that audio
 * queued behind a playing background track starts playing that much later. A frame's lateness is
 * counted against the moment the far end needs it: its slot plus the cushion.
 */
import type { Clock } from '../clock.js';
import { FRAME_MS, FRAME_SAMPLES } from './audio.js';
import type { MediaTransport } from './transport.js';

/** The time source and timer the scheduler runs on; injected so tests step time by hand. */
export interface PacerTimer {
  /** Milliseconds, monotonic, fractional when the source allows. */
  now(): number;
  /** Runs `fn` after `ms`; returns the cancel function. */
  setTimer(fn: () => void, ms: number): () => void;
  /** Timer milliseconds per real millisecond (accelerated test clocks). Default 1. */
  readonly scale?: number;
}

/** Real time: performance.now() and setTimeout. */
export const realTimer: PacerTimer = {
  now: () => performance.now(),
  setTimer(fn, ms) {
    const handle = setTimeout(fn, ms);
    return () => clearTimeout(handle);
  },
};

/** The scheduler on a service Clock (accelerated in tests; real time when its scale is 1). */
export function clockTimer(clock: Clock): PacerTimer {
  if (clock.scale === 1) return realTimer;
  return { now: () => clock.now().getTime(), setTimer: (fn, ms) => clock.setTimer(fn, ms), scale: clock.scale };
}

/**
 * Histogram of how late frames left versus their slot's deadline: 0.1 ms buckets up to 1 s, so
 * recording is a counter increment (no allocation) and percentiles are exact to 0.1 ms.
 */
export class LatenessStats {
  private static readonly BUCKET_MS = 0.1;
  private readonly buckets = new Uint32Array(10_001);
  frames = 0;
  /** Frames later than `lateThresholdMs`. */
  lateFrames = 0;
  maxMs = 0;
  private sumMs = 0;

  constructor(readonly lateThresholdMs = FRAME_MS) {}

  record(latenessMs: number): void {
    const ms = latenessMs > 0 ? latenessMs : 0;
    this.frames++;
    this.sumMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
    if (ms > this.lateThresholdMs) this.lateFrames++;
    const bucket = Math.min(this.buckets.length - 1, Math.floor(ms / LatenessStats.BUCKET_MS));
    this.buckets[bucket]!++;
  }

  /** The lateness that `p` (0..1) of frames did not exceed, in ms (upper edge of its bucket). */
  percentile(p: number): number {
    if (this.frames === 0) return 0;
    const rank = Math.max(1, Math.ceil(p * this.frames));
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= rank) return Math.min(this.maxMs, (i + 1) * LatenessStats.BUCKET_MS);
    }
    return this.maxMs;
  }

  get meanMs(): number {
    return this.frames === 0 ? 0 : this.sumMs / this.frames;
  }

  reset(): void {
    this.buckets.fill(0);
    this.frames = this.lateFrames = this.maxMs = this.sumMs = 0;
  }
}

export interface FrameSchedulerOptions {
  /** Default realTimer. */
  timer?: PacerTimer;
  /**
   * After a stall, at most this many overdue slots run back to back; older ones are skipped
   * (counted in `skippedSlots`) so a long pause does not leave the far end seconds behind.
   * Default 10 (200 ms), times the timer's scale: an accelerated clock runs many slots per tick.
   */
  maxCatchUpSlots?: number;
  /** A slot may run this early: node timers have 1 ms granularity. Default 1 ms. */
  earlyMs?: number;
  /**
   * Pacers are spread over this many phases of the 20 ms grid (pacer i sends at origin + n * 20 +
   * (i mod phases) * 20 / phases), so that with hundreds of calls the sends come in several small
   * bursts rather than one long one that holds up everything else the process has to do. Each call
   * still gets exactly one frame every 20 ms. Default 1.
   */
  phases?: number;
  /**
   * Frames each call keeps at the far end beyond the one playing (see above). Default 0: every
   * frame leaves on its slot, none ahead.
   */
  aheadFrames?: number;
  /**
   * Work deferred with defer() runs in slices of at most this many milliseconds (real time), each
   * followed by a turn of the event loop, where the grid's timer runs if it is due. Default 4.
   */
  sliceMs?: number;
}

/** The process-wide 20 ms grid that drives every call's FramePacer from one timer. */
export class FrameScheduler {
  /** Lateness of every frame sent through this scheduler's pacers. */
  readonly stats = new LatenessStats();
  /** Slots not run because the event loop stalled longer than maxCatchUpSlots. */
  skippedSlots = 0;
  /** Slots run. */
  slotsRun = 0;

  readonly timer: PacerTimer;
  private readonly maxCatchUp: number;
  private readonly earlyMs: number;
  readonly phases: number;
  /** Frames each pacer keeps at the far end beyond the one playing. */
  readonly aheadFrames: number;
  /** Milliseconds between sub-slots (FRAME_MS / phases). */
  private readonly stepMs: number;
  private nextPhase = 0;
  private readonly pacers: FramePacer[] = [];
  private needsCompaction = false;
  private origin = 0;
  private nextSlot = 0;
  private cancel: (() => void) | null = null;
  private inTimer = false;
  private readonly sliceMs: number;
  /** Deferred work, first in first out from `deferredHead`. */
  private deferred: ((() => void) | undefined)[] = [];
  private deferredHead = 0;
  private sliceArmed = false;

  constructor(options: FrameSchedulerOptions = {}) {
    this.timer = options.timer ?? realTimer;
    this.phases = Math.max(1, Math.floor(options.phases ?? 1));
    this.aheadFrames = Math.max(0, Math.floor(options.aheadFrames ?? 0));
    this.stepMs = FRAME_MS / this.phases;
    const slots = Math.max(1, options.maxCatchUpSlots ?? Math.ceil(10 * Math.max(1, this.timer.scale ?? 1)));
    // Counted in sub-slots: a stall catches up the same span of time whatever the phases.
    this.maxCatchUp = slots * this.phases;
    this.earlyMs = options.earlyMs ?? 1;
    this.sliceMs = options.sliceMs ?? 4;
  }

  /**
   * Runs `task` soon, after the work deferred before it, in a slice between the grid's slots: work
   * that can wait a few milliseconds (a call's inbound audio: decoding, the echo guard, VAD,
   * recognition, beep detection) and arrives in bursts (hundreds of calls' packets read in one go)
   * then never holds up the frames every call has to send. The event loop reads sockets before it
   * runs such slices, so reading stays cheap and the slices take what was read in order.
   */
  defer(task: () => void): void {
    this.deferred.push(task);
    if (!this.sliceArmed) {
      this.sliceArmed = true;
      setImmediate(this.runSlice);
    }
  }

  /** Tasks deferred and not yet run. */
  get deferredCount(): number {
    return this.deferred.length - this.deferredHead;
  }

  private readonly runSlice = (): void => {
    const end = performance.now() + this.sliceMs;
    try {
      // At least one task a slice, however long the last one took.
      do {
        const task = this.deferred[this.deferredHead]!;
        this.deferred[this.deferredHead++] = undefined;
        task();
      } while (this.deferredHead < this.deferred.length && performance.now() < end);
    } finally {
      if (this.deferredHead >= this.deferred.length) {
        this.deferred = [];
        this.deferredHead = 0;
        this.sliceArmed = false;
      } else {
        if (this.deferredHead > 1024) {
          this.deferred = this.deferred.slice(this.deferredHead);
          this.deferredHead = 0;
        }
        // The next slice after a turn of the event loop: timers that came due run first.
        setImmediate(this.runSlice);
      }
    }
  };

  createPacer(sink: FrameSink, options: FramePacerOptions = {}): FramePacer {
    const pacer = new FramePacer(this, sink, options, this.nextPhase);
    this.nextPhase = (this.nextPhase + 1) % this.phases;
    return pacer;
  }

  /** Pacers with something to send (queued frames or a fill); the rest cost nothing per slot. */
  get activeCount(): number {
    let n = 0;
    for (const p of this.pacers) if (p.scheduled) n++;
    return n;
  }

  /** Whether the timer is armed. */
  get running(): boolean {
    return this.cancel !== null;
  }

  /** @internal A pacer has something to send. */
  activate(pacer: FramePacer): void {
    if (pacer.scheduled) return;
    pacer.scheduled = true;
    if (!pacer.listed) {
      pacer.listed = true;
      this.pacers.push(pacer);
    }
    if (this.cancel === null && !this.inTimer) {
      // Idle until now: a fresh grid starts here.
      this.origin = this.timer.now();
      this.nextSlot = 1;
      this.arm();
    }
  }

  /** @internal A pacer has nothing left to send. Removal waits for the end of the slot. */
  deactivate(pacer: FramePacer): void {
    if (!pacer.scheduled) return;
    pacer.scheduled = false;
    this.needsCompaction = true;
  }

  private arm(): void {
    const deadline = this.origin + this.nextSlot * this.stepMs;
    const delay = Math.max(0, deadline - this.earlyMs - this.timer.now());
    this.cancel = this.timer.setTimer(this.onTimer, delay);
  }

  private readonly onTimer = (): void => {
    this.cancel = null;
    this.inTimer = true;
    const now = this.timer.now();
    // (Sub-)slots whose deadline has come (allowing earlyMs): normally 1, more after a stall.
    let due = Math.floor((now + this.earlyMs - this.origin) / this.stepMs) - this.nextSlot + 1;
    if (due > this.maxCatchUp) {
      this.skippedSlots += due - this.maxCatchUp;
      this.nextSlot += due - this.maxCatchUp;
      due = this.maxCatchUp;
    }
    try {
      for (let i = 0; i < due; i++) {
        this.runSlot(this.origin + this.nextSlot * this.stepMs, this.nextSlot % this.phases);
        this.nextSlot++;
      }
    } finally {
      if (this.needsCompaction) this.compact();
      this.inTimer = false;
      if (this.pacers.length > 0) this.arm();
    }
  };

  private runSlot(deadline: number, phase: number): void {
    if (phase === 0) this.slotsRun++;
    // Pacers activated during the slot (by a callback) start at the next one.
    const n = this.pacers.length;
    for (let i = 0; i < n; i++) {
      const pacer = this.pacers[i]!;
      if (pacer.scheduled && pacer.phase === phase) pacer.runSlot(deadline);
    }
  }

  private compact(): void {
    let kept = 0;
    for (let i = 0; i < this.pacers.length; i++) {
      const pacer = this.pacers[i]!;
      if (pacer.scheduled) this.pacers[kept++] = pacer;
      else pacer.listed = false;
    }
    this.pacers.length = kept;
    this.needsCompaction = false;
  }

  /** Stops the timer (pacers keep their queues; the next activation restarts it). */
  stop(): void {
    this.cancel?.();
    this.cancel = null;
    for (const pacer of this.pacers) {
      pacer.scheduled = false;
      pacer.listed = false;
    }
    this.pacers.length = 0;
  }
}

/** Where a pacer sends: a MediaTransport, or a wrapper that also records what leaves. */
export type FrameSink = Pick<MediaTransport, 'sendMedia'> & Partial<Pick<MediaTransport, 'sendMark'>>;

/** Audio for slots with nothing queued (a background track), optionally mixed under queued frames. */
export interface FrameFill {
  /** A frame for a slot with nothing queued, or null to send nothing (the far end plays silence). */
  fill(): Buffer | null;
  /** Transforms a queued frame as it leaves (mixes the background under it). */
  mix?(frame: Buffer): Buffer;
}

export interface FramePacerOptions {
  /** Called when a mark's turn comes: every frame queued before it has been sent. */
  onMark?: (name: string) => void;
  /** Called when the last queued frame has been sent (not after clear()). */
  onDrain?: () => void;
  /** Called when the sink (or a callback) throws; the pacer is closed. */
  onError?: (error: unknown) => void;
  /** Background source for empty slots. */
  fill?: FrameFill | null;
  /** Send the first frame after silence at once instead of at the next slot. Default true. */
  startImmediately?: boolean;
}

/** Per-call outbound queue paced by a FrameScheduler. */
export class FramePacer {
  /** @internal Has something to send (in the scheduler's active set). */
  scheduled = false;
  /** @internal Present in the scheduler's array (removal is deferred to the end of a slot). */
  listed = false;

  /** Frames sent from the queue. */
  framesSent = 0;
  /** Queued frames to send unmixed (see enqueue). */
  private readonly asIs = new WeakSet<Buffer>();
  /** Frames sent from the fill. */
  fillFramesSent = 0;
  /** Frames (queued or fill) that left more than 20 ms after their slot's deadline. */
  lateFrames = 0;
  maxLatenessMs = 0;
  /** Set when the sink threw. */
  error: unknown = null;

  // Frames (Buffer) and marks (string) in order, in a ring that grows by doubling.
  private ring: (Buffer | string | undefined)[] = new Array<Buffer | string | undefined>(64);
  private head = 0;
  private size = 0;
  private queuedFrames = 0;
  private fillSource: FrameFill | null;
  // When the far end will have played everything sent so far, on the timer's clock (no network delay).
  private playoutEnd = -Infinity;
  /** Frames sent ahead of the grid since the far end last ran dry (up to the scheduler's aheadFrames). */
  private ahead = 0;
  private closed = false;
  /** Queued audio is held (the caller may be interrupting); the fill still plays. */
  private held = false;
  /**
   * What left the queue lately (frames as queued, before any mixing, with when the far end starts
   * playing each; marks), for rewind(): at most the cushion's frames and the one playing, with the
   * marks among and after them.
   */
  private recent: { item: Buffer | string; playAt: number }[] = [];
  private drainWaiters: (() => void)[] = [];

  constructor(
    private readonly scheduler: FrameScheduler,
    private readonly sink: FrameSink,
    private readonly options: FramePacerOptions = {},
    /** @internal Which phase of the scheduler's grid this pacer sends on. */
    readonly phase = 0,
  ) {
    this.fillSource = options.fill ?? null;
    if (this.fillSource) scheduler.activate(this);
  }

  /** Milliseconds of audio queued and not yet sent. */
  get queuedMs(): number {
    return this.queuedFrames * FRAME_MS;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Milliseconds of audio sent and not yet played at the far end (the cushion sent ahead). */
  get bufferedMs(): number {
    return Math.max(0, this.playoutEnd - this.scheduler.timer.now());
  }

  /** True while pause() holds the queue. */
  get paused(): boolean {
    return this.held;
  }

  /**
   * Holds the queued audio where it is: from the next slot only the fill (or nothing) is sent,
   * and what the far end was sent ahead plays out. resume() goes on from the same frame, so
   * nothing is repeated or skipped. clear() ends the pause too.
   */
  pause(): void {
    this.held = true;
  }

  /**
   * For a held queue whose far end is about to drop what it buffered (the transport's clear(),
   * which the caller sends right after): puts the frames sent ahead that the far end has not
   * started playing back at the head of the queue, with the marks among and after them (renamed by
   * `rename`, since the far end may echo the old names on clear), so resume() goes on from the
   * frame the caller last heard. Returns the milliseconds of audio put back.
   */
  rewind(rename: (mark: string) => string): number {
    const now = this.scheduler.timer.now();
    const from = this.recent.findIndex((e) => typeof e.item !== 'string' && e.playAt >= now);
    const back = from < 0 ? [] : this.recent.slice(from);
    this.recent = [];
    // The far end's buffer is about to be emptied: the next frame starts a fresh cushion.
    this.playoutEnd = Math.min(this.playoutEnd, now);
    this.ahead = 0;
    let frames = 0;
    for (let i = back.length - 1; i >= 0; i--) {
      const item = back[i]!.item;
      if (typeof item === 'string') this.unshift(rename(item));
      else {
        this.unshift(item);
        frames++;
      }
    }
    this.queuedFrames += frames;
    if (frames > 0 && !this.held && !this.closed) this.scheduler.activate(this);
    return frames * FRAME_MS;
  }

  resume(): void {
    if (!this.held) return;
    this.held = false;
    if (!this.closed && this.size > 0) this.scheduler.activate(this);
  }

  /**
   * Queues 20 ms mu-law frames (FRAME_SAMPLES bytes each). `asIs`: sent as they are, the same
   * buffers, with no background mixed under them (key tones: clean for the far end's detector,
   * and recognisable by the sink, which may send them as RFC 4733 events instead).
   */
  enqueue(frames: readonly Buffer[], options: { asIs?: boolean } = {}): void {
    if (this.closed || frames.length === 0) return;
    for (const frame of frames) {
      if (frame.length !== FRAME_SAMPLES) throw new RangeError(`frames must be ${FRAME_SAMPLES} bytes`);
      if (options.asIs) this.asIs.add(frame);
    }
    const wasEmpty = this.queuedFrames === 0;
    for (const frame of frames) this.push(frame);
    this.queuedFrames += frames.length;
    const now = this.scheduler.timer.now();
    try {
      // Only when the far end has run dry: sending ahead of a playing stream gains nothing and
      // would grow its buffer (and barge-in latency) by a frame each time.
      if (this.held) {
        // Held: the frames wait for resume().
      } else if (wasEmpty && this.options.startImmediately !== false && this.playoutEnd <= now) this.sendNext(now, now);
      // Audio is playing and the cushion is not full (it started with fewer frames than it holds).
      if (!this.held && this.ahead < this.scheduler.aheadFrames && this.playoutEnd > now) this.sendAhead(now);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (!this.closed && this.size > 0) this.scheduler.activate(this);
  }

  /**
   * Queues a mark behind the audio queued so far. When its turn comes, the transport's mark is
   * sent (the far end echoes it once that audio has played) and onMark is called. With nothing
   * queued, that is now.
   */
  mark(name: string): void {
    if (this.closed) return;
    if (this.size === 0) {
      this.fireMark(name);
      return;
    }
    this.push(name);
  }

  /**
   * Drops everything queued (frames and marks not yet reached); returns the milliseconds of audio
   * dropped. The far end's own buffer is the transport's clear(): barge-in calls both.
   */
  clear(): number {
    const dropped = this.queuedFrames * FRAME_MS;
    this.held = false;
    // Barge-in clears the far end too: what it held is gone, and the next audio starts afresh.
    if (this.ahead > 0) {
      this.playoutEnd = -Infinity;
      this.ahead = 0;
    }
    for (let i = 0; i < this.size; i++) this.ring[(this.head + i) & (this.ring.length - 1)] = undefined;
    this.head = this.size = this.queuedFrames = 0;
    this.recent = [];
    this.resolveDrain();
    if (!this.fillSource) this.scheduler.deactivate(this);
    return dropped;
  }

  /** Resolves when nothing is queued: everything was sent, cleared, or the pacer closed. */
  drained(): Promise<void> {
    if (this.queuedFrames === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Sets or removes the background source for empty slots. */
  setFill(fill: FrameFill | null): void {
    if (this.closed) return;
    this.fillSource = fill;
    if (fill) this.scheduler.activate(this);
    else if (this.size === 0) this.scheduler.deactivate(this);
  }

  /** Stops sending for good: drops the queue and leaves the scheduler. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.clear();
    this.closed = true;
    this.fillSource = null;
    this.scheduler.deactivate(this);
  }

  /** @internal One slot of the grid. */
  runSlot(deadline: number): void {
    const now = this.scheduler.timer.now();
    // The far end plays this slot's frame `ahead` slots from now.
    const due = deadline + this.ahead * FRAME_MS;
    try {
      this.sendOne(now, due);
      this.sendAhead(now);
    } catch (error) {
      this.fail(error);
      return;
    }
    if ((this.size === 0 || this.held) && !this.fillSource) this.scheduler.deactivate(this);
  }

  private sendNext(now: number, deadline: number): void {
    this.fireLeadingMarks();
    const queued = this.shift() as Buffer;
    let frame = queued;
    this.queuedFrames--;
    if (this.fillSource?.mix && !this.asIs.has(frame)) frame = this.fillSource.mix(frame);
    this.framesSent++;
    this.send(frame, now, deadline);
    this.remember(queued, this.playoutEnd - FRAME_MS);
    // Marks right behind this frame are reached now, not a slot later.
    this.fireLeadingMarks();
    if (this.queuedFrames === 0) {
      this.resolveDrain();
      this.options.onDrain?.();
    }
  }

  /** Sends the next queued frame, or else a frame of the fill; false when there is neither. */
  private sendOne(now: number, deadline: number): boolean {
    if (this.queuedFrames > 0 && !this.held) {
      this.sendNext(now, deadline);
      return true;
    }
    this.fireLeadingMarks();
    const frame = this.fillSource?.fill() ?? null;
    if (!frame) return false;
    this.fillFramesSent++;
    this.send(frame, now, deadline);
    return true;
  }

  /** Tops the far end up to aheadFrames beyond the one playing, from the queue or else the fill. */
  private sendAhead(now: number): void {
    // Early by construction: each is due when the frames before it have played.
    while (this.ahead < this.scheduler.aheadFrames && !this.closed && this.sendOne(now, this.playoutEnd)) this.ahead++;
  }

  private send(frame: Buffer, now: number, deadline: number): void {
    // The far end ran dry before this frame: the cushion is gone and is built again after it.
    if (this.playoutEnd <= now) this.ahead = 0;
    const lateness = now - deadline;
    this.scheduler.stats.record(lateness);
    if (lateness > FRAME_MS) this.lateFrames++;
    if (lateness > this.maxLatenessMs) this.maxLatenessMs = lateness;
    this.playoutEnd = Math.max(this.playoutEnd, now) + FRAME_MS;
    this.sink.sendMedia(frame);
  }

  private fireLeadingMarks(): void {
    while (this.size > 0 && typeof this.ring[this.head] === 'string') this.fireMark(this.shift() as string);
  }

  /** Keeps what left the queue for rewind(): the frames of the cushion and the one playing. */
  private remember(item: Buffer | string, playAt: number): void {
    if (this.scheduler.aheadFrames === 0) return;
    const recent = this.recent;
    recent.push({ item, playAt });
    let frames = 0;
    for (const e of recent) if (typeof e.item !== 'string') frames++;
    while (frames > this.scheduler.aheadFrames + 2) if (typeof recent.shift()!.item !== 'string') frames--;
  }

  private fireMark(name: string): void {
    this.remember(name, this.playoutEnd);
    this.sink.sendMark?.(name);
    this.options.onMark?.(name);
  }

  private fail(error: unknown): void {
    this.error = error;
    this.close();
    this.options.onError?.(error);
  }

  private resolveDrain(): void {
    if (this.drainWaiters.length === 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Doubles the ring when it is full. */
  private grow(): void {
    if (this.size < this.ring.length) return;
    const bigger = new Array<Buffer | string | undefined>(this.ring.length * 2);
    for (let i = 0; i < this.size; i++) bigger[i] = this.ring[(this.head + i) & (this.ring.length - 1)];
    this.ring = bigger;
    this.head = 0;
  }

  private push(item: Buffer | string): void {
    this.grow();
    this.ring[(this.head + this.size) & (this.ring.length - 1)] = item;
    this.size++;
  }

  private unshift(item: Buffer | string): void {
    this.grow();
    this.head = (this.head - 1) & (this.ring.length - 1);
    this.ring[this.head] = item;
    this.size++;
  }

  private shift(): Buffer | string {
    const item = this.ring[this.head]!;
    this.ring[this.head] = undefined;
    this.head = (this.head + 1) & (this.ring.length - 1);
    this.size--;
    return item;
  }
}
