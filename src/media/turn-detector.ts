/**
 * Turn-taking over VAD scores: hysteresis turns the per-frame speech probability into speech
 * starts and ends, and the call's interruption_threshold sets how much trailing silence ends a
 * turn. Pure and frame-driven: time is counted in 20 ms frames of inbound audio, so the same
 * audio gives the same turns however fast it is fed (tests, benchmarks, a loaded machine).
 */

import { FRAME_MS } from './audio.js';

/**
 * Trailing silence (ms) after the last voiced frame that ends the caller's turn, from the call's
 * interruption_threshold ("patience before responding; lower = faster"): 4 ms per unit, bounded
 * to 100..2000 ms. The default 100 waits 400 ms; 50 waits 200 ms; 200 waits 800 ms. The session
 * waits as long after a text leg's utterance, so both modes answer alike.
 */
export function endOfTurnMs(interruptionThreshold: number): number {
  return Math.min(2000, Math.max(100, interruptionThreshold * 4));
}

/**
 * How the recogniser's words so far read at a pause: a finished turn (a sentence the recogniser
 * closed with . ! or ?, or a short answer such as "yes" or "thanks"), an unfinished one (the last
 * words leave the grammar open), or neither (no words, or nothing to tell).
 */
export type TurnWords = 'finished' | 'unfinished' | 'unknown';

/** Words after which a sentence cannot end: conjunctions, prepositions, articles and determiners. */
const OPEN_ENDINGS = new Set(
  (
    'and or but nor so because cause cuz if than when whenever while whereas although though unless until till ' +
    'whether plus ' +
    'to of for with at on in into onto from by about as between during without within under against toward ' +
    'towards per via ' +
    'a an the my your our their his its every another such very'
  ).split(' '),
);
/** Hesitations: the speaker is still finding the words. */
const FILLERS = new Set('um umm uh uhh er erm ah eh hmm mm mhm'.split(' '));
/** Subject pronouns: a clause that ends on one still lacks its verb ("and then I", "so we"). */
const SUBJECTS = new Set('i we they he she'.split(' '));
/** Modal and auxiliary verbs that invert before their subject in a question ("could you ..."). */
const MODALS = new Set('can could would will shall should may might must'.split(' '));
/** Forms of "be" that need what follows ("my number is", "the problem was"). */
const COPULAS = new Set("is are was were am 's".split(' '));
/** Words that may stand before a final "is" ("yes it is", "that's who they are", "here it is"). */
const COPULA_SUBJECTS = new Set('it that this there here he she they we i you who what where which how'.split(' '));
/** Answers complete in themselves. */
const SHORT_ANSWERS = new Set(
  'yes yeah yep yup no nope nah okay ok sure right correct exactly absolutely definitely thanks bye goodbye fine great perfect'.split(
    ' ',
  ),
);
const DIGITS = new Set('zero oh one two three four five six seven eight nine'.split(' '));
/** Words that announce a number the caller is about to read out. */
const NUMBER_CUES = /\b(number|phone|code|zip|postcode|account|card|extension|digits|pin|reference|confirmation)\b/;

function isDigitToken(word: string): boolean {
  return DIGITS.has(word) || /^\d+$/.test(word);
}

/**
 * Reads the recogniser's words at a pause as a finished turn, an unfinished one, or neither. The
 * rule is grammar, not a list of phrases: a turn is unfinished when its last word is a conjunction,
 * preposition, article or determiner, a filler, a bare subject pronoun, a modal inverted before
 * its subject ("could you"), a modal before "be" ("it would be"), a form of "be" after a noun
 * ("my number is"), or when the caller is reading out digits ("five five five", "my number is
 * 555"). Otherwise it is finished when the recogniser closed the sentence (. ! ?) or the turn is
 * one short answer word; anything else is unknown.
 */
