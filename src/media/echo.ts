/**
 * Echo guard: tells the agent's own voice coming back on the line (phones, speakerphones and some
 * trunks return it, quieter and late) from the caller's. It keeps the loudness envelope of what
 * the call sent and of what it hears, in 5 ms slots on one clock. While the line returns nothing
 * but the agent's voice, what is heard follows what was sent up to 400 ms earlier almost exactly
 * (correlation of the envelopes over 600 ms at least 0.95): that gives the echo path, its delay and
 * gain. A heard frame is then echo when it is no louder than the echo the path predicts from what
 * was sent; a caller talking over the agent is louder, so is heard. Without recent outbound audio,
 * or before a path is learnt, nothing is echo. Cost: the search (about 6,000 multiply-adds) on every
 * second heard frame while the agent has spoken in the last half second, every fifth once the path
 * is known; the decision itself is a few dozen operations.
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

export class EchoGuard {
  private readonly sent = new Float32Array(RING);
  private readonly heard = new Float32Array(RING);
  /** The slot each ring entry holds (-1: none), so stale entries read as silence. */
  private readonly sentSlot = new Float64Array(RING).fill(-1);
  private readonly heardSlot = new Float64Array(RING).fill(-1);
  /** The far end plays what was sent one frame after another: bursts are laid end to end. */
  private nextSentSlot = 0;
  private nextHeardSlot = 0;
  /** Frames heard: the search for the path runs on every second one, every fifth once it is known. */
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
    const h = this.window(this.heard, this.heardSlot, end);
    const hMean = mean(h);
    const hVar = variance(h, hMean);
    if (hVar === 0) return false;
    // The echo path (delay and gain) is learnt while the line carries nothing but the echo: the
    // heard envelope then follows the sent one almost exactly. The search runs on every frame until
    // a path is known, then every fifth (100 ms) to follow a path that changes.
    let best = 0;
    let bestDelay = -1;
    let gain = 0;
    const consider = (delay: number) => {
      const s = this.window(this.sent, this.sentSlot, end - delay);
      const sMean = mean(s);
      const sVar = variance(s, sMean);
      if (sVar === 0) return;
      let cov = 0;
      for (let i = 0; i < WINDOW; i++) cov += (h[i]! - hMean) * (s[i]! - sMean);
      const r = cov / Math.sqrt(hVar * sVar);
      if (r > best) {
        best = r;
        bestDelay = delay;
        gain = cov / sVar;
      }
    };
    // Every other slot first (10 ms apart: envelopes are smooth at that scale), then the best's neighbours.
    if (this.frames++ % (this.path ? 5 : 2) === 0) {
      for (let delay = MIN_DELAY; delay <= MAX_DELAY; delay += 2) consider(delay);
      const coarse = bestDelay;
      if (coarse >= MIN_DELAY) {
        consider(coarse - 1);
        consider(coarse + 1);
      }
    }
    // Learnt only from a window with enough voice in it: two nearly empty windows match by chance.
    if (best >= LEARN_CORRELATION && gain > 0 && gain <= MAX_GAIN && voicedSlots(h) >= WINDOW / 4) {
      this.path = { delay: bestDelay, gain: this.path?.delay === bestDelay ? 0.7 * this.path.gain + 0.3 * gain : gain };
    }
    const path = this.path;
    if (!path) return false;
    // This frame is echo when it is no louder than the echo the path predicts from what was sent:
    // a caller speaking over it is louder.
    const sent = this.window(this.sent, this.sentSlot, end - path.delay);
    const heard = this.window(this.heard, this.heardSlot, end);
    let heardNow = 0;
    let predicted = 0;
    for (let i = WINDOW - SLOTS_PER_FRAME; i < WINDOW; i++) {
      heardNow += heard[i]!;
      predicted += path.gain * sent[i]!;
    }
    const floor = SLOTS_PER_FRAME * 30;
    const echo = predicted > floor && heardNow <= predicted * 1.5 + floor;
    if (echo) this.echoFrames++;
    return echo;
  }

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

  /** The WINDOW slots ending at `end` (silence where nothing was stored). */
  private readonly scratch = [new Float32Array(WINDOW), new Float32Array(WINDOW)];
  private window(values: Float32Array, slots: Float64Array, end: number): Float32Array {
    const out = values === this.heard ? this.scratch[0]! : this.scratch[1]!;
    for (let i = 0; i < WINDOW; i++) {
      const slot = end - WINDOW + 1 + i;
      const at = ((slot % RING) + RING) % RING;
      out[i] = slots[at] === slot ? values[at]! : 0;
    }
    return out;
  }
}

/** Slots with a voice's level in them (a mean absolute sample above 100). */
function voicedSlots(values: Float32Array): number {
  let count = 0;
  for (const v of values) if (v > 100) count++;
  return count;
}

function mean(values: Float32Array): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

function variance(values: Float32Array, m: number): number {
  let sum = 0;
  for (const v of values) sum += (v - m) * (v - m);
  return sum;
}
