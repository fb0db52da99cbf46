/**
 * Echo guard: tells the agent's own voice coming back on the line (phones, speakerphones and some
 * trunks return it, quieter and late) from the caller's. It keeps the loudness envelope of what
 * the call sent and of what it hears, in 5 ms slots on one clock. While the line returns nothing
 * but the agent's voice, what is heard follows what was sent up to 400 ms earlier almost exactly
 * (correlation of the envelopes over 600 ms at least 0.95): that gives the echo path, its delay and
 * gain. A heard frame is then echo when it is no louder than the echo the path predicts from what
 * was sent; a caller talking over the agent is louder, so is heard. Without recent outbound audio,
 * or before a path is learnt, nothing is echo. Cost: the search (about 6,000 multiply-adds, running
 * sums for every delay) on every second voiced frame heard while the agent speaks until the path is
 * known, on every 25th after; the decision itself reads eight slots. The first half second or so of an
 * echo, before its path is learnt, still reaches the VAD.
 */
import { FRAME_MS } from './audio.js';

const SLOT_MS = 5;
const SLOTS_PER_FRAME = FRAME_MS / SLOT_MS;
/** History kept: 2 s. */
const RING = 400;
/** Window compared: the last 600 ms heard (several syllables: one alone looks like any other). */
const WINDOW = 120;
/**
 * Delays considered: -60 to 400 ms. Sent audio is placed on the timeline as it will play, up to a
 * few frames after it left (the cushion kept at the far end); a far end that returns packets as
 * they arrive echoes them before that.
 */
const MIN_DELAY = -12;
const MAX_DELAY = 80;
/** Correlation of the envelopes at which the echo path is learnt: the line carries only the echo. */
const LEARN_CORRELATION = 0.95;
/** An echo is no louder than what was sent (with 3 dB to spare for line gain). */
const MAX_GAIN = 2;
/** A frame's summed slot levels below this are silence (a mean absolute sample of 30). */
const FRAME_FLOOR = SLOTS_PER_FRAME * 30;

/** A heard frame's level against the echo the path predicts for it: no louder, it is echo. */
function echoLevel(heard: number, predicted: number): boolean {
  return predicted > FRAME_FLOOR && heard <= predicted * 1.5 + FRAME_FLOOR;
}

export class EchoGuard {
  private readonly sent = new Float32Array(RING);
  private readonly heard = new Float32Array(RING);
  /** The slot each ring entry holds (-1: none), so stale entries read as silence. */
  private readonly sentSlot = new Float64Array(RING).fill(-1);
  private readonly heardSlot = new Float64Array(RING).fill(-1);
  /** The far end plays what was sent one frame after another: bursts are laid end to end. */
  private nextSentSlot = 0;
  private nextHeardSlot = 0;
  /** Voiced frames heard while the agent speaks: every 2nd searches for the path, every 25th once it is known. */
  private frames = 0;
  private lastSentAt = -Infinity;
  /** Heard frames taken for echo (the call record's figure). */
  echoFrames = 0;
  /** The echo path once learnt: how late and how loud the agent's voice comes back. */
  private path: { delay: number; gain: number } | undefined;

  constructor(private readonly nowMs: () => number) {}

  /** A frame the call sent (its 160 samples), in the order sent. */
  outbound(pcm: Int16Array): void {
    const nowSlot = Math.floor(this.nowMs() / SLOT_MS);
    const start = Math.max(nowSlot, this.nextSentSlot);
    this.store(this.sent, this.sentSlot, start, pcm);
    this.nextSentSlot = start + SLOTS_PER_FRAME;
    this.lastSentAt = this.nowMs();
  }

  /** A frame just heard: true when it is the agent's own voice coming back. */
  isEcho(pcm: Int16Array): boolean {
    const now = this.nowMs();
    // Frames that arrive together (a network burst) are laid end to end, as they were spoken.
    const first = Math.max(Math.floor(now / SLOT_MS) - SLOTS_PER_FRAME + 1, this.nextHeardSlot);
    this.store(this.heard, this.heardSlot, first, pcm);
    this.nextHeardSlot = first + SLOTS_PER_FRAME;
    const end = first + SLOTS_PER_FRAME - 1;
    if (now - this.lastSentAt > MAX_DELAY * SLOT_MS + 100) return false;
    const heardNow = this.heardFrame(end);
    if (heardNow <= FRAME_FLOOR) return false;
    // The echo path (delay and gain) is learnt while the line carries nothing but the echo: the
    // heard envelope then follows the sent one almost exactly. The search runs on every second
    // voiced frame heard while the agent speaks until a path is known (a caller talking over the
    // agent keeps it unknown), then every 25th (half a second).
    if (this.frames++ % (this.path ? 25 : 2) === 0) this.search(end);
    const path = this.path;
    if (!path) return false;
    // This frame is echo when it is no louder than the echo the path predicts from what was sent:
    // a caller speaking over it is louder.
    const echo = echoLevel(heardNow, this.predictedFrame(end, path));
    if (echo) this.echoFrames++;
    return echo;
  }

  /**
   * Whether the voice heard over the last `windowMs` was the agent's own, by the echo path known
   * now: at least 80 % of its voiced frames no louder than the echo the path predicts from what was
   * sent. Asked when a voice's turn ends: the first syllables of an echo, heard before the path was
   * learnt, are then known for what they were. Without a path, or beyond the history kept, no.
   */
  explains(windowMs: number): boolean {
    const path = this.path;
    const slots = Math.ceil(windowMs / SLOT_MS);
    if (!path || slots > RING - MAX_DELAY - SLOTS_PER_FRAME) return false;
    const end = this.nextHeardSlot - 1;
    let voiced = 0;
    let explained = 0;
    for (let last = end - slots + SLOTS_PER_FRAME; last <= end; last += SLOTS_PER_FRAME) {
      const heard = this.heardFrame(last);
      if (heard <= FRAME_FLOOR) continue;
      voiced++;
      if (echoLevel(heard, this.predictedFrame(last, path))) explained++;
    }
    return voiced > 0 && explained >= voiced * 0.8;
  }