export function turnWords(text: string): TurnWords {
  const trimmed = text.trim();
  const words = trimmed
    .toLowerCase()
    .replace(/[’]/g, "'")
    .split(/\s+/)
    .map((w) => w.replace(/^[^a-z0-9']+|[^a-z0-9']+$/g, ''))
    .filter((w) => w.length > 0)
    .flatMap((w) => (w.endsWith("'s") && w.length > 2 ? [w.slice(0, -2), "'s"] : [w]));
  const last = words.at(-1);
  if (last === undefined) return 'unknown';
  const before = words.at(-2);
  if (OPEN_ENDINGS.has(last) || FILLERS.has(last) || SUBJECTS.has(last)) return 'unfinished';
  if (before !== undefined && MODALS.has(before) && (SUBJECTS.has(last) || last === 'you' || last === 'it')) {
    return 'unfinished';
  }
  if (last === 'be' && before !== undefined && (MODALS.has(before) || before === 'to')) return 'unfinished';
  if (COPULAS.has(last) && (before === undefined || !COPULA_SUBJECTS.has(before))) return 'unfinished';
  if (isDigitToken(last)) {
    let run = 0;
    for (let i = words.length - 1; i >= 0 && isDigitToken(words[i]!); i--) run++;
    const digits = words.slice(words.length - run).reduce((n, w) => n + (DIGITS.has(w) ? 1 : w.length), 0);
    if (run >= 2 || (NUMBER_CUES.test(words.slice(0, -run).join(' ')) && digits < 10)) return 'unfinished';
  }
  if (/[.!?]["')\]]*$/.test(trimmed)) return 'finished';
  if (words.length <= 2 && SHORT_ANSWERS.has(words[0]!)) return 'finished';
  return 'unknown';
}

/**
 * The trailing silence that ends a turn, given how its words read: 1.9 times endOfTurnMs when
 * they read as unfinished (400 -> 760 ms at the default threshold); 0.6 times when they read as
 * finished (a sentence the recogniser closed, a short answer: 240 ms) in a caller's answer to the
 * agent; else endOfTurnMs. While the far end is still opening the call (`opening`: the agent has
 * not spoken yet) a closed sentence does not shorten it: greetings, voicemail messages and menus
 * run several sentences on ("Hi, you've reached Sam. Please leave a message after the tone."),
 * with pauses between them longer than 240 ms. interruption_threshold scales all three.
 */
export function endOfTurnSilenceMs(interruptionThreshold: number, words: TurnWords, opening = false): number {
  const base = endOfTurnMs(interruptionThreshold);
  if (words === 'unfinished') return Math.round(base * 1.9);
  if (words === 'finished' && !opening) return Math.round(base * 0.6);
  return base;
}

export interface TurnDetectorOptions {
  /** The call's interruption_threshold (default 100). */
  interruptionThreshold: number;
  /** A frame whose score reaches this counts as voiced. Default 0.5. */
  startScore?: number;
  /** While speaking, a frame below this counts as silent (hysteresis: lower than startScore). Default 0.35. */
  endScore?: number;
  /** Voiced frames in a row that make a start (filters clicks). Default 3 (60 ms). */
  startFrames?: number;
}

export type TurnSignal =
  /** Speech began; `startFrame` is the first voiced frame of the run that confirmed it. */
  | { type: 'start'; startFrame: number }
  /** Enough trailing silence followed the last voiced frame: the turn's audio is over. */
  | { type: 'end'; startFrame: number; lastVoicedFrame: number };

/**
 * Feeds on one VAD score per frame. Between a start and an end, a voiced frame resets the
 * trailing-silence count, so a pause shorter than the threshold's silence keeps the turn open.
 */
export class TurnDetector {
  /** Frames of trailing silence that end the turn now (set by the words, see setWords). */
  silenceFrames: number;
  private readonly interruptionThreshold: number;
  private readonly startScore: number;
  private readonly endScore: number;
  private readonly startFrames: number;
  private frame = -1;
  private run = 0;
  private runStart = 0;
  private speaking = false;
  private startFrame = 0;
  private lastVoiced = 0;

  constructor(options: TurnDetectorOptions) {
    this.interruptionThreshold = options.interruptionThreshold;
    this.silenceFrames = Math.ceil(endOfTurnMs(options.interruptionThreshold) / FRAME_MS);
    this.startScore = options.startScore ?? 0.5;
    this.endScore = options.endScore ?? 0.35;
    this.startFrames = Math.max(1, options.startFrames ?? 3);
  }

  /**
   * How the recogniser's words of the turn so far read (turnWords), and whether the far end is
   * still opening the call: sets the silence that ends it (endOfTurnSilenceMs). A silence already
   * longer than a shorter wait ends the turn on the next frame.
   */
  setWords(words: TurnWords, opening = false): void {
    this.silenceFrames = Math.ceil(endOfTurnSilenceMs(this.interruptionThreshold, words, opening) / FRAME_MS);
  }

  /** True between a start and its end. */
  get inSpeech(): boolean {
    return this.speaking;
  }

  /** True while voiced frames are adding up to a start that is not yet confirmed. */
  get rising(): boolean {
    return !this.speaking && this.run > 0;
  }

  /** Index of the frame last fed (0-based). */
  get frameIndex(): number {
    return this.frame;
  }

  /** Frames of silence since the last voiced frame (0 while voiced). */
  get silentFor(): number {
    return this.frame - this.lastVoiced;
  }

  /** Feeds the next frame's score; returns a signal when a start or an end happens on it. */
  push(score: number): TurnSignal | null {
    this.frame++;
    if (!this.speaking) {
      if (score >= this.startScore) {
        if (this.run === 0) this.runStart = this.frame;
        this.run++;
        if (this.run >= this.startFrames) {
          this.speaking = true;
          this.startFrame = this.runStart;
          this.lastVoiced = this.frame;
          this.run = 0;
          return { type: 'start', startFrame: this.startFrame };
        }
      } else {
        this.run = 0;
      }
      return null;
    }
    if (score >= this.endScore) {
      this.lastVoiced = this.frame;
      return null;
    }
    if (this.frame - this.lastVoiced >= this.silenceFrames) {
      this.speaking = false;
      return { type: 'end', startFrame: this.startFrame, lastVoicedFrame: this.lastVoiced };
    }
    return null;
  }
}
