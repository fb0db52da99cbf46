/**
 * Answering-machine detection from audio: a streaming classifier fed the 20 ms frames a call
 * receives from the moment it is answered (and, for the conversational cue, the frames the agent
 * sends), which decides `human`, `machine` (a voicemail greeting, a screening service or another
 * recording) or `unknown`, and says when.
 *
 * The rule is cost-aware: taking a person for a machine hangs up on them, the worst error Openline
 * can make, while taking a machine for a person only has the agent talk to a recording. So it
 * says `human` unless the evidence for a machine is strong, and `unknown` (the agent speaks) when
 * it cannot tell:
 *
 * - first stage (AmdFrameAnalyser): each frame's level against an adaptive noise floor (the
 *   12th quietest frame of the last 5 s, digital silence counted as -65 dBFS, so a room of voices
 *   behind the speaker is floor, not words, but never 12 dB above the quietest frame, so a
 *   "Hello?" said the moment the call is answered is words; frames from the very first, when a
 *   voice was already under way, are judged again once quieter frames show the line's floor) says
 *   loud or not; a loud frame is voiced within 0.3 s of one that repeats itself at a voice's pitch
 *   (a vowel: a room of voices, hiss and line noise have no pitch); and the beep detector looks for
 *   a steady tone;
 * - second stage (AmdDecider): voiced runs bridged over short gaps (under 160 ms) are the
 *   greeting's "words";
 * - a beep (one steady tone of 300-3400 Hz lasting 0.1-2 s, or one of two or three short ones in
 *   a row): `machine`, also when it comes after a `human` verdict (within LATE_BEEP_MS of it: a
 *   recorded greeting that paused like a person, then beeped) or an `unknown` one (within
 *   LATE_BEEP_MS of it: a greeting still under way at 8 s beeps when it ends), which it then
 *   revises;
 * - a greeting followed by a pause: `human` (a person says their greeting, however long, and waits
 *   for the caller): 0.6 s after a short greeting, longer after a long one (recorded greetings
 *   pause between sentences);
 * - a greeting with more voice than people say before they wait (`greetingMs`, or one unbroken run
 *   of `oneWordGreetingMs`): `machine`, unless the far end fell silent for the agent's opener
 *   (`quietForOpenerMs`): what it says after that answers the agent;
 * - the conversational cue, when the agent talks before the verdict: a recording talks on over the
 *   agent's opener (`machine`, 'talked-over'), a person falls silent and answers it (`human`,
 *   'responded');
 * - nothing voiced within five seconds: `unknown` (dead air tells nothing either way); a greeting
 *   still under way then is heard up to `extendedMs`, then `unknown`.
 *
 * The thresholds are fitted on the training set (src/amd/dataset.ts) by the cost rule of
 * src/amd/fit.ts and judged on the held-out set built apart (src/amd/heldout.ts):
 * `npm run bench:amd` prints both, with the cross-validation. An IVR greets like a machine:
 * src/amd/answer-detector.ts tells it (and a screener) from a voicemail by its words.
 */
import { FRAME_MS, FRAME_SAMPLES, decodeMulaw } from '../media/audio.js';
import { ToneDetector, type DetectedTone } from './tone-detector.js';

export type AmdDecision = 'human' | 'machine' | 'unknown';

export interface AmdSettings {
  /** Nothing voiced by this point: `unknown` (dead air tells nothing either way). */
  totalMs: number;
  /** A greeting still under way at `totalMs` is heard until this point, then `unknown`. */
  extendedMs: number;
  /** Silence after a greeting (of more than `shortGreetingMs` of voice) that makes it a person's. */
  afterGreetingSilenceMs: number;
  /** A greeting with at most this much voice ("Hello?", "Yeah, hello?")... */
  shortGreetingMs: number;
  /** ...is a person's after this much silence (or `afterGreetingSilenceMs`, when shorter). */
  afterShortGreetingSilenceMs: number;
  /** Voiced time above which a greeting is a machine's: more than people say before they wait. */
  greetingMs: number;
  /** A greeting of one unbroken run of voice longer than this is a machine's. */
  oneWordGreetingMs: number;
  /** Shortest voiced run that counts as a word (shorter ones are clicks). */
  minimumWordMs: number;
  /** A pause at least this long ends a word; shorter gaps are bridged. */
  betweenWordsSilenceMs: number;
  /** A frame is voiced this many dB above the noise floor... */
  voicedAboveFloorDb: number;
  /** ...and above this absolute level (dBFS)... */
  minimumVoicedDbfs: number;
  /** ...and at most this many dB below the loudest frame of the last 5 s (background voices are quieter). */
  voicedBelowPeakDb: number;
  /**
   * The noise floor is the level of the n-th quietest frame of the last 5 s (1: the quietest). A
   * room of voices behind the speaker dips now and then; its n-th quietest frame sits nearer its
   * body, so fewer of its swells pass for words.
   */
  floorRank: number;
  /**
   * A frame loud enough to be voiced is so only within `periodicHoldMs` of a frame whose last
   * 40 ms repeat themselves at a voice's pitch at least this well (`periodicity`): a speaker's
   * vowels do, a room of voices behind them, hiss and line noise do not. 0: no such test.
   */
  minimumPeriodicity: number;
  /** ...so the consonants around a vowel (up to this long after it) count with it. */
  periodicHoldMs: number;
  /** Beeps are single steady tones in this band... */
  beepMinHz: number;
  beepMaxHz: number;
  /** ...lasting this long. */
  beepMinMs: number;
  beepMaxMs: number;
  /** The conversational cue: use what the far end does while and after the agent talks. */
  cue: boolean;
  /** A person needs this long to fall silent once the agent starts talking... */
  openerGraceMs: number;
  /**
   * ...so this much of the far end's voice over the agent's opener after it is a recording talking
   * on. A person who missed the agent's first words finishes the phrase under way, however long:
   * this is the voice past which no phrase goes on (see `restartedOverMs`).
   */
  talkedOverMs: number;
  /**
   * A far end that paused this long while the agent's opener was under way (after `openerGraceMs`)
   * and then started again, over the agent, began a new phrase: a person who heard the agent
   * waits, a recording plays its next sentence...
   */
  restartGapMs: number;
  /** ...and this much voice of such a new phrase over the opener is a recording talking on. */
  restartedOverMs: number;
  /**
   * This much voice over the opener (after `openerGraceMs`) makes the far end suspect: a person
   * who finished a long phrase, or a recording. Suspect, it must answer: a far end silent for
   * `suspectQuietMs` after its voice is a recording that ended (a person answers the agent)...
   */
  suspectOverMs: number;
  suspectQuietMs: number;
  /** ...and a phrase it starts after a pause (`restartGapMs`) that runs past this is no answer but the recording's next sentence. */
  replyMaxMs: number;
  /** Words starting within this long after the agent's opener ended answer it. */
  replyWindowMs: number;
  /**
   * A far end silent this long once the agent's opener is under way (after `openerGraceMs`) has
   * stopped for it: what it says from then on answers the agent, so no length of voice makes it a
   * machine any more (a person who answers at length, a room of voices behind them).
   */
  quietForOpenerMs: number;
}

