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
 * known, on every 25th after; the decision itself reads eight slots.
 *
 * Before a path is known, the first echo of a call is told by its onset: a voice heard starting
 * (after 100 ms of quiet) up to 400 ms after the agent started speaking (after 100 ms of quiet)
 * is a candidate echo at about that delay (within 40 ms), and stays one while its envelope follows what was sent at
 * that delay at one gain (no more than 15 % of its voiced 5 ms slots off by over 3 dB). A caller who
 * starts then follows another envelope and fails within a few tens of milliseconds; an echo
 * that follows for 250 ms of voice gives the path (`pending` says a candidate is under test, so the
 * leg waits with a voice it cannot tell yet). The levels compared are 20 ms sums ending at each
 * slot: a voice's pitch pulses make single slots jump, and the far end's frames need not line up
 * with the slots sent. A path that predicts a clear echo where the line is quiet is dropped.
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
/** A slot's level below this is silence (a mean absolute sample of 30). */
const SLOT_FLOOR = 30;
/** A frame's summed slot levels below this are silence. */
const FRAME_FLOOR = SLOTS_PER_FRAME * SLOT_FLOOR;
/** Quiet slots before a voice that make its first voiced slot an onset: 100 ms. */
const ONSET_QUIET = 20;
/** For onsets, a slot is voice at 12 dB over the line's floor (its hiss or static, or the agent's background track)... */
const ONSET_OVER_FLOOR = 4;
/** ...which follows the quietest slot down at once, and up by 0.5 % a slot (a louder line within a few seconds). */
const FLOOR_RISE = 1.005;
/** Voiced slots an onset candidate must follow the sent envelope for to give the path: 250 ms. */
const ONSET_CONFIRM = 50;
/** Delays tried either side of the one the two onsets give: 8 slots, 40 ms. */
const ONSET_SPREAD = 8;
/** Voiced slots before an onset candidate is judged: 40 ms. */
const ONSET_JUDGED = 8;
/** An onset candidate's slots may be this far (dB) from its gain... */
const ONSET_TOLERANCE_DB = 3;
/** ...this share of them at most. */
const ONSET_OUTLIERS = 0.15;
/** Frames a path's delay is checked over when it misses, and how far it may move (slots). */
const TRACK_FRAMES = 8;
const TRACK_SLOTS = 12;
/** Missed frames after which an echo path is dropped: 200 ms. */
const PATH_MISSES = 10;
/** The agent's most recent onsets kept (its words after pauses). */
const SENT_ONSETS = 8;

