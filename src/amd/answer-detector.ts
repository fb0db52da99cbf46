import type { LegEvent } from '../carriers/types.js';
import { isMenu } from '../domain/ivr-menu.js';
import { isScreeningPrompt } from '../domain/screening.js';
import { DEFAULT_AMD_SETTINGS, LATE_BEEP_MS } from './acoustic.js';
import type { Answered } from './answered-by.js';

/** What picked up, as far as the start of the call tells. */
export type Answerer = 'human' | 'voicemail' | 'ivr' | 'screener' | 'unknown';

const MACHINE =
  /\b(leave (?:us |me )?(?:a|your) (?:message|name|number|note)|away from (?:my|the|our) (?:desk|phone|office)|out of (?:the|my) office|sorry (?:i|we) missed (?:you|your call)|after the (?:tone|beep|signal)|at the (?:tone|beep)|not available|unavailable|can(?:'|no)t (?:take|come to|get to) (?:your|the) (?:call|phone)|you(?:'ve| have) reached|voice ?mail|mailbox|messaging system|record your message|this is a recording|not in service|(?:(?:office|offices|store|shop|clinic|practice|branch|we) (?:is|are)|we(?:'|’)re) (?:now |currently |temporarily )?closed|(?:our|office|business|opening|regular|normal) hours are|if (?:this is|you have) (?:a|an) (?:medical )?emergency)\b/i;

/** Until when a menu or a beep can still correct a "human" decision (LATE_BEEP_MS on the audio). */
const REVISE_MS = LATE_BEEP_MS;
/** Words no person says to a caller: only a recording's, whatever the sound said. */
const VOICEMAIL_ONLY =
  /\b(leave (?:us |me )?(?:a|your) (?:message|name and number)|after the (?:tone|beep|signal)|at the (?:tone|beep)|record your message|voice ?mail|mailbox|messaging system|not in service|(?:number|subscriber|customer) you (?:have )?(?:dialed|called))\b/i;
/** A greeting's next words this soon after the audio's `human` verdict are the greeting going on. */
const GREETING_GOES_ON_MS = 3000;
/** Without audio, one greeting longer than this without a pause is a machine's (the classic rule). */
const LONG_GREETING_MS = 3000;

/** After the name, a request to hold: "one moment please", "just a sec", "hold on a second". */
const HOLD_REQUEST = String.raw`(?:(?:one|just a) (?:moment|second|sec)(?: please)?|(?:please )?hold on(?: (?:one|a|just a) (?:moment|second|sec))?)`;

/**
 * Words that open as a person at the phone does: a question before any full stop ("Hello? Yes,
 * listen, ..."), or a business's or household's answer naming who is on the line or offering help
 * ("Acme Dental, Kate speaking.", "Main Street Motors, service department, this is Kevin.", the same
 * asking the caller to hold: "..., this is Kevin, one moment please.", "how may I direct your call",
 * "can I take a message"). "Hi, this is Dana." or "Hi, Dana here." alone
 * is how recorded greetings start too, so a name counts only after the business's or household's
 * own name ("Hello, you have reached the help desk, my name is Omar.").
 */
const HUMAN_OPENING = new RegExp(
  [
    // A question from a person's first words, or before any full stop.
    String.raw`^(hello|hi|hey|yes|yeah|speaking|this is \w+ speaking)\b.*\?`,
    String.raw`^[^.]*\?`,
    // "Kate speaking."
    String.raw`\b\w+ speaking[.!]?$`,
    // After a business's or household's own name: "..., this is Kevin.", "..., Dana here.",
    // "..., you've got Tom.", maybe asking the caller to hold.
    String.raw`^(?!(?:hi|hey|hello)\b)[^.]*,\s*(?:this is \w+|\w+ here|you(?:'ve)? got \w+)(?:,\s*${HOLD_REQUEST})?[.!]?$`,
    String.raw`\byou(?:'ve| have) reached [^.]*,\s*(?:my name is|this is) \w+[.!]?$`,
    // Offering help.
    String.raw`\b(?:how (?:can|may) (?:i|we) (?:help|direct|assist)|what can (?:i|we) do for you|can i take your order|(?:can|may) i take (?:a|your) message)\b`,
  ].join('|'),
  'i',
);

/**
 * A beep: a single steady tone anywhere in the telephone band (300-3400 Hz) lasting 0.1-2 s, the
 * audio detector's beep (DEFAULT_AMD_SETTINGS); one of two or three short tones in a row counts.
 */
export function isBeep(event: { frequencyHz: number; durationMs: number }): boolean {
  const s = DEFAULT_AMD_SETTINGS;
  return (
    event.frequencyHz >= s.beepMinHz &&
    event.frequencyHz <= s.beepMaxHz &&
    event.durationMs >= s.beepMinMs &&
    event.durationMs <= s.beepMaxMs
  );
}

/**
 * Classifies one utterance by its words: menus, machine greetings, screeners. A menu is told by
 * its structure (options with keys, an entry prompt, spoken choices), in whatever language its
 * words are (src/domain/ivr-menu.ts).
 */
export function utteranceKind(text: string): 'ivr' | 'voicemail' | 'screener' | undefined {
  if (isMenu(text)) return 'ivr';
  if (isScreeningPrompt(text)) return 'screener';
  if (saysMachine(text)) return 'voicemail';
  return undefined;
}

/**
 * A machine's words: a voicemail's, a closed office's, a carrier's. Many are a receptionist's too
 * ("You've reached Acme support, this is Tom, how can I help you?"), so in words that open as a
 * person's only those no person says to a caller count (VOICEMAIL_ONLY).
 */
function saysMachine(text: string): boolean {
  return MACHINE.test(text) && (VOICEMAIL_ONLY.test(text) || !HUMAN_OPENING.test(text));
}

/**
 * Decides who answered from what the first five seconds carry: a beep, the length of the first
 * greeting and its pauses, machine phrases, menus, or silence. It sees only leg events, never a
 * sandbox persona's label, so it classifies Twilio and SIP calls the same way.
 *
 * - a beep: voicemail;
 * - a menu ("press 1 for ..."): ivr; a screening prompt: screener; machine phrases: voicemail,
 *   except where a person may say them too ("I am not available right now.", "You have reached
 *   Officer Diaz.") in a short utterance: then what follows decides (more such words or a greeting
 *   going on at length: voicemail; a person's opening: human; a pause: unknown);
 * - a short greeting ("Hello?", under 2 s) followed by a pause of a second: human;
 * - one long greeting (over 3 s without a pause): a machine by the classic AMD rule, unless its
 *   words open as a person's; which machine its next words decide (more words: voicemail), and
 *   with none more within the five seconds it is `unknown` (a person may read a business's name
 *   at length);
 * - nothing heard in five seconds: unknown; speech still going on at five seconds is judged when it ends.
 *
 * On audio (`acoustic`), answering-machine detection over the sound decides person or machine; a
 * machine's words then tell a menu, a screener or a voicemail apart. A machine whose first
 * utterance names none of them ("Thank you for calling Acme.") is judged on its next one (a menu
 * follows, or a voicemail greeting goes on), or is `unknown` when the five seconds end first, and
 * revised when a menu, a voicemail's words or a beep come within twelve seconds. The recogniser's
 * words weigh against the sound under the same cost rule: a person by the sound whose greeting
 * goes on in a voicemail's unmistakable words (not a question, not a person's opening), or
 * whose line beeps within twelve seconds, is a voicemail; a machine by the sound whose words open as a person does is a person. Without
 * words (no recogniser) the sound decides alone. The agent's language model, when it has one,
 * reads the first words too (modelSaid): one more piece of evidence under the same rule.
 */
export class AnswerDetector {
  static readonly WINDOW_MS = 5000;
  /** A short greeting counts as a person's only when a pause follows it. */
  static readonly PAUSE_MS = 1000;
  private decided: Answerer | undefined;
  private heardSpeech = false;
  private speakingSince: number | undefined;
  private deferred = false;
  /** A short greeting waits for its pause. */
  pending = false;
  /** Acoustic mode: audio AMD said machine while a greeting was under way; its words decide which. */
  private machineHeard = false;
  /** Acoustic mode: a machine's first words named nothing ("Thank you for calling Acme."): the next ones decide. */
  private awaitingMore = false;
  /**
   * A short utterance said words a recording says but a person may too ("You have reached Officer
   * Diaz."): what follows decides (see observe).
   */
  private machineLean = false;
  /** The far end's last utterance. */
  private lastWords = '';
  /** When the audio alone said `human`, or else when the last words before a `human` verdict ended (ms after the answer). */
  private humanAt: number | undefined;
  /** When the last utterance ended (ms after the answer). */
  private lastSpeechEnd: number | undefined;
  /** Acoustic mode: when the audio alone said `unknown` (ms after the answer). */
  private unknownAt: number | undefined;
  /** What the agent's language model read in the far end's first words (modelSaid). */
  private modelKind: Answerer | undefined;
  /** Signs a machine gives besides the model's reading: a machine's words, a beep. */
  private machineWords = false;
  private beepHeard = false;
  /** Which evidence made the verdict, when the language model took part (recorded on the call). */
  modelEvidence: string | undefined;

  /**
   * `acoustic`: an audio leg, whose answer comes from answering-machine detection on the audio
   * (src/amd/acoustic.ts, as `answered_by` events): the timing rules below are left to it, while
   * words still tell menus, screeners and machine phrases apart.
   */
  constructor(
    private readonly answeredAt: Date,
    /**
     * `off`: an inbound call (the caller dialled us, or talks from a browser): nobody is to be
     * detected, and nothing said ever ends the call as a voicemail.
     */
    private readonly options: { acoustic?: boolean; off?: boolean } = {},
  ) {}

  get result(): Answerer | undefined {
    return this.decided;
  }

  /**
   * Whether the language model's reading could still change the answer: nothing decided yet, or
   * a person or `unknown` still open to revision (REVISE_MS). A machine's verdict is settled.
   */
  openAt(at: Date): boolean {
    if (this.options.off) return false;
    if (this.decided === undefined) return true;
    if (this.decided !== 'human' && this.decided !== 'unknown') return false;
    return at.getTime() - this.answeredAt.getTime() <= REVISE_MS;
  }

  /** Feeds one event; returns the answer the first time it is decided. */
  observe(event: LegEvent): Answerer | undefined {
    if (this.options.off) return undefined;
    // A tone counts from its start (its event comes once it ended): a long beep is no later than a short one.
    const at = event.at.getTime() - this.answeredAt.getTime() - (event.type === 'tone' ? event.durationMs : 0);
    // On audio, the sound could not tell, and no sign of a machine came within twelve seconds of
    // that (the audio detector's LATE_BEEP_MS): the answer stays `unknown`, and a tone or words
    // heard later are the conversation's (a timer in the room), never a voicemail's.
    if (this.decided === undefined && this.unknownAt !== undefined && at - this.unknownAt > REVISE_MS)
      this.decide('unknown');
    if (event.type === 'tone' && isBeep(event)) this.beepHeard = true;
    if (event.type === 'speech' && saysMachine(event.text)) this.machineWords = true;
    // A machine by the model's reading waits for a second sign: this may be it.
    if (this.modelKind && (event.type === 'tone' || event.type === 'speech')) {
      const revised = this.modelMachine(at);
      if (revised) return revised;
    }
    // "Thank you for calling." then a menu: the greeting looked like a person's (or told nothing),
    // the menu says otherwise. A menu heard early overrides that first judgement; after "unknown",
    // a beep or a voicemail's words do too.
    if ((this.decided === 'human' || this.decided === 'unknown') && at <= REVISE_MS) {
      const kind = event.type === 'speech' ? utteranceKind(event.text) : undefined;
      if (kind === 'ivr') return this.decide('ivr');
      if (this.decided === 'unknown' && (kind === 'voicemail' || (event.type === 'tone' && isBeep(event))))
        return this.decide('voicemail');
    }
    // On audio, a "person" by the sound whose line then beeps is a voicemail: a greeting that
    // paused like a person's ("Hi, it's Mark." ... beep). A person never makes a steady tone in
    // the telephone band (isBeep), so the beep alone decides, within twelve seconds of the verdict
    // (the audio detector's LATE_BEEP_MS). The recogniser's words are evidence too: a greeting
    // that goes on in a voicemail's words ("Leave a message after the beep.") is a voicemail.
    // Hanging up on a person costs ten times talking to a machine, so only words no person says
    // to a caller count (VOICEMAIL_ONLY, never in a question or a person's opening), and only in
    // what started within three seconds of the verdict (the greeting going on, before a person
    // answers the agent's opener). Times count from the verdict, not from the answer: the audio
    // may start late.
    if (this.decided === 'human' && this.humanAt !== undefined && at - this.humanAt <= REVISE_MS) {
      if (event.type === 'tone' && isBeep(event)) return this.decide('voicemail');
      if (
        event.type === 'speech' &&
        VOICEMAIL_ONLY.test(event.text) &&
        !HUMAN_OPENING.test(event.text) &&
        at - event.durationMs - this.humanAt <= GREETING_GOES_ON_MS
      )
        return this.decide('voicemail');
    }
    if (this.decided) return undefined;
    if (event.type === 'answered_by' && this.options.acoustic) {
      if (event.answeredBy === 'voicemail' && !event.messageEnded) {
        // A machine, but which? Its words decide (a menu is an IVR, a screening prompt a screener):
        // those under way, or, when words already heard named nothing, the next ones (or the end
        // of the five seconds, see timeout).
        this.machineHeard = true;
        if (this.speakingSince !== undefined || !this.heardSpeech) return undefined;
        // The words heard before the sound's verdict opened as a person does (a question, "this is
        // Joanna speaking"): a person, whom the verdict came too late to judge by its words.
        if (HUMAN_OPENING.test(this.lastWords)) return this.decide('human');
        // Its words leaned to a machine already ("You've reached Dana."): the sound agrees.
        if (!this.awaitingMore && !this.machineLean) {
          this.awaitingMore = true;
          return undefined;
        }
        return this.decide('voicemail');
      }
      if (event.answeredBy === 'human') this.humanAt = at;
      if (event.answeredBy !== 'unknown') return this.decide(event.answeredBy);
      this.unknownAt = at;
      return undefined;
    }
    // The carrier's own detection (Twilio's async AMD): taken when it knows, if nothing was decided yet.
    if (event.type === 'answered_by') return event.answeredBy === 'unknown' ? undefined : this.decide(event.answeredBy);
    if (event.type === 'tone' && isBeep(event)) return this.decide('voicemail');
    if (event.type === 'speech_start') {
      // More speech right after a short greeting: not a person waiting for us (a menu, a machine).
      this.pending = false;
      this.speakingSince = at;
      return undefined;
    }
    if (event.type !== 'speech') return undefined;
    this.speakingSince = undefined;
    const first = !this.heardSpeech;
    this.heardSpeech = true;
    this.lastSpeechEnd = at;
    this.lastWords = event.text;
    const kind = utteranceKind(event.text);
    // A recording's words that a person may say too, in a short utterance that may stop and wait
    // for the caller: never a machine on them alone. What follows decides: more of a machine's
    // words, a greeting going on at length, or the sound's machine verdict make it a voicemail;
    // words that open as a person's make it a person; a pause leaves it `unknown` (the agent
    // speaks, and a beep or a voicemail's words still revise it).
    if (
      kind === 'voicemail' &&
      !this.machineLean &&
      event.durationMs <= LONG_GREETING_MS &&
      !VOICEMAIL_ONLY.test(event.text) &&
      !this.machineHeard
    ) {
      this.machineLean = true;
      // On audio the sound's verdict decides; without it, the utterance waits for its pause below.
      if (this.options.acoustic) return undefined;
    } else if (kind) return this.decide(kind);
    if (this.machineLean && !this.options.acoustic) {
      if (HUMAN_OPENING.test(event.text)) return this.decide('human');
      if (event.durationMs > LONG_GREETING_MS) return this.decide('voicemail');
      if (this.deferred) return this.decide('unknown');
      this.pending = true;
      return undefined;
    }
    // On audio the sound judged a long greeting a machine's; without audio the classic rule does:
    // one greeting over 3 s is a machine's. Either way its words may still show a person talking
    // at length or a business's person ("Hello? Yes, listen, ...", "..., Kate speaking."), which a
    // recorded greeting does not say. Else, a machine, but which, or a person reading a business's
    // name at length? A company's greeting may lead to a menu; a voicemail greeting goes on to say
    // so, or beeps. Its next words decide, or else the end of the five seconds (`unknown`).
    if (this.options.acoustic && !this.machineHeard) return undefined;
    const startedMs = at - event.durationMs;
    if (!this.options.acoustic && startedMs > AnswerDetector.WINDOW_MS && !this.deferred) return undefined;
    if (this.options.acoustic || this.awaitingMore || event.durationMs > LONG_GREETING_MS) {
      if (HUMAN_OPENING.test(event.text)) return this.decide('human');
      // (Without audio, words before it were the greeting's start: these are its next words.)
      if (!this.awaitingMore && !this.machineLean && (this.options.acoustic || first)) {
        if (at < AnswerDetector.WINDOW_MS) {
          this.awaitingMore = true;
          return undefined;
        }
        // Without audio, one greeting that ran past the five seconds and named nothing is its
        // length alone: not enough to hang up on (a person who says who they are at length).
        if (!this.options.acoustic) return this.decide('unknown');
      }
      return this.decide('voicemail');
    }
    // The utterance that ran past the window is the last word: whatever it was, it is decided now.
    if (this.deferred) return this.decide('human');
    if (event.durationMs <= 2000 && event.text.split(/\s+/).filter(Boolean).length <= 6) this.pending = true;
    return undefined;
  }

  /** The pause after a short greeting passed with no more speech: a person. */
  confirmPause(): Answerer | undefined {
    if (this.options.off || this.decided || !this.pending) return undefined;
    // A beep or a voicemail's words right after it revise it, as on audio ("Hello!" ... "Leave me a message."): see decide.
    // After a recording's words a person may say too, the pause leaves it open: `unknown`.
    return this.decide(this.machineLean ? 'unknown' : 'human');
  }

  /** The five-second window closed. Speech still going on is judged when it ends. */
  timeout(): Answerer | undefined {
    if (this.options.off || this.decided) return undefined;
    // On audio the detector over the audio has its own five seconds, counted in frames. A machine
    // whose first words named nothing ("Thank you for calling Acme.") and said nothing more is not
    // known to be a voicemail: hanging up on a menu that starts late, or on a person after a
    // company's recording, costs more than talking to a machine. It is `unknown` (the agent
    // speaks), revised if a menu, a voicemail's words or a beep follow. Words still coming at five
    // seconds are judged when they end.
    if (this.awaitingMore && this.speakingSince === undefined) return this.decide('unknown');
    if (this.options.acoustic) return undefined;
    if (this.speakingSince !== undefined) {
      this.deferred = true;
      return undefined;
    }
    return this.decide(this.heardSpeech && !this.machineLean ? 'human' : 'unknown');
  }

  /**
   * The agent's language model classified the far end's first words. Under the same cost rule as
   * the words: the model alone never makes a machine of what the audio heard as a person. It
   * confirms a person, and turns an undecided or `unknown` answer (a machine by the sound whose
   * words named nothing) into a person, which only costs talking to a machine. It makes a machine
   * only together with another sign: a machine's words ("you've reached", "not available"), a
   * beep, or the audio's lean to a machine. Returns the answer when this changed it.
   */
  modelSaid(kind: Answerer, at: Date): Answerer | undefined {
    if (this.options.off || kind === 'unknown') return undefined;
    this.modelKind = kind;
    if (kind === 'human') {
      if (this.decided === 'human') {
        this.modelEvidence = 'the audio and the language model: a person';
        return undefined;
      }
      if (this.decided === 'unknown' || (this.decided === undefined && (this.awaitingMore || this.pending))) {
        this.modelEvidence = `the language model: a person${this.machineHeard ? ', over the audio leaning to a machine' : ''}`;
        return this.decide('human');
      }
      return undefined;
    }
    return this.modelMachine(at.getTime() - this.answeredAt.getTime(), true);
  }

  /** A machine by the model's reading, once a second sign backs it; `now` when it just came. */
  private modelMachine(at: number, now = false): Answerer | undefined {
    const kind = this.modelKind;
    if (kind === undefined || kind === 'human' || kind === 'unknown') return undefined;
    if (this.decided !== undefined && this.decided !== 'human' && this.decided !== 'unknown') return undefined;
    // Only the greeting's time counts: later words are the conversation's ("Tuesday I'm not available").
    if (!now && at - (this.humanAt ?? 0) > REVISE_MS) return undefined;
    // Against the audio's person only a voicemail, and only with its words or a beep.
    const againstPerson = this.decided === 'human';
    if (againstPerson && kind !== 'voicemail') return undefined;
    const sign = this.machineWords ? "a machine's words" : this.beepHeard ? 'a beep' : undefined;
    const lean = !againstPerson && this.machineHeard ? "the audio's lean to a machine" : undefined;
    const backing = sign ?? lean;
    if (!backing) return undefined;
    this.modelEvidence = `the language model (${kind}) with ${backing}`;
    return this.decide(kind);
  }

  private decide(answer: Answerer): Answerer {
    // Whatever made it a person (the audio, a pause, a person's words, the end of the five seconds,
    // the model), a beep or a voicemail's words soon after the greeting revise it: the verdict's
    // time is the audio's, or the end of the last words heard.
    if (answer === 'human') this.humanAt ??= this.lastSpeechEnd;
    this.decided = answer;
    this.pending = false;
    return answer;
  }
}

/** The seed's answered_by for each detected answerer. */
export function answeredByOf(answer: Answerer | undefined): Answered {
  if (answer === 'human' || answer === 'screener') return 'human';
  if (answer === 'voicemail') return 'voicemail';
  return 'unknown';
}