export const DEFAULT_AMD_SETTINGS: Readonly<AmdSettings> = Object.freeze({
  totalMs: 5000,
  extendedMs: 8000,
  afterGreetingSilenceMs: 800,
  shortGreetingMs: 1200,
  afterShortGreetingSilenceMs: 500,
  greetingMs: 4500,
  oneWordGreetingMs: 4000,
  minimumWordMs: 80,
  betweenWordsSilenceMs: 160,
  voicedAboveFloorDb: 12,
  minimumVoicedDbfs: -45,
  voicedBelowPeakDb: 24,
  floorRank: 12,
  minimumPeriodicity: 0.6,
  periodicHoldMs: 300,
  beepMinHz: 300,
  beepMaxHz: 3400,
  beepMinMs: 100,
  beepMaxMs: 2000,
  cue: true,
  openerGraceMs: 500,
  talkedOverMs: 100_000,
  restartGapMs: 300,
  restartedOverMs: 600,
  suspectOverMs: 400,
  suspectQuietMs: 1500,
  replyMaxMs: 2000,
  replyWindowMs: 2000,
  quietForOpenerMs: 600,
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
   * Why, for logs and the bench: 'beep', 'short-greeting', 'greeting', 'long-greeting',
   * 'long-one-word-greeting', 'talked-over', 'talked-on', 'no-answer', 'responded', 'silence',
   * 'undecided', and
   * 'late-beep' (a `human` or `unknown` verdict revised by a beep, see LATE_BEEP_MS).
   */
  reason: string;
  features: AmdFeatures;
}

/**
 * A beep that starts up to this long after a `human` or `unknown` verdict revises it to
 * `machine`: a person never makes a steady tone, so a recorded greeting that paused like a person
 * and then beeped, or one still under way when the detector gave up (a long greeting, read
 * slowly), was a machine after all. A tone that starts later is the conversation's (a timer in
 * the room), not the greeting's. It counts from the tone's start, not from when it ended and was
 * heard whole: a long beep is no later than a short one. The same spans as the answer's revisions
 * in a call (src/amd/answer-detector.ts), where the audio leg's tone events (the same
 * ToneDetector, the same band) bring the beep.
 */
export const LATE_BEEP_MS = 12_000;

/** Frames of level history for the noise floor (5 s). */
const LEVEL_FRAMES = 250;
/** A frame this quiet is digital silence (all samples within ±1). */
const DIGITAL_SILENCE_DBFS = -88;
/** Digital silence this long (200 ms) is the line's; shorter runs are lost packets. */
const DIGITAL_SILENCE_RUN_FRAMES = 10;

/**
 * Frames from the start that the line's floor can be inside of (voice from the very first frame,
 * before any of the line's own noise was heard): they are judged again once it is (2 s).
 */
export const OPENING_FRAMES = 100;

/** What one 20 ms frame of the far end's audio says: voiced or not, and a beep that just ended. */
export interface AmdFrame {
  voiced: boolean;
  beep: Beep | undefined;
  /**
   * The voicing of the frames before this one, from the first, judged again: set when the floor
   * known now shows that the call's audio began with a voice, and changes what was said of them
   * (AmdFrameAnalyser.reviseOpening).
   */
  revised?: boolean[];
}

/** A frame of the opening (OPENING_FRAMES): its level, whether it had a voice's pitch, and how it was judged. */
interface OpeningFrame {
  level: number;
  /** The quietest frame heard up to this one, itself included. */
  quietestSoFar: number;
  periodic: boolean;
  voiced: boolean;
}

/**
 * The first stage: each frame's level against an adaptive noise floor (the `floorRank`-th quietest
 * frame of the last 5 s, digital silence counted as -65 dBFS) says voiced or not, and the beep
 * detector runs.
 * The decisions (AmdDecider) work on its output only, so the benchmark can fit them on traces.
 */
export class AmdFrameAnalyser {
  private readonly tones: ToneDetector;
  private readonly levels = new Float64Array(LEVEL_FRAMES);
  private readonly lowest = new Float64Array(LEVEL_FRAMES);
  private levelCount = 0;
  private frames = 0;
  private digitalRun = 0;
  /** The level of the last frame that was not digital silence (-65 dBFS before any). */
  private lastHeardLevel = -65;
  /** The last two frames (40 ms), for `periodicity`, and the last frame that was periodic enough. */
  private readonly window = new Float64Array(2 * FRAME_SAMPLES);
  private lastPeriodic = -Infinity;
  /** The first OPENING_FRAMES frames, while they may still be judged again (`reviseOpening`); then null. */
  private opening: OpeningFrame[] | null = [];

  constructor(private readonly settings: Readonly<AmdSettings>) {
    // The one beep detector (src/amd/tone-detector.ts), also the audio leg's.
    this.tones = new ToneDetector({
      minHz: settings.beepMinHz,
      maxHz: settings.beepMaxHz,
      minDurationMs: settings.beepMinMs,
    });
  }

  push(frame: Int16Array): AmdFrame {
    const index = this.frames++;
    const beep = this.beepOf(this.tones.push(frame), index);
    const level = frameLevel(frame);
    // The quietest frames are the line's own noise: speech always has pauses and stops. Digital
    // silence (before the carrier's audio starts, a line that carries none) counts as -65 dBFS,
    // but a lost packet or two on a noisy line (a run shorter than 200 ms) counts as the frame
    // before it, so it does not make the line's hiss or a room's voices sound like speech.
    this.digitalRun = level <= DIGITAL_SILENCE_DBFS ? this.digitalRun + 1 : 0;
    if (this.digitalRun === 0) this.lastHeardLevel = level;
    this.levels[index % LEVEL_FRAMES] =
      this.digitalRun === 0
        ? level
        : this.digitalRun >= DIGITAL_SILENCE_RUN_FRAMES
          ? -65
          : Math.max(-65, this.lastHeardLevel);
    // A run that turned out to be the line's silence was so from its first frame: the floor (the
    // n-th quietest frame) counts all of it, not only its frames from the 200th ms on.
    if (this.digitalRun === DIGITAL_SILENCE_RUN_FRAMES)
      for (let k = 1; k < DIGITAL_SILENCE_RUN_FRAMES; k++) this.levels[(index - k) % LEVEL_FRAMES] = -65;
    this.levelCount = Math.min(LEVEL_FRAMES, this.levelCount + 1);
    let loudest = -Infinity;
    for (let i = 0; i < this.levelCount; i++) loudest = Math.max(loudest, this.levels[i]!);
    const s = this.settings;
    // The n-th quietest frame is the floor only while it is the line's noise. A history holding
    // fewer than n frames of that noise (a person who says "Hello?" the moment they answer) puts
    // it inside the words, and they would never be heard: so it is never higher than the quietest
    // frame by `voicedAboveFloorDb` (a frame that loud over the quietest one is voice, not floor).
    const nth = this.quietest(Math.min(s.floorRank, this.levelCount));
    const floor = Math.max(-65, Math.min(nth, this.lowest[0]! + s.voicedAboveFloorDb));
    this.window.copyWithin(0, FRAME_SAMPLES);
    this.window.set(frame, FRAME_SAMPLES);
    // Voices in the room behind the speaker are far quieter than the speaker: frames that far
    // below the loudest of the last 5 s are background, not the greeting.
    const loud = this.isLoud(level, floor, loudest);
    // The pitch test, for a loud frame (and every frame of the opening, which may be judged again);
    // without it every loud frame counts as one with a pitch.
    const periodic =
      (loud || this.opening !== null) &&
      (s.minimumPeriodicity <= 0 || periodicity(this.window, s.minimumPeriodicity) >= s.minimumPeriodicity);
    if (loud && periodic) this.lastPeriodic = index;
    const voiced = loud && (index - this.lastPeriodic) * FRAME_MS < s.periodicHoldMs;
    const revised = this.opening && this.reviseOpening(level, periodic, voiced, floor, loudest);
    return revised ? { voiced, beep, revised } : { voiced, beep };
  }

  /** Loud enough to be voice: above the floor, the absolute minimum, and near the loudest of the last 5 s. */
  private isLoud(level: number, floor: number, loudest: number): boolean {
    const s = this.settings;
    return (
      level >= s.minimumVoicedDbfs && level >= floor + s.voicedAboveFloorDb && level >= loudest - s.voicedBelowPeakDb
    );
  }

  /**
   * The floor is learnt from the quietest frames heard, so a voice in the very first frame (a media
   * stream that starts after the callee began to talk) is taken for the line's level, and its
   * words for no voice. The first OPENING_FRAMES are kept; once the floor rests on `floorRank`
   * frames, those heard before any frame near it (the quietest so far `voicedAboveFloorDb` above
   * it: only voice had been heard) are judged again against it. Frames judged after the line's own
   * level was heard keep their judgement, so a line that starts with its noise (or a room of voices
   * that dips to it) is judged as before. Returns the opening's new voicing when it changed.
   */
  private reviseOpening(
    level: number,
    periodic: boolean,
    voiced: boolean,
    floor: number,
    loudest: number,
  ): boolean[] | undefined {
    const opening = this.opening!;
    const s = this.settings;
    if (opening.length >= OPENING_FRAMES) {
      this.opening = null;
      return undefined;
    }
    let changed = false;
    let revised: boolean[] | undefined;
    if (
      this.levelCount > s.floorRank &&
      opening.length > 0 &&
      opening[0]!.quietestSoFar >= floor + s.voicedAboveFloorDb
    ) {
      let lastPeriodic = -Infinity;
      revised = opening.map((f, i) => {
        if (f.quietestSoFar < floor + s.voicedAboveFloorDb) return f.voiced;
        const loud = this.isLoud(f.level, floor, loudest);
        if (loud && f.periodic) lastPeriodic = i;
        const now = loud && (i - lastPeriodic) * FRAME_MS < s.periodicHoldMs;
        changed ||= now !== f.voiced;
        f.voiced = now;
        return now;
      });
      if (changed) this.lastPeriodic = Math.max(this.lastPeriodic, lastPeriodic);
    }
    const quietestSoFar = Math.min(level, opening.at(-1)?.quietestSoFar ?? Infinity);
    opening.push({ level, quietestSoFar, periodic, voiced });
    return changed ? revised : undefined;
  }

  /**
   * The level of the `rank`-th quietest frame of the history (rank 1: the quietest); `lowest`
   * then holds the `rank` quietest levels in order, the quietest first.
   */
  private quietest(rank: number): number {
    const lowest = this.lowest;
    let kept = 0;
    for (let i = 0; i < this.levelCount; i++) {
      const l = this.levels[i]!;
      if (kept === rank && l >= lowest[kept - 1]!) continue;
      // Insertion into the `rank` lowest so far, in order.
      let at = kept < rank ? kept++ : kept - 1;
      while (at > 0 && lowest[at - 1]! > l) {
        lowest[at] = lowest[at - 1]!;
        at--;
      }
      lowest[at] = l;
    }
    return kept === 0 ? -Infinity : lowest[kept - 1]!;
  }

  /** A tone still sounding when the input ends. */
  flush(): Beep | undefined {
    return this.beepOf(this.tones.flush(), this.frames);
  }

  /** A tone reported at frame `index` (it ended a frame or two before), as a beep. */
  private beepOf(tone: DetectedTone | null, index: number): Beep | undefined {
    if (!tone) return undefined;
    const startMs = Math.max(0, (index - 1) * FRAME_MS - tone.durationMs);
    return { frequencyHz: tone.frequencyHz, durationMs: tone.durationMs, startMs };
  }
}

/** The far end's silence after it started speaking that ends its first turn: the agent's opener is due. */
export const OPENER_PAUSE_MS = 500;
/** The far end's voice after which the opener is due even without that pause (a long greeting). */
export const OPENER_AFTER_VOICE_MS = 1200;

/**
 * When the agent's opener is due (the conversational cue): once the far end has spoken (a run of
 * 80 ms of voice) and then paused for OPENER_PAUSE_MS (the end of its first turn), or has talked
 * for OPENER_AFTER_VOICE_MS of voice without such a pause (a long greeting: a person who hears the
 * agent falls silent and answers, where the greeting's length alone would make them a machine; a
 * recording talks on). Never before the far end spoke. The live call (watchAnsweringMachine's
 * `openerDue`) and the benchmark's simulation of the cue (src/amd/fit.ts) follow this rule.
 */
export class OpenerMoment {
  private run = 0;
  private silent = 0;
  private voiced = 0;
  private spoke = false;
  private due = false;

  /** One frame of the far end's voicing; true once, on the frame that makes the opener due. */
  push(voiced: boolean): boolean {
    if (this.due) return false;
    if (voiced) {
      this.run++;
      this.silent = 0;
      if (this.run >= 4) this.spoke = true;
      if (this.spoke) this.voiced++;
    } else {
      this.run = 0;
      this.silent++;
    }
    this.due =
      this.spoke && (this.silent * FRAME_MS >= OPENER_PAUSE_MS || this.voiced * FRAME_MS >= OPENER_AFTER_VOICE_MS);
    return this.due;
  }
}

/** Level above which a frame we send carries the agent's voice (the background under it is quieter). */
const AGENT_VOICE_DBFS = -32;
/** The agent's words have short gaps: it is talking until this many frames pass without its voice. */
const AGENT_HANGOVER_FRAMES = 15;
/** A reply follows 300 ms of the far end's silence at the end of the opener... */
const QUIET_BEFORE_REPLY_FRAMES = 15;
/** ...and starts at least 100 ms after the opener ended (nobody answers faster). */
const REPLY_REACTION_FRAMES = 5;

/**
 * The second stage: person, machine or unknown from the frames' voicing, beeps and whether the
 * agent is talking (the conversational cue), frame by frame. See the file's comment for the rules.
 */
export class AmdDecider {
  private decided: AmdResult | undefined;
  private frames = 0;
  private firstWordStart = -1;
  private words = 0;
  private voicedFrames = 0;
  /** The word under way: its first voiced frame and the frames voiced in it. */
  private runStart = -1;
  private runVoiced = 0;
  /** The far end's silence before the word under way (frames since its last sound before it). */
  private runGap = Infinity;
  private lastVoiced = -1;
  /** The last voiced frame of more than a click: clicks on the line do not break a silence. */
  private lastWordFrame = -1;
  private inWord = false;
  private longestWordFrames = 0;
  private beep: Beep | null = null;
  // The agent's opener: when it started and ended, and what the far end did meanwhile.
  private agentLastFrame = -Infinity;
  private openerStart = -1;
  private openerEnd = -1;
  private openerAfterWords = false;
  private overlapFrames = 0;
  /** The far end's voice over the opener in phrases it started again after a pause (restartGapMs). */
  private restartedFrames = 0;
  /** When the far end became suspect (suspectOverMs), its answer's first frame and voice since. */
  private suspectFrame = -1;
  private replyRun = -1;
  private replyFrames = 0;
  private lastFarWordInOpener = -1;
  /** The far end's last voiced frame as of the agent's last voiced frame. */
  private farVoicedWhileAgent = -1;
  private cue: AmdCue = 'none';
  /** The far end fell silent for the agent's opener (quietForOpenerMs): its voice since answers it. */
  private stoppedForOpener = false;

  constructor(readonly settings: Readonly<AmdSettings>) {}

  get result(): AmdResult | undefined {
    return this.decided;
  }

  get elapsedMs(): number {
    return this.frames * FRAME_MS;
  }

  /** Whether the agent's voice is on the line now. */
  get agentTalking(): boolean {
    return this.frames - 1 - this.agentLastFrame <= AGENT_HANGOVER_FRAMES;
  }

  /**
   * One frame: the far end's voicing and beep, and whether the agent's voice went out in it.
   * Returns the decision when it is made, and again when a beep revises a `human` one.
   */
  step(frame: AmdFrame, agentVoice = false): AmdResult | undefined {
    if (this.decided) return this.afterVerdict(frame.beep);
    const index = this.frames++;
    const s = this.settings;
    if (frame.beep && !this.beep && this.isBeep(frame.beep)) {
      this.beep = frame.beep;
      return this.decide('machine', 'beep');
    }

    const wordFrames = Math.ceil(s.minimumWordMs / FRAME_MS);
    const gapFrames = Math.ceil(s.betweenWordsSilenceMs / FRAME_MS);
    if (frame.voiced) {
      if (this.runStart < 0 || index - this.lastVoiced > gapFrames) {
        this.runStart = index;
        this.runVoiced = 0;
        this.runGap = this.lastWordFrame < 0 ? Infinity : index - this.lastWordFrame - 1;
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
      if (this.inWord) this.longestWordFrames = Math.max(this.longestWordFrames, index - this.runStart + 1);
    } else if (this.runStart >= 0 && index - this.lastVoiced > gapFrames) {
      this.runStart = -1;
      this.inWord = false;
    }

    const cued = this.followOpener(index, agentVoice, frame.voiced && this.inWord);
    if (cued) return cued;

    const voicedMs = this.voicedFrames * FRAME_MS;
    if (!this.stoppedForOpener) {
      if (this.words === 1 && this.longestWordFrames * FRAME_MS > s.oneWordGreetingMs)
        return this.decide('machine', 'long-one-word-greeting');
      if (voicedMs > s.greetingMs) return this.decide('machine', 'long-greeting');
    }
    const silentMs = this.silenceAfterGreetingMs();
    const short = voicedMs <= s.shortGreetingMs;
    const pauseMs = short
      ? Math.min(s.afterShortGreetingSilenceMs, s.afterGreetingSilenceMs)
      : s.afterGreetingSilenceMs;
    if (this.suspectFrame >= 0) {
      const judged = this.followSuspect(index, frame.voiced && this.inWord, silentMs >= pauseMs);
      if (judged) return judged;
    } else if (this.words > 0 && silentMs >= pauseMs)
      return this.decide('human', short ? 'short-greeting' : 'greeting');
    if (this.elapsedMs >= s.totalMs && this.words === 0) return this.decide('unknown', 'silence');
    // A greeting still under way when the window closes is listened to a little longer: a long
    // greeting is not evidence enough of a machine to hang up on.
    if (this.elapsedMs >= Math.max(s.totalMs, s.extendedMs)) return this.decide('unknown', 'undecided');
    return undefined;
  }

  /**
   * Whether the verdict is a `human` or `unknown` one that a beep could still revise: one that
   * starts within LATE_BEEP_MS of it, and may sound for up to `beepMaxMs` after that.
   */
  get revisable(): boolean {
    const d = this.decided;
    return (
      (d?.decision === 'human' || d?.decision === 'unknown') &&
      this.elapsedMs - d.atMs <= LATE_BEEP_MS + this.settings.beepMaxMs
    );
  }

  /** After a verdict: a beep that started within LATE_BEEP_MS of a revisable one makes it `machine`. */
  private afterVerdict(beep: Beep | undefined): AmdResult | undefined {
    this.frames++;
    const d = this.decided;
    if (!d || !this.revisable || !beep || !this.isBeep(beep) || beep.startMs - d.atMs > LATE_BEEP_MS) return undefined;
    this.beep = beep;
    return this.decide('machine', 'late-beep');
  }

  /** The input ended (hang-up, end of a clip): decides on what was heard. */
  finish(beep?: Beep): AmdResult {
    if (this.decided) return (beep && this.afterVerdict(beep)) || this.decided;
    if (beep && !this.beep && this.isBeep(beep)) {
      this.beep = beep;
      return this.decide('machine', 'beep');
    }
    return this.decide('unknown', this.words === 0 ? 'silence' : 'undecided');
  }

  private isBeep(beep: Beep): boolean {
    const s = this.settings;
    return (
      beep.frequencyHz >= s.beepMinHz &&
      beep.frequencyHz <= s.beepMaxHz &&
      beep.durationMs >= s.beepMinMs &&
      beep.durationMs <= s.beepMaxMs
    );
  }

  /**
   * The conversational cue. The agent's opener started once the far end had begun its greeting:
   * a person hears it and falls silent within a second or so, a recording talks on over it
   * (`machine`, 'talked-over', once `talkedOverMs` of voice came after `openerGraceMs`). After the opener, a far end that was silent at its end and starts
   * talking within `replyWindowMs` answered it (`human`, 'responded').
   */
  private followOpener(index: number, agentVoice: boolean, farWord: boolean): AmdResult | undefined {
    const s = this.settings;
    if (!s.cue) return undefined;
    const wasTalking = this.agentTalking;
    if (agentVoice) {
      this.agentLastFrame = index;
      this.farVoicedWhileAgent = this.lastVoiced;
    }
    if (agentVoice && !wasTalking) {
      this.openerStart = index;
      this.openerEnd = -1;
      this.overlapFrames = 0;
      this.restartedFrames = 0;
      this.lastFarWordInOpener = -1;
      this.openerAfterWords = this.words > 0;
      this.cue = 'opener';
    }
    if (
      this.cue !== 'none' &&
      index - this.openerStart >= Math.round(s.openerGraceMs / FRAME_MS) &&
      (index - Math.max(this.lastWordFrame, this.openerStart)) * FRAME_MS >= s.quietForOpenerMs
    )
      this.stoppedForOpener = true;
    if (this.cue === 'opener') {
      if (farWord) {
        if (index <= this.agentLastFrame) this.lastFarWordInOpener = index;
        const grace = this.openerStart + Math.round(s.openerGraceMs / FRAME_MS);
        if (index >= grace) this.overlapFrames++;
        if (
          this.openerAfterWords &&
          !this.stoppedForOpener &&
          this.suspectFrame < 0 &&
          this.overlapFrames * FRAME_MS >= s.suspectOverMs
        )
          this.suspectFrame = index;
        // A new phrase, begun after the grace while the agent's voice is still on the line (a
        // reply after the opener is not one), after a pause in which a person would have waited.
        if (
          !this.stoppedForOpener &&
          this.runStart >= grace &&
          this.runStart <= this.agentLastFrame + REPLY_REACTION_FRAMES &&
          this.runGap * FRAME_MS >= s.restartGapMs
        )
          this.restartedFrames++;
        if (
          this.openerAfterWords &&
          (this.overlapFrames * FRAME_MS >= s.talkedOverMs || this.restartedFrames * FRAME_MS >= s.restartedOverMs)
        )
          return this.decide('machine', 'talked-over');
      }
      if (this.agentTalking) return undefined;
      // The opener is over (its voice gone for the hangover). Was the far end quiet at its end?
      // (An opener cut short because the far end started talking is not one it answered.)
      this.openerEnd = this.agentLastFrame + 1;
      const longEnough = (this.openerEnd - this.openerStart) * FRAME_MS >= 400;
      const quietAtEnd = this.farVoicedWhileAgent < this.openerEnd - QUIET_BEFORE_REPLY_FRAMES;
      this.cue = longEnough && quietAtEnd ? 'awaiting-reply' : 'none';
    }
    if (this.cue === 'awaiting-reply') {
      if ((index - this.openerEnd) * FRAME_MS > s.replyWindowMs) this.cue = 'none';
      else if (this.runStart >= 0 && this.runStart < this.openerEnd + REPLY_REACTION_FRAMES) this.cue = 'none';
      else if (this.inWord) return this.decide('human', 'responded');
    }
    return undefined;
  }

  /**
   * A far end that talked over the opener (suspectOverMs) must answer it. A new phrase after a
   * pause is its answer, or, once it runs past `replyMaxMs`, a recording's next sentence
   * ('talked-on'); an answer followed by a pause is a person's ('responded'). Silent for
   * `suspectQuietMs` since both it and the agent stopped, it is a recording that ended
   * ('no-answer'): a person who talked over the agent answers once the agent is done.
   */
  private followSuspect(index: number, farWord: boolean, paused: boolean): AmdResult | undefined {
    const s = this.settings;
    if (farWord && this.runStart > this.suspectFrame && this.runGap * FRAME_MS >= s.restartGapMs) {
      if (this.replyRun !== this.runStart) {
        this.replyRun = this.runStart;
        this.replyFrames = 0;
      }
      if (++this.replyFrames * FRAME_MS >= s.replyMaxMs) return this.decide('machine', 'talked-on');
    }
    if (this.replyRun >= 0) return paused ? this.decide('human', 'responded') : undefined;
    const quietFrames = index - Math.max(this.lastWordFrame, this.agentLastFrame);
    if (!this.agentTalking && quietFrames * FRAME_MS >= s.suspectQuietMs) return this.decide('machine', 'no-answer');
    return undefined;
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

type AmdCue = 'none' | 'opener' | 'awaiting-reply';

/**
 * The streaming detector. Feed every frame from the moment of answer with `push` (PCM) or
 * `pushMulaw`, and (for the conversational cue) every frame the agent sends with `pushSent`; the
 * first decision is returned once and stays in `result`. `finish` decides on what was heard when
 * the input ends early.
 */
export class AnsweringMachineDetector {
  readonly settings: Readonly<AmdSettings>;
  private readonly analyser: AmdFrameAnalyser;
  private decider: AmdDecider;
  /** The agent's voice in the frames sent since the last frame heard. */
  private agentVoice = false;
  private opener = new OpenerMoment();
  private openerCalled = false;
  /** The opening's frames as the second stage took them (beep, agent's voice), to replay when revised. */
  private readonly opening: Array<{ beep: Beep | undefined; agent: boolean }> = [];

  /** `openerDue`: called once, on the frame at which the agent's opener is due (OpenerMoment). */
  constructor(
    settings: Partial<AmdSettings> = {},
    private readonly openerDue?: () => void,
  ) {
    this.settings = { ...DEFAULT_AMD_SETTINGS, ...settings };
    this.analyser = new AmdFrameAnalyser(this.settings);
    this.decider = new AmdDecider(this.settings);
  }

  get result(): AmdResult | undefined {
    return this.decider.result;
  }

  /** Time heard so far (ms). */
  get elapsedMs(): number {
    return this.decider.elapsedMs;
  }

  pushMulaw(frame: Uint8Array): AmdResult | undefined {
    return this.push(decodeMulaw(frame));
  }

  /** A frame the agent sent to the far end (8 kHz PCM): whether its voice is on the line. */
  pushSent(frame: Int16Array): void {
    if (frameLevel(frame) >= AGENT_VOICE_DBFS) this.markAgentVoice();
  }

  /** The agent's voice went out since the last frame heard. */
  markAgentVoice(): void {
    this.agentVoice = true;
  }

  /** Whether a `human` or `unknown` verdict could still be revised by a beep (AmdDecider.revisable). */
  get revisable(): boolean {
    return this.decider.revisable;
  }

  /**
   * Feeds one 20 ms frame of 8 kHz PCM; returns the decision the first time it is made, and again
   * when a beep revises a `human` or `unknown` one (LATE_BEEP_MS).
   */
  push(frame: Int16Array): AmdResult | undefined {
    if (this.decider.result && !this.decider.revisable) return undefined;
    const agent = this.agentVoice;
    this.agentVoice = false;
    const heard = this.analyser.push(frame);
    const replayed = heard.revised && !this.decider.result ? this.replay(heard.revised) : undefined;
    if (this.opening.length < OPENING_FRAMES) this.opening.push({ beep: heard.beep, agent });
    if (this.opener.push(heard.voiced)) this.callOpener();
    return this.decider.step(heard, agent) ?? replayed;
  }

  /** The first stage judged the opening again: the second starts over from the first frame with it. */
  private replay(voicing: boolean[]): AmdResult | undefined {
    this.decider = new AmdDecider(this.settings);
    this.opener = new OpenerMoment();
    let result: AmdResult | undefined;
    voicing.forEach((voiced, i) => {
      const { beep, agent } = this.opening[i]!;
      if (this.opener.push(voiced)) this.callOpener();
      result ??= this.decider.step({ voiced, beep }, agent);
    });
    return result;
  }

  private callOpener(): void {
    if (this.openerCalled) return;
    this.openerCalled = true;
    this.openerDue?.();
  }

  /** The input ended (hang-up, end of a clip): decides on what was heard. */
  finish(): AmdResult {
    return this.decider.finish(this.decider.result && !this.decider.revisable ? undefined : this.analyser.flush());
  }
}

/** Lags at which `periodicity` looks for a repeat: 2.5-17.5 ms, a voice's pitch of 57-400 Hz. */
const PITCH_LAGS = [20, 140] as const;
/** `periodicity`'s running sums, kept from call to call (no garbage per frame). */
let squares = new Float64Array(2 * FRAME_SAMPLES + 1);

/**
 * How well a stretch of sound repeats itself at a voice's pitch: the largest normalised
 * autocorrelation over PITCH_LAGS (1: a perfect repeat; a vowel's is 0.7-1, noise's and a room
 * of voices' mostly under 0.5), or the first one found of at least `enough` (the search stops there).
 */
export function periodicity(x: Float64Array, enough = Infinity): number {
  const n = x.length;
  // Running sums of squares give each lag's two energies without a second pass.
  if (squares.length < n + 1) squares = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) squares[i + 1] = squares[i]! + x[i]! * x[i]!;
  let best = 0;
  for (let lag = PITCH_LAGS[0]; lag <= Math.min(PITCH_LAGS[1], n - 1) && best < enough; lag++) {
    let xy = 0;
    for (let i = 0; i + lag < n; i++) xy += x[i]! * x[i + lag]!;
    const energy = (squares[n - lag]! - squares[0]!) * (squares[n]! - squares[lag]!);
    if (energy > 0) best = Math.max(best, xy / Math.sqrt(energy));
  }
  return best;
}

/** Level of one frame in dBFS (-90 for digital silence). */
function frameLevel(frame: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < frame.length; i++) sum += frame[i]! * frame[i]!;
  const rms = Math.sqrt(sum / Math.max(1, frame.length));
  return 20 * Math.log10(Math.max(rms, 1) / 32768);
}

/**
 * Runs the detector over a whole clip of 8 kHz PCM, as a call would feed it frame by frame.
 * `agent` marks the frames in which the agent's voice went out (the conversational cue). A
 * `human` or `unknown` verdict is followed to the end of the clip (or LATE_BEEP_MS): a beep revises it.
 */
export function detectAnsweringMachine(
  pcm: Int16Array,
  settings: Partial<AmdSettings> = {},
  agent?: (frameIndex: number) => boolean,
): AmdResult {
  const detector = new AnsweringMachineDetector(settings);
  for (let at = 0, i = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES, i++) {
    if (agent?.(i)) detector.markAgentVoice();
    detector.push(pcm.subarray(at, at + FRAME_SAMPLES));
    if (detector.result && !detector.revisable) return detector.result;
  }
  return detector.finish();
}

/** A clip's frames through the first stage, for fitting the second (src/amd/fit.ts). */
export interface AmdTrace {
  voiced: Uint8Array;
  /** Beeps by the frame they were reported in; `end` is one still sounding at the end. */
  beeps: Map<number, Beep>;
  end: Beep | undefined;
  /** Frames in which the agent's voice went out, if an opener was said. */
  agent: Uint8Array | undefined;
}

/**
 * Runs the first stage over a clip (its settings: level and beep analysis only). Its tone
 * detector hears a wider band and shorter tones than any beep setting, so the second stage's
 * beep limits can be fitted on the trace.
 */
export function traceOf(pcm: Int16Array, agent?: Uint8Array, settings: Partial<AmdSettings> = {}): AmdTrace {
  const analyser = new AmdFrameAnalyser({
    ...DEFAULT_AMD_SETTINGS,
    ...settings,
    beepMinHz: 250,
    beepMaxHz: 3600,
    beepMinMs: 60,
    beepMaxMs: 3000,
  });
  const frames = Math.floor(pcm.length / FRAME_SAMPLES);
  const voiced = new Uint8Array(frames);
  const beeps = new Map<number, Beep>();
  for (let i = 0; i < frames; i++) {
    const f = analyser.push(pcm.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES));
    voiced[i] = f.voiced ? 1 : 0;
    f.revised?.forEach((v, k) => (voiced[k] = v ? 1 : 0));
    if (f.beep) beeps.set(i, f.beep);
  }
  return { voiced, beeps, end: analyser.flush(), agent };
}

/** Runs the second stage over a trace: the same decision as the streaming detector on the clip. */
export function decideTrace(trace: AmdTrace, settings: Readonly<AmdSettings>): AmdResult {
  const decider = new AmdDecider(settings);
  for (let i = 0; i < trace.voiced.length; i++) {
    decider.step({ voiced: trace.voiced[i] === 1, beep: trace.beeps.get(i) }, trace.agent?.[i] === 1);
    if (decider.result && !decider.revisable) return decider.result;
  }
  return decider.finish(trace.end);
}

/** A leg that lets listeners hear its inbound audio (the audio leg's onAudio), and what it sends. */
export interface InboundAudio {
  onAudio(listener: (payload: Buffer, pcm: Int16Array) => void): () => void;
  onSent?(listener: (payload: Buffer) => void): () => void;
}

/** Whether `leg` carries audio the detector can listen to. */
export function hasInboundAudio(leg: object): leg is InboundAudio {
  return typeof (leg as Partial<InboundAudio>).onAudio === 'function';
}

/**
 * Runs the detector on a leg's inbound audio from now (the moment of answer) until it decides;
 * `decided` is called once. `openerDue`, if given, is called once when the far end's first turn
 * has ended (OpenerMoment) before the verdict: the moment for the agent's first words, which the
 * detector then hears answered or talked over. Returns the function that stops listening.
 */
export function watchAnsweringMachine(
  leg: InboundAudio,
  decided: (result: AmdResult) => void,
  settings: Partial<AmdSettings> = {},
  openerDue?: () => void,
): () => void {
  const detector = new AnsweringMachineDetector(settings, openerDue);
  let stop: (() => void) | null = null;
  let done = false;
  // The agent's voice going out (the conversational cue): what the far end does meanwhile tells.
  const stopSent = leg.onSent?.((payload) => {
    if (!done) detector.pushSent(decodeMulaw(payload));
  });
  const stopHeard = leg.onAudio((_payload, pcm) => {
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
  stop = () => {
    stopHeard();
    stopSent?.();
  };
  if (done) stop();
  return () => {
    done = true;
    stop?.();
  };
}
