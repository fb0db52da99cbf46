/**
 * Answering-machine detection from audio: a streaming classifier fed the 20 ms frames a call
 * receives from the moment it is answered, which decides `human`, `machine` (a voicemail greeting,
 * a screening service or another recording) or `unknown` within five seconds, and says when.
 *
 * It is the classic energy heuristic (Asterisk's AMD application) with a beep detector added:
 *
 * - each frame's level against an adaptive noise floor (the quietest frame of the
 *   last 5 s, digital silence counted as -65 dBFS)
 *   says voiced or not; voiced runs bridged over short gaps (under 160 ms) are the greeting's
 *   "words";
 * - a person picks up, says a short greeting and waits for the caller: `human` as soon as the
 *   greeting is followed by 0.6 s of silence when it had at most 1 s of voice ("Hello?", "Yeah,
 *   hello?"), 0.7 s when it had more (recorded greetings pause between sentences, and the longer
 *   the greeting so far, the likelier a pause is one of those);
 * - a recorded greeting talks on: `machine` once the greeting has more voice than a person's. How
 *   much a person says depends on how it is said: one unbroken word runs to at most 1.4 s of voice
 *   ("Hello, Dana speaking" said in one breath), two words ("Hello, | who's calling?") to 1.5 s,
 *   three words to 1.2 s (a person's three-word greeting is three short words); four words, or a
 *   beep (one steady tone of 400-2000 Hz lasting 0.2-1.5 s), are a machine's at once;
 * - nothing voiced within the five seconds: `unknown` (dead air tells nothing either way).
 *
 * The thresholds were fitted on the labelled sets of src/media/amd-dataset.ts for training seeds
 * 2-31 (7200 clips), for the smallest median time to decision over person and machine clips with
 * at most 0.5 % of people taken for machines, at least 98 % correct and about 1 % of machines taken
 * for people, then checked unchanged on held-out seeds 1 and 41-50 (`npm run bench:amd -- --seeds
 * 1,41-50`). What the data showed: a person's greeting is followed by at least 1.1 s of silence;
 * a recorded greeting's pauses within its first 1.5 s of voice are at most about 0.75 s (most
 * under 0.5 s, the long ones at sentence ends such as "It's Sam. Leave a message." before a beep);
 * people's greetings reach 1.2-1.7 s of voice at the slowest, so the voice limits sit where few of
 * them reach. An IVR greets like a machine: src/calls/answer-detector.ts tells it from a voicemail
 * by its words.
 */
import { FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, decodeMulaw, goertzel } from './audio.js';

export type AmdDecision = 'human' | 'machine' | 'unknown';

export interface AmdSettings {
  /** The whole window: undecided at this point means `unknown` (or judged on what was heard). */
  totalMs: number;
  /** Silence after a greeting (of more than `shortGreetingMs` of voice) that makes it a person's. */
  afterGreetingSilenceMs: number;
  /** A greeting with at most this much voice ("Hello?", "Yeah, hello?")... */
  shortGreetingMs: number;
  /** ...is a person's after this much silence (or `afterGreetingSilenceMs`, when shorter). */
  afterShortGreetingSilenceMs: number;
  /** Voiced time above which a greeting (of two words) is a machine's. */
  greetingMs: number;
  /** Voiced time above which a greeting of one unbroken word is a machine's. */
  oneWordGreetingMs: number;
  /** Voiced time above which a greeting of three words or more is a machine's. */
  manyWordGreetingMs: number;
  /** Voiced segments ("words") above which a greeting is a machine's. */
  maximumWords: number;
  /** A single word (voiced run without a pause) longer than this is a machine's. */
  maximumWordMs: number;
  /** Shortest voiced run that counts as a word (shorter ones are clicks). */
  minimumWordMs: number;
  /** A pause at least this long ends a word; shorter gaps are bridged. */
  betweenWordsSilenceMs: number;
  /** A frame is voiced this many dB above the noise floor... */
  voicedAboveFloorDb: number;
  /** ...and above this absolute level (dBFS). */
  minimumVoicedDbfs: number;
  /** Beeps are single steady tones in this band... */
  beepMinHz: number;
  beepMaxHz: number;
  /** ...lasting this long. */
  beepMinMs: number;
  beepMaxMs: number;
}

export const DEFAULT_AMD_SETTINGS: Readonly<AmdSettings> = Object.freeze({
  totalMs: 5000,
  afterGreetingSilenceMs: 700,
  shortGreetingMs: 1000,
  afterShortGreetingSilenceMs: 600,
  greetingMs: 1500,
  oneWordGreetingMs: 1400,
  manyWordGreetingMs: 1200,
  maximumWords: 3,
  maximumWordMs: 5000,
  minimumWordMs: 80,
  betweenWordsSilenceMs: 160,
  voicedAboveFloorDb: 9,
  minimumVoicedDbfs: -45,
  beepMinHz: 400,
  beepMaxHz: 2000,
  beepMinMs: 200,
  beepMaxMs: 1500,
});