/** A voice heard that began as an echo of the agent's onset `delay` slots before would: its slots' gains in dB. */
interface OnsetCandidate {
  delay: number;
  gainsDb: number[];
}

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
  /** Frames the path predicted a clear echo in and the line was far quieter, less those it was right. */
  private misses = 0;
  /** Where voices start, in what was sent and in what is heard. */
  private readonly sentOnsetsOf = new Onsets();
  private readonly heardOnsetsOf = new Onsets();
  /** The slots at which the agent's voice started after a pause, oldest first. */
  private readonly sentOnsets: number[] = [];
  /** Before a path is known: the delays at which the voice heard since its onset may be echo. */
  private candidates: OnsetCandidate[] = [];

  constructor(private readonly nowMs: () => number) {}

  /** A frame the call sent (its 160 samples), in the order sent. */
  outbound(pcm: Int16Array): void {
    const nowSlot = Math.floor(this.nowMs() / SLOT_MS);
    const start = Math.max(nowSlot, this.nextSentSlot);
    this.store(this.sent, this.sentSlot, start, pcm);
    this.nextSentSlot = start + SLOTS_PER_FRAME;
    this.lastSentAt = this.nowMs();
    if (this.path) return;
    for (let slot = start; slot < start + SLOTS_PER_FRAME; slot++) {
      if (this.sentOnsetsOf.push(this.at(this.sent, this.sentSlot, slot)) !== 'onset') continue;
      this.sentOnsets.push(slot);
      if (this.sentOnsets.length > SENT_ONSETS) this.sentOnsets.shift();
    }
  }

  /**
   * A voice heard since its onset may still be the agent's first echo, before its path is known:
   * it is being compared with what was sent, and has neither failed nor given the path yet.
   */
  get pending(): boolean {
    return !this.path && this.heardOnsetsOf.quiet < ONSET_QUIET && this.candidates.length > 0;
  }

  /** A frame just heard: true when it is the agent's own voice coming back. */
  isEcho(pcm: Int16Array): boolean {
    const now = this.nowMs();
    // Frames that arrive together (a network burst) are laid end to end, as they were spoken.
    const first = Math.max(Math.floor(now / SLOT_MS) - SLOTS_PER_FRAME + 1, this.nextHeardSlot);
    this.store(this.heard, this.heardSlot, first, pcm);
    this.nextHeardSlot = first + SLOTS_PER_FRAME;
    const end = first + SLOTS_PER_FRAME - 1;
    if (!this.path) this.followOnset(first);
    if (now - this.lastSentAt > MAX_DELAY * SLOT_MS + 100) return false;
    const heardNow = this.heardFrame(end);
    const known = this.path;
    const predictedNow = known ? this.predictedFrame(end, known) : 0;
    if (known) this.check(heardNow, predictedNow);
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
    // A voice the path does not explain may be the echo come a little later or sooner (the far
    // end's or the network's buffering changed): the path follows it when another delay nearby explains the last 160 ms.
    const predicted = path === known ? predictedNow : this.predictedFrame(end, path);
    const echo = echoLevel(heardNow, predicted) || this.track(end, heardNow, path);
    if (echo) this.echoFrames++;
    return echo;
  }

  /**
   * A path that keeps predicting a clear echo where the line is 12 dB quieter was wrong (learnt
   * from a caller who happened to follow the agent for a moment) or is gone (the far end changed
   * the line): it is dropped after 200 ms of such misses more than hits, and learnt again.
   */
  private check(heard: number, predicted: number): void {
    if (predicted < 4 * FRAME_FLOOR) return;
    if (heard * 4 < predicted) this.misses++;
    else this.misses = Math.max(0, this.misses - 1);
    if (this.misses < PATH_MISSES) return;
    this.path = undefined;
    this.misses = 0;
  }

  /**
   * The last `frames` heard up to the slot `end` against the echo `path` predicts for them: how
   * many are voiced, and how many of those are no louder than that echo.
   */
  private explained(
    end: number,
    frames: number,
    path: { delay: number; gain: number },
  ): { voiced: number; explained: number } {
    let voiced = 0;
    let explained = 0;
    for (let last = end - (frames - 1) * SLOTS_PER_FRAME; last <= end; last += SLOTS_PER_FRAME) {
      const heard = this.heardFrame(last);
      if (heard <= FRAME_FLOOR) continue;
      voiced++;
      if (echoLevel(heard, this.predictedFrame(last, path))) explained++;
    }
    return { voiced, explained };
  }

  /**
   * Moves the path to a delay within 60 ms of its own that explains the last 160 ms heard (nine
   * voiced frames in ten at least), when its own does not (under seven): true when it did, and
   * this frame is echo at the new delay. A caller louder than the echo is explained at no delay.
   */
  private track(end: number, heard: number, path: { delay: number; gain: number }): boolean {
    const own = this.explained(end, TRACK_FRAMES, path);
    if (own.voiced < 4 || own.explained >= 0.7 * own.voiced) return false;
    let best: { delay: number; explained: number } | undefined;
    for (let k = -TRACK_SLOTS; k <= TRACK_SLOTS; k++) {
      const delay = path.delay + k;
      if (k === 0 || delay < MIN_DELAY || delay > MAX_DELAY) continue;
      const moved = this.explained(end, TRACK_FRAMES, { delay, gain: path.gain });
      if (moved.explained >= 0.9 * moved.voiced && (!best || moved.explained > best.explained))
        best = { delay, explained: moved.explained };
    }
    if (!best) return false;
    this.path = { delay: best.delay, gain: path.gain };
    return echoLevel(heard, this.predictedFrame(end, this.path));
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
    const { voiced, explained } = this.explained(this.nextHeardSlot - 1, Math.ceil(slots / SLOTS_PER_FRAME), path);
    return voiced > 0 && explained >= voiced * 0.8;
  }

  /**
   * Before a path is known: a voice starting a possible echo delay after one of the agent's onsets
   * opens a candidate per such delay; each voiced slot heard then adds its gain against what was
   * sent at that delay. A candidate whose gains scatter is dropped; one that holds for 250 ms of
   * voice gives the path, at its median gain.
   */
  private followOnset(first: number): void {
    for (let slot = first; slot < first + SLOTS_PER_FRAME; slot++) {
      const heard = this.at(this.heard, this.heardSlot, slot);
      const voice = this.heardOnsetsOf.push(heard);
      if (voice === 'quiet') continue;
      if (voice === 'onset') {
        this.candidates = [];
        for (const onset of this.sentOnsets) {
          // The first slot over each line's floor is not quite the same moment of the voice: a
          // soft start ("h") clears one floor before the other. Delays up to 40 ms either way.
          for (let delay = slot - onset - ONSET_SPREAD; delay <= slot - onset + ONSET_SPREAD; delay++)
            if (delay >= MIN_DELAY && delay <= MAX_DELAY) this.candidates.push({ delay, gainsDb: [] });
        }
      }
      // Over the 20 ms up to this slot: a voice's pitch pulses make single slots of it jump, and
      // the far end's frames need not line up with the slots sent.
      const heardNow = this.heardFrame(slot);
      for (const candidate of this.candidates) {
        const sent = this.sentFrame(slot - candidate.delay);
        candidate.gainsDb.push(sent > SLOTS_PER_FRAME ? 20 * Math.log10(heardNow / sent) : Infinity);
      }
    }
    // Judged from 40 ms of voice on: a few slots alone tell nothing.
    this.candidates = this.candidates.filter((c) => c.gainsDb.length < ONSET_JUDGED || onsetFit(c.gainsDb));
    let best: { delay: number; fit: OnsetFit } | undefined;
    for (const candidate of this.candidates) {
      if (candidate.gainsDb.length < ONSET_CONFIRM) continue;
      const fit = onsetFit(candidate.gainsDb)!;
      if (!best || fit.scatterDb < best.fit.scatterDb) best = { delay: candidate.delay, fit };
    }
    if (!best) return;
    this.path = { delay: best.delay, gain: 10 ** (best.fit.gainDb / 20) };
    this.candidates = [];
  }

  /** The level heard over the frame whose last slot is `last`. */
  private heardFrame(last: number): number {
    let sum = 0;
    for (let slot = last - SLOTS_PER_FRAME + 1; slot <= last; slot++) sum += this.at(this.heard, this.heardSlot, slot);
    return sum;
  }

  /** The echo `path` predicts over the frame whose last slot is `last`, from what was sent. */
  private predictedFrame(last: number, path: { delay: number; gain: number }): number {
    return path.gain * this.sentFrame(last - path.delay);
  }

  /** The level sent over the frame whose last slot is `last`. */
  private sentFrame(last: number): number {
    let sum = 0;
    for (let slot = last - SLOTS_PER_FRAME + 1; slot <= last; slot++) sum += this.at(this.sent, this.sentSlot, slot);
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

/** Where voices start in a stream of slot levels: the first voiced slot after 100 ms of quiet. */
class Onsets {
  private floor = Infinity;
  /** Quiet slots in a row. */
  quiet = ONSET_QUIET;

  /** Takes the next slot's level: quiet, voice, or voice starting. */
  push(level: number): 'quiet' | 'voice' | 'onset' {
    const voiced = level > SLOT_FLOOR && level > ONSET_OVER_FLOOR * this.floor;
    // Never under what counts as silence, so a line that was digitally silent comes up to its hiss.
    this.floor = Math.min(level, Math.max(this.floor, SLOT_FLOOR / ONSET_OVER_FLOOR) * FLOOR_RISE);
    if (!voiced) {
      this.quiet++;
      return 'quiet';
    }
    const onset = this.quiet >= ONSET_QUIET;
    this.quiet = 0;
    return onset ? 'onset' : 'voice';
  }
}

/** How an onset candidate's slots follow what was sent: their median gain, and their mean distance from it. */
interface OnsetFit {
  gainDb: number;
  scatterDb: number;
}

/**
 * The gain (dB) at which an onset candidate's slots follow what was sent, or undefined when they
 * scatter (over 15 % of them more than 3 dB off the median) or come back louder than an echo can.
 */
function onsetFit(gainsDb: number[]): OnsetFit | undefined {
  const sorted = [...gainsDb].sort((a, b) => a - b);
  const gainDb = sorted[Math.floor(sorted.length / 2)]!;
  if (gainDb > 20 * Math.log10(MAX_GAIN)) return undefined;
  let off = 0;
  let scatterDb = 0;
  for (const gain of gainsDb) {
    const distance = Math.abs(gain - gainDb);
    if (distance > ONSET_TOLERANCE_DB) off++;
    else scatterDb += distance;
  }
  return off <= ONSET_OUTLIERS * gainsDb.length ? { gainDb, scatterDb: scatterDb / gainsDb.length } : undefined;
}

/** Slots with a voice's level in them (a mean absolute sample above 100). */
function voicedSlots(values: Float32Array): number {
  let count = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > 100) count++;
  return count;
}