  /** The level heard over the frame whose last slot is `last`. */
  private heardFrame(last: number): number {
    let sum = 0;
    for (let slot = last - SLOTS_PER_FRAME + 1; slot <= last; slot++) sum += this.at(this.heard, this.heardSlot, slot);
    return sum;
  }

  /** The echo `path` predicts over the frame whose last slot is `last`, from what was sent. */
  private predictedFrame(last: number, path: { delay: number; gain: number }): number {
    let sum = 0;
    for (let slot = last - SLOTS_PER_FRAME + 1; slot <= last; slot++)
      sum += path.gain * this.at(this.sent, this.sentSlot, slot - path.delay);
    return sum;
  }

  /** The value of one slot, or silence when the ring holds another. */
  private at(values: Float32Array, slots: Float64Array, slot: number): number {
    const i = ((slot % RING) + RING) % RING;
    return slots[i] === slot ? values[i]! : 0;
  }

  /**
   * Looks for the delay at which the last WINDOW slots heard follow what was sent best, with
   * running sums for the sent windows' means and variances (one pass for all delays).
   */
  private search(end: number): void {
    const h = this.heardWindow;
    for (let i = 0; i < WINDOW; i++) h[i] = this.at(this.heard, this.heardSlot, end - WINDOW + 1 + i);
    let hSum = 0;
    for (let i = 0; i < WINDOW; i++) hSum += h[i]!;
    const hMean = hSum / WINDOW;
    let hVar = 0;
    for (let i = 0; i < WINDOW; i++) hVar += (h[i]! - hMean) * (h[i]! - hMean);
    if (hVar === 0 || voicedSlots(h) < WINDOW / 4) return;
    // span[k] is the sent slot end - MAX_DELAY - WINDOW + 1 + k; delay d's window starts at MAX_DELAY - d.
    const span = this.sentSpan;
    for (let k = 0; k < span.length; k++) span[k] = this.at(this.sent, this.sentSlot, end - MAX_DELAY - WINDOW + 1 + k);
    const sums = this.prefix;
    const squares = this.prefixSquares;
    sums[0] = 0;
    squares[0] = 0;
    for (let k = 0; k < span.length; k++) {
      sums[k + 1] = sums[k]! + span[k]!;
      squares[k + 1] = squares[k]! + span[k]! * span[k]!;
    }
    const best = this.best;
    best.r = 0;
    best.delay = 0;
    best.gain = 0;
    // Every other slot first (10 ms apart: envelopes are smooth at that scale), then the best's neighbours.
    for (let delay = MIN_DELAY; delay <= MAX_DELAY; delay += 2) this.consider(delay, hMean, hVar);
    const coarse = best.delay;
    this.consider(coarse - 1, hMean, hVar);
    this.consider(coarse + 1, hMean, hVar);
    if (best.r >= LEARN_CORRELATION && best.gain > 0 && best.gain <= MAX_GAIN) {
      const gain = this.path?.delay === best.delay ? 0.7 * this.path.gain + 0.3 * best.gain : best.gain;
      this.path = { delay: best.delay, gain };
    }
  }

  /**
   * The correlation of the heard window with the sent one `delay` slots earlier; keeps the best in
   * `this.best`. A method writing fields, not a closure over the search's locals: those would be
   * boxed, one allocation per assignment, on a path that runs for every call many times a second.
   */
  private consider(delay: number, hMean: number, hVar: number): void {
    if (delay < MIN_DELAY || delay > MAX_DELAY) return;
    const from = MAX_DELAY - delay;
    const sums = this.prefix;
    const squares = this.prefixSquares;
    const sum = sums[from + WINDOW]! - sums[from]!;
    const sMean = sum / WINDOW;
    const sVar = squares[from + WINDOW]! - squares[from]! - sum * sMean;
    if (sVar <= 1e-9) return;
    const h = this.heardWindow;
    const span = this.sentSpan;
    let cov = 0;
    for (let i = 0; i < WINDOW; i++) cov += (h[i]! - hMean) * span[from + i]!;
    const r = cov / Math.sqrt(hVar * sVar);
    if (r > this.best.r) {
      this.best.r = r;
      this.best.delay = delay;
      this.best.gain = cov / sVar;
    }
  }

  /** The best delay of the search under way. */
  private readonly best = { r: 0, delay: 0, gain: 0 };

  private readonly heardWindow = new Float32Array(WINDOW);
  private readonly sentSpan = new Float32Array(WINDOW + MAX_DELAY - MIN_DELAY);
  private readonly prefix = new Float64Array(WINDOW + MAX_DELAY - MIN_DELAY + 1);
  private readonly prefixSquares = new Float64Array(WINDOW + MAX_DELAY - MIN_DELAY + 1);

  private store(values: Float32Array, slots: Float64Array, first: number, pcm: Int16Array): void {
    const per = Math.floor(pcm.length / SLOTS_PER_FRAME);
    for (let k = 0; k < SLOTS_PER_FRAME; k++) {
      let sum = 0;
      for (let i = k * per; i < (k + 1) * per; i++) sum += Math.abs(pcm[i]!);
      const slot = first + k;
      const at = ((slot % RING) + RING) % RING;
      values[at] = sum / per;
      slots[at] = slot;
    }
  }
}

/** Slots with a voice's level in them (a mean absolute sample above 100). */
function voicedSlots(values: Float32Array): number {
  let count = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > 100) count++;
  return count;
}