export interface Beep {
  frequencyHz: number;
  durationMs: number;
  /** When the tone started, ms after the first frame. */
  startMs: number;
}

export interface AmdFeatures {
  /** Silence before the first word (ms), or the whole time heard when nobody spoke. */
  initialSilenceMs: number;
  /** Voiced time of the greeting so far (ms). */
  greetingMs: number;
  /** Voiced segments heard. */
  words: number;
  /** Silence since the last word ended (ms), 0 while speaking or before anyone spoke. */
  afterGreetingSilenceMs: number;
  /** The first beep heard, if any. */
  beep: Beep | null;
}

export interface AmdResult {
  decision: AmdDecision;
  /** When it was decided, ms after the first frame (the moment of answer). */
  atMs: number;
  /**
   * Why, for logs and the bench: 'beep', 'short-greeting', 'greeting', 'long-greeting', 'long-one-word-greeting',
   * 'long-many-word-greeting', 'many-words', 'silence', ...
   */
  reason: string;
  features: AmdFeatures;
}

/**
 * Finds single steady tones (beeps) in a stream of 20 ms frames. Each loud frame's frequency is
 * estimated from its zero crossings (with hysteresis, so noise does not add crossings) and checked
 * with Goertzel: a tone puts nearly all the frame's energy in that one frequency, speech never does
 * for long. Consecutive tonal frames at the same frequency form a tone, reported when it ends.
 */
export class BeepDetector {
  private readonly minHz: number;
  private readonly maxHz: number;
  private readonly minMs: number;
  private readonly maxMs: number;
  private frames = 0;
  private runStart = -1;
  private runFrames = 0;
  private runHzSum = 0;

  constructor(settings: Partial<Pick<AmdSettings, 'beepMinHz' | 'beepMaxHz' | 'beepMinMs' | 'beepMaxMs'>> = {}) {
    this.minHz = settings.beepMinHz ?? DEFAULT_AMD_SETTINGS.beepMinHz;
    this.maxHz = settings.beepMaxHz ?? DEFAULT_AMD_SETTINGS.beepMaxHz;
    this.minMs = settings.beepMinMs ?? DEFAULT_AMD_SETTINGS.beepMinMs;
    this.maxMs = settings.beepMaxMs ?? DEFAULT_AMD_SETTINGS.beepMaxMs;
  }

  /** Feeds one frame; returns a beep when one has just ended. */
  push(frame: Int16Array): Beep | undefined {
    const index = this.frames++;
    const hz = toneFrequency(frame, this.minHz * 0.95, this.maxHz * 1.05);
    if (hz !== undefined && this.runFrames > 0) {
      const mean = this.runHzSum / this.runFrames;
      if (Math.abs(hz - mean) <= Math.max(12, mean * 0.015)) {
        this.runFrames++;
        this.runHzSum += hz;
        return undefined;
      }
    }
    const ended = this.endRun();
    if (hz !== undefined) {
      this.runStart = index;
      this.runFrames = 1;
      this.runHzSum = hz;
    }
    return ended;
  }

  /** Reports a tone still under way at the end of the input. */
  flush(): Beep | undefined {
    return this.endRun();
  }

  private endRun(): Beep | undefined {
    if (this.runFrames === 0) return undefined;
    // The edges of a tone share their frame with silence or speech: count them as half a frame.
    const durationMs = this.runFrames * FRAME_MS + FRAME_MS;
    const frequencyHz = Math.round(this.runHzSum / this.runFrames);
    const beep = { frequencyHz, durationMs, startMs: this.runStart * FRAME_MS };
    this.runFrames = 0;
    this.runHzSum = 0;
    const inBand = frequencyHz >= this.minHz && frequencyHz <= this.maxHz;
    return inBand && durationMs >= this.minMs && durationMs <= this.maxMs ? beep : undefined;
  }
}

/** The frame's frequency when it is one loud steady tone within [minHz, maxHz]; otherwise undefined. */
export function toneFrequency(frame: Int16Array, minHz: number, maxHz: number): number | undefined {
  const n = frame.length;
  let peak = 0;
  for (let i = 0; i < n; i++) peak = Math.max(peak, Math.abs(frame[i]!));
  if (peak < 300) return undefined;
  // Zero crossings with hysteresis (a crossing counts once the signal has swung past ±20 % of the
  // peak, so noise around zero adds none), each placed where the signal crossed zero, interpolated.
  const band = peak * 0.2;
  let state = 0;
  let zero = 0;
  let first = -1;
  let last = -1;
  let crossings = 0;
  for (let i = 1; i < n; i++) {
    const a = frame[i - 1]!;
    const b = frame[i]!;
    if ((a < 0 && b >= 0) || (a >= 0 && b < 0)) zero = i - 1 + a / (a - b);
    const next = b > band ? 1 : b < -band ? -1 : state;
    if (next !== state && state !== 0) {
      if (first < 0) first = zero;
      last = zero;
      crossings++;
    }
    state = next;
  }
  if (crossings < 3 || last <= first) return undefined;
  const hz = ((crossings - 1) * SAMPLE_RATE) / (2 * (last - first));
  if (hz < minHz || hz > maxHz) return undefined;
  // A tone holds (nearly) all the energy at its frequency; vowels spread it over harmonics.
  const power = Math.max(goertzel(frame, hz), goertzel(frame, hz - 8), goertzel(frame, hz + 8));
  return power >= 0.75 ? hz : undefined;
}

/** Frames of level history for the noise floor (5 s). */
const LEVEL_FRAMES = 250;

/**
 * The streaming detector. Feed every frame from the moment of answer with `push` (PCM) or
 * `pushMulaw`; the first decision is returned once and stays in `result`. `finish` decides on what
 * was heard when the input ends early.
 */
export class AnsweringMachineDetector {
  readonly settings: Readonly<AmdSettings>;
  private readonly beeps: BeepDetector;
  private decided: AmdResult | undefined;
  private frames = 0;
  /** Frame levels (dBFS) of the last 5 s, for the noise floor: a ring, `levelCount` of them filled. */
  private readonly levels = new Float64Array(LEVEL_FRAMES);
  private levelCount = 0;
  private firstWordStart = -1;
  private words = 0;
  private voicedFrames = 0;
  /** The word under way: its first voiced frame and the frames voiced in it. */
  private runStart = -1;
  private runVoiced = 0;
  private lastVoiced = -1;
  /** The last voiced frame of more than a click: clicks on the line do not break a silence. */
  private lastWordFrame = -1;
  private inWord = false;
  private beep: Beep | null = null;

  constructor(settings: Partial<AmdSettings> = {}) {
    this.settings = { ...DEFAULT_AMD_SETTINGS, ...settings };
    this.beeps = new BeepDetector(this.settings);
  }

  get result(): AmdResult | undefined {
    return this.decided;
  }

  /** Time heard so far (ms). */
  get elapsedMs(): number {
    return this.frames * FRAME_MS;
  }

  pushMulaw(frame: Uint8Array): AmdResult | undefined {
    return this.push(decodeMulaw(frame));
  }

  /** Feeds one 20 ms frame of 8 kHz PCM; returns the decision the first time it is made. */
  push(frame: Int16Array): AmdResult | undefined {
    if (this.decided) return undefined;
    const index = this.frames++;
    const s = this.settings;

    const beep = this.beeps.push(frame);
    if (beep && !this.beep) {
      this.beep = beep;
      return this.decide('machine', 'beep');
    }

    const level = frameLevel(frame);
    this.levels[index % LEVEL_FRAMES] = level;
    this.levelCount = Math.min(LEVEL_FRAMES, this.levelCount + 1);
    // The quietest frame is the line's own noise: speech always has pauses and stops. Frames of
    // digital silence (before the carrier's audio starts) say nothing of the noise to come.
    let quietest = Infinity;
    for (let i = 0; i < this.levelCount; i++) if (this.levels[i]! < quietest) quietest = this.levels[i]!;
    const floor = Math.max(-65, quietest);
    const voiced = level >= s.minimumVoicedDbfs && level >= floor + s.voicedAboveFloorDb;

    const wordFrames = Math.ceil(s.minimumWordMs / FRAME_MS);
    const gapFrames = Math.ceil(s.betweenWordsSilenceMs / FRAME_MS);
    if (voiced) {
      if (this.runStart < 0 || index - this.lastVoiced > gapFrames) {
        this.runStart = index;
        this.runVoiced = 0;
        this.inWord = false;
      }
      this.runVoiced++;
      this.lastVoiced = index;
      // Two voiced frames in a run are a sound (a word's faint tail, a breath); one alone is a click.
      if (this.runVoiced >= 2) this.lastWordFrame = index;
      if (this.inWord) {
        this.voicedFrames++;
        this.lastWordFrame = index;
      } else if (this.runVoiced >= wordFrames) {
        this.inWord = true;
        this.lastWordFrame = index;
        this.words++;
        this.voicedFrames += this.runVoiced;
        if (this.firstWordStart < 0) this.firstWordStart = this.runStart;
      }
    } else if (this.runStart >= 0 && index - this.lastVoiced > gapFrames) {
      this.runStart = -1;
      this.inWord = false;
    }

    if (this.words > s.maximumWords) return this.decide('machine', 'many-words');
    if (this.inWord && (index - this.runStart + 1) * FRAME_MS > s.maximumWordMs)
      return this.decide('machine', 'long-word');
    const voicedMs = this.voicedFrames * FRAME_MS;
    if (this.words === 1 && voicedMs > s.oneWordGreetingMs) return this.decide('machine', 'long-one-word-greeting');
    if (this.words >= 3 && voicedMs > s.manyWordGreetingMs) return this.decide('machine', 'long-many-word-greeting');
    if (voicedMs > s.greetingMs) return this.decide('machine', 'long-greeting');
    const silentMs = this.silenceAfterGreetingMs();
    const short = voicedMs <= s.shortGreetingMs;
    const pauseMs = short
      ? Math.min(s.afterShortGreetingSilenceMs, s.afterGreetingSilenceMs)
      : s.afterGreetingSilenceMs;
    if (this.words > 0 && silentMs >= pauseMs) return this.decide('human', short ? 'short-greeting' : 'greeting');
    if (this.elapsedMs >= s.totalMs) return this.timeUp();
    return undefined;
  }

  /** The input ended (hang-up, end of a clip): decides on what was heard. */
  finish(): AmdResult {
    if (this.decided) return this.decided;
    const beep = this.beeps.flush();
    if (beep && !this.beep) {
      this.beep = beep;
      return this.decide('machine', 'beep');
    }
    return this.timeUp();
  }

  /** The window closed undecided: a greeting still under way, or nobody at all. */
  private timeUp(): AmdResult {
    if (this.words === 0) return this.decide('unknown', 'silence');
    // Speech that began near the end of the window cannot be judged yet; Asterisk says NOTSURE.
    return this.decide('unknown', 'undecided');
  }

  private silenceAfterGreetingMs(): number {
    if (this.words === 0 || this.lastWordFrame < 0) return 0;
    return (this.frames - 1 - this.lastWordFrame) * FRAME_MS;
  }

  private features(): AmdFeatures {
    return {
      initialSilenceMs: this.firstWordStart < 0 ? this.elapsedMs : this.firstWordStart * FRAME_MS,
      greetingMs: this.voicedFrames * FRAME_MS,
      words: this.words,
      afterGreetingSilenceMs: this.silenceAfterGreetingMs(),
      beep: this.beep,
    };
  }

  private decide(decision: AmdDecision, reason: string): AmdResult {
    this.decided = { decision, atMs: this.elapsedMs, reason, features: this.features() };
    return this.decided;
  }
}

/** Level of one frame in dBFS (-90 for digital silence). */
function frameLevel(frame: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < frame.length; i++) sum += frame[i]! * frame[i]!;
  const rms = Math.sqrt(sum / Math.max(1, frame.length));
  return 20 * Math.log10(Math.max(rms, 1) / 32768);
}

/** Runs the detector over a whole clip of 8 kHz PCM, as a call would feed it frame by frame. */
export function detectAnsweringMachine(pcm: Int16Array, settings: Partial<AmdSettings> = {}): AmdResult {
  const detector = new AnsweringMachineDetector(settings);
  for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
    const result = detector.push(pcm.subarray(at, at + FRAME_SAMPLES));
    if (result) return result;
  }
  return detector.finish();
}

/** A leg that lets listeners hear its inbound audio (the audio leg's onAudio). */
export interface InboundAudio {
  onAudio(listener: (payload: Buffer, pcm: Int16Array) => void): () => void;
}

/** Whether `leg` carries audio the detector can listen to. */
export function hasInboundAudio(leg: object): leg is InboundAudio {
  return typeof (leg as Partial<InboundAudio>).onAudio === 'function';
}

/**
 * Runs the detector on a leg's inbound audio from now (the moment of answer) until it decides;
 * `decided` is called once. Returns the function that stops listening.
 */
export function watchAnsweringMachine(
  leg: InboundAudio,
  decided: (result: AmdResult) => void,
  settings: Partial<AmdSettings> = {},
): () => void {
  const detector = new AnsweringMachineDetector(settings);
  let stop: (() => void) | null = null;
  let done = false;
  stop = leg.onAudio((_payload, pcm) => {
    if (done) return;
    // Frames of another size (none on telephone legs) are cut to 20 ms.
    for (let at = 0; at + FRAME_SAMPLES <= pcm.length && !done; at += FRAME_SAMPLES) {
      const result = detector.push(pcm.subarray(at, at + FRAME_SAMPLES));
      if (result) {
        done = true;
        stop?.();
        decided(result);
      }
    }
  });
  if (done) stop();
  return () => {
    done = true;
    stop?.();
  };
}
