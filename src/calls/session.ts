import type { Clock } from '../clock.js';
import type { CallLeg, LegEvent, SpeakResult } from '../carriers/types.js';
import type { Agent, AgentAction, AgentContext, AgentInput, AgentReply, AnswerReading, Turn } from '../agent/types.js';
import type { CallRequest, CallTool } from '../schemas/call-request.js';
import { findTool, toolCalledNote, toolOutcomeNote, type ToolResult } from '../agent/tools.js';
import { decideVoicemail } from '../domain/voicemail-rules.js';
import { renderSpoken } from '../domain/template.js';
import {
  isMenu,
  menuLineKind,
  parseMenu,
  PERSON_AFTER_MENU,
  PERSON_AFTER_SCREENER,
  repeatsMenu,
  type MenuLineKind,
} from '../domain/ivr-menu.js';
import { AnswerDetector, answeredByOf, utteranceKind, type Answerer } from '../amd/answer-detector.js';
import { EventQueue } from './event-queue.js';
import { TextChannel } from './text-channel.js';
import { inSpan } from '../observability/tracing.js';
import { hasInboundAudio, watchAnsweringMachine } from '../amd/acoustic.js';
import { endOfTurnMs } from '../media/turn-detector.js';
import type { Answered } from '../amd/answered-by.js';
import type { KnowledgeLookup } from '../knowledge/library.js';

type Internal =
  | LegEvent
  | { type: 'spoken'; text: string; result: SpeakResult; then: AgentAction | 'hangup' | null; by: AbortController }
  | {
      type: 'timer';
      name:
        | 'respond'
        | 'silence'
        | 'barge_in'
        | 'hold'
        | 'detect'
        | 'detect_pause'
        | 'voicemail_fallback'
        | 'greeting_wait'
        | 'menu_pause'
        | 'user_line';
      /** Set on a timer due at once (queued without a timer): false once it was disarmed or re-armed. */
      live?: { armed: boolean };
    }
  | { type: 'max_duration' }
  /** Answering-machine detection heard the far end's first turn end before its verdict (OpenerMoment). */
  | { type: 'opener_due' }
  | { type: 'tool_done'; tool: CallTool; result: ToolResult }
  | { type: 'reply'; turn: AgentTurn; reply: AgentReply }
  | { type: 'turn_failed'; turn: AgentTurn; error: unknown }
  | { type: 'stop' }
  /** The agent's language model read who answered from the first words (undefined: no reading). */
  | { type: 'answer_reading'; reading: AnswerReading | undefined };

/**
 * A turn of the agent under way. It runs detached from the session's event loop (a slow model
 * never delays a hang-up, a stop or the caller's voice) and reports back as a `reply` event.
 */
interface AgentTurn {
  input: AgentInput;
  /** Cancels the agent's work on it: its model request stops at once. */
  controller: AbortController;
  /** The reply's words as the agent writes them. */
  channel: TextChannel;
  /** The speech saying the words as they come (a streamed reply), once it started. */
  speech?: AbortController;
  /** The reply, held back while the caller is speaking: their words decide what becomes of it. */
  reply?: AgentReply;
}

export interface SessionRecorder {
  /** Persists one transcript line as it happens, so call details show a live transcript. */
  transcript(turn: Turn): Promise<void>;
}

export interface SessionOutcome {
  endedBy: 'USER' | 'ASSISTANT';
  answeredBy: Answered;
  answerer: Answerer;
  transferredTo: string | null;
  /** A failure during the live call (call_error), e.g. a failed transfer. */
  error: string | null;
  /** The call reached a voicemail (retry after voicemail applies). */
  reachedVoicemail: boolean;
  /** When who answered was last decided or revised, ms after the answer; null when it stayed unknown. */
  answeredByMs: number | null;
  endedAt: Date;
}

export interface SessionOptions {
  callId: string;
  request: CallRequest;
  inbound: boolean;
  variables: Record<string, unknown>;
  leg: CallLeg;
  agent: Agent;
  clock: Clock;
  recorder: SessionRecorder;
  /** Aborting it ends the call from our side (stop endpoint, shutdown). */
  signal: AbortSignal;
  /** dynamic_data context lines, updated in place while the call runs. */
  knowledge?: readonly string[];
  /** Searches the call's knowledge bases. */
  lookup?: KnowledgeLookup;
  /** Runs a custom tool through the guarded client (src/agent/tools.ts); without it tools fail. */
  runTool?(tool: CallTool, input: unknown): Promise<ToolResult>;
  /** Each note of a tool's run, as the transcript gets it (the call's `tool` events). */
  onToolNote?(text: string): void;
  /** The agent answered (latency of audio legs: src/media/latency.ts). */
  onReply?(): void;
  /** The agent's language model sent the first token of a reply (latency of audio legs). */
  onFirstToken?(): void;
}

const SILENCE_MS = 7000;
/**
 * Words said over the agent (a "Hello?" over its greeting) are answered only if nothing more comes
 * this long after the agent finished: the person's answer to what it said comes first.
 */
const OVERLAP_ANSWER_MS = 1200;
/** Without interim transcripts, speech this long over the agent (held all the while) counts as an interruption. */
const BARGE_IN_MS = 1500;
/**
 * The longest the agent's speech stays held after the caller's voice started over it with no
 * words and no end of their speech (a recogniser that never settles): then it goes on.
 */
const HOLD_MAX_MS = 2000;

const BACKCHANNEL = new Set(
  'uh huh uhhuh mm hmm mhm mmhmm yeah yes yep okay ok right sure go on i see got it alright uh um hm hmm oh wow really'.split(
    ' ',
  ),
);

function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z']+/)
    .filter(Boolean);
}

/**
 * Whether `heard` is made of runs of the words of `saying` (each at least two words long, but for
 * the last, whose next words may not be recognised yet): the agent's own voice recognised, perhaps
 * more than once over (a recogniser may join the echo of two passes of one sentence, and its
 * interim words of the second pass come one at a time). One word of the caller's among them, and
 * it is not.
 */
function echoesAgent(heard: readonly string[], saying: string): boolean {
  if (heard.length === 0) return false;
  const own = wordsOf(saying);
  for (let i = 0; i < heard.length;) {
    let longest = 0;
    for (let start = 0; start < own.length; start++) {
      let n = 0;
      while (i + n < heard.length && start + n < own.length && own[start + n] === heard[i + n]) n++;
      longest = Math.max(longest, n);
    }
    if (longest === 0 || (longest < 2 && heard.length > 1 && i + longest < heard.length)) return false;
    i += longest;
  }
  return true;
}

/**
 * Words heard over the agent that make it stop: enough of them (more with a higher
 * interruption_threshold), not just a backchannel ("uh huh", "okay", "go on"), and not a run of
 * the words the agent is saying (`saying`): that is its own voice coming back on the line (an
 * echo the guard did not catch, which a recogniser transcribes like any voice).
 */
export function isInterruption(partial: string, threshold: number, saying = ''): boolean {
  const said = wordsOf(partial);
  const minWords = Math.max(2, Math.round(threshold / 35));
  return said.length >= minWords && !said.every((w) => BACKCHANNEL.has(w)) && !echoesAgent(said, saying);
}
/**
 * What of an utterance may come back as echo once it stopped: what was played, and the words under
 * way when it was cut (their first syllables went out before their marks passed; an utterance cut
 * before its first mark still sent its first frames).
 */
export function mayEcho(text: string, played: string): string {
  const all = text.split(/\s+/).filter(Boolean);
  const heard = played.split(/\s+/).filter(Boolean).length;
  return all.slice(0, heard + UNDER_WAY_WORDS).join(' ');
}
/** Words after the last one played that may have started going out when an utterance was cut. */
const UNDER_WAY_WORDS = 3;
const GREETING_WAIT_MS = 5000;
/**
 * A caller's line is written to the record this long after their words came: words they say on
 * after a pause in that time ("Okay, ... sounds good."), with no other line between, join it
 * instead of making a second line. The agent sees them at once either way.
 */
const USER_LINE_MS = 800;
/** How long after the agent stops its words may still come back as an echo and be recognised. */
const ECHO_TAIL_MS = 1500;
/** How long the agent waits in silence for the person after answering a call screener. */
const SCREENER_WAIT_MS = 20_000;
const VOICEMAIL_FALLBACK_MS = 2500;
/** What the agent says before hanging up when it can no longer hear the caller (the recogniser failed). */
export const CANNOT_HEAR_LINE = "I'm sorry, I'm having technical trouble hearing you. Please call back later. Goodbye!";
/**
 * A phone menu is complete when this much silence follows an option (menus pause about half a
 * second between options and wait seconds for a key at the end), when it offers to repeat
 * itself, or when it starts over.
 */
export const MENU_PAUSE_MS = 1200;

/**
 * One live call: turn-taking between the far end and the agent, built-in actions, voicemail and
 * IVR rules, max_duration. It knows the carrier only through its CallLeg.
 */
export class CallSession {
  private readonly events = new EventQueue<Internal>();
  private readonly transcript: Turn[] = [];
  /** The caller's last line, kept back for USER_LINE_MS before it is written (see record). */
  private pendingLine: Turn | undefined;
  private readonly timers = new Map<string, () => void>();
  private readonly detector: AnswerDetector;
  private readonly answeredAt: Date;
  /** `answered_by` by the detector as last seen, and when it took that value (ms after the answer). */
  private verdict: { answeredBy: Answered; ms: number | null } = { answeredBy: 'unknown', ms: null };
  private speaking: AbortController | undefined;
  /** The agent's last utterance (what may have gone out of it) and when it ended: its echo may still come back. */
  private lastSaid: { text: string; at: number } | undefined;
  /** The far end's voice under way started while the agent was speaking. */
  private overAgent = false;
  /** The utterance paused because the caller's voice started over it: their words decide. */
  private held: AbortController | undefined;
  /** The interim words of the utterance under way. */
  private partial = '';
  private theySpeaking = false;
  private heard: string[] = [];
  private overlapped = false;
  private silences = 0;
  /** `screener`: a call screener asked who is calling; the agent told it and waits for the person. */
  private phase: 'conversation' | 'voicemail' | 'ivr' | 'screener' | 'ending' = 'conversation';
  private greeted = false;
  private reachedVoicemail = false;
  private transferredTo: string | null = null;
  private error: string | null = null;
  private endedBy: 'USER' | 'ASSISTANT' = 'ASSISTANT';
  private done = false;
  /**
   * Set while a transfer holds the call (a carrier that bridges it itself, until the bridge ends):
   * max_duration cannot wait for the session's next event, it hangs the call up through this.
   */
  private onLimit: (() => void) | undefined;
  /**
   * The last transfer that failed with the caller back on the line: the call's error unless a
   * later transfer goes through.
   */
  private failedTransfer: string | null = null;
  /** A custom tool is running: silence and answer timers wait for its result. */
  private toolRunning = false;
  /** A tool's result that arrived while words were still being played. */
  private toolResult: Extract<Internal, { type: 'tool_done' }> | null = null;
  /** The agent's turn under way, if any: one at a time. */
  private thinking: AgentTurn | undefined;
  /** Turns asked for while another was under way. */
  private readonly nextTurns: AgentInput[] = [];
  /** The lines of the phone menu being heard, until it is complete and the agent chooses once. */
  private menuLines: string[] = [];
  /** The last menu the agent chose from: its repeats are not chosen from again. */
  private chosenMenu = '';
  /** Keys chosen while the menu was still speaking: they go out once its prompt has ended. */
  private pendingKeys: string | undefined;
  /** What answered was first judged otherwise and turned out to be a menu. */
  private heardMenu = false;
  /**
   * The agent greeted at the far end's first pause, before that greeting's words came in: they
   * are the greeting it answered, not something to answer again.
   */
  private greetedAtPause = false;
  /**
   * The language model's reading of who answered, asked once on the first words of an audio leg
   * (Agent.classifyAnswer): aborted once the verdict is settled or the call ends.
   */
  private reading: AbortController | undefined;
  /** The evidence last recorded as deciding who answered. */
  private evidenceNoted: string | undefined;

  constructor(private readonly o: SessionOptions) {
    // Audio legs: who answered comes from answering-machine detection on the audio (src/amd/acoustic.ts).
    // Inbound calls answer a caller: there is nobody to detect.
    this.answeredAt = o.clock.now();
    this.detector = new AnswerDetector(this.answeredAt, { acoustic: hasInboundAudio(o.leg), off: o.inbound });
  }

  async run(): Promise<SessionOutcome> {
    const { leg, clock, request } = this.o;
    const unsubscribe = leg.on((event) => this.events.push(event));
    // wait_for_greeting: the agent says its first sentence once the far end has greeted, at the
    // first pause after its greeting as heard on the audio (the recogniser's end of turn and words
    // come later), or after 1.2 s of a long greeting's voice, so the detector hears the answer (a
    // person falls silent and replies, a recording talks on). Without it the agent speaks first anyway.
    const openerDue = request.wait_for_greeting ? () => this.events.push({ type: 'opener_due' }) : undefined;
    const stopAmd =
      hasInboundAudio(leg) && !this.o.inbound
        ? watchAnsweringMachine(
            leg,
            (amd) => {
              // Undecided after five seconds (dead air): who answered stays unknown.
              if (amd.decision === 'unknown') return;
              this.events.push({
                type: 'answered_by',
                at: clock.now(),
                answeredBy: amd.decision === 'machine' ? 'voicemail' : 'human',
                messageEnded: amd.reason === 'beep',
              });
            },
            {},
            openerDue,
          )
        : undefined;
    const onStop = () => this.events.push({ type: 'stop' });
    this.o.signal.addEventListener('abort', onStop, { once: true });
    if (this.o.signal.aborted) onStop();
    this.timers.set(
      'max',
      clock.setTimer(() => {
        this.events.push({ type: 'max_duration' });
        this.onLimit?.();
      }, request.max_duration * 60_000),
    );
    this.arm('detect', AnswerDetector.WINDOW_MS);
    if (request.wait_for_greeting) this.arm('greeting_wait', GREETING_WAIT_MS);
    else this.greet();

    try {
      while (!this.done) {
        await this.handle(await this.events.next());
        this.noteVerdict();
      }
      await this.writeLine();
    } finally {
      // A call that broke off still keeps the caller's last words, when they can be written.
      await this.writeLine().catch(() => undefined);
      for (const cancel of this.timers.values()) cancel();
      this.cancelTurn({ ended: true });
      this.speaking?.abort();
      this.reading?.abort();
      unsubscribe();
      stopAmd?.();
      this.o.signal.removeEventListener('abort', onStop);
    }
    const answerer = this.heardMenu ? 'ivr' : (this.detector.result ?? 'unknown');
    const answeredBy = answeredByOf(answerer);
    return {
      endedBy: this.endedBy,
      answeredBy,
      answerer,
      transferredTo: this.transferredTo,
      error: this.error ?? this.failedTransfer,
      reachedVoicemail: this.reachedVoicemail,
      answeredByMs: answeredBy === 'unknown' ? null : this.verdict.ms,
      endedAt: clock.now(),
    };
  }

  /**
   * Notes when `answered_by` changed (decided, or revised by a beep, words or the model); a
   * person found to be a screener stays `human`, and keeps its time.
   */
  private noteVerdict(): void {
    const answeredBy = answeredByOf(this.detector.result);
    if (answeredBy !== this.verdict.answeredBy)
      this.verdict = { answeredBy, ms: this.o.clock.now().getTime() - this.answeredAt.getTime() };
  }

  /**
   * The pause before answering what was heard. An audio leg has already waited the turn's trailing
   * silence (the same endOfTurnMs) before handing over the utterance, so it adds none.
   */
  private respondDelayMs(): number {
    return this.o.leg.mode === 'audio' ? 0 : endOfTurnMs(this.o.request.interruption_threshold);
  }

  private arm(name: Extract<Internal, { type: 'timer' }>['name'], ms: number): void {
    this.timers.get(name)?.();
    if (ms <= 0) {
      // Due now: queued at once. A 0 ms timer would first wait for every I/O callback already
      // queued (with hundreds of audio calls, many milliseconds of other calls' frames).
      const live = { armed: true };
      this.timers.set(name, () => (live.armed = false));
      this.events.push({ type: 'timer', name, live });
      return;
    }
    this.timers.set(
      name,
      this.o.clock.setTimer(() => {
        this.timers.delete(name);
        this.events.push({ type: 'timer', name });
      }, ms),
    );
  }

  private disarm(name: string): void {
    this.timers.get(name)?.();
    this.timers.delete(name);
  }

  private async record(role: Turn['role'], text: string): Promise<void> {
    const pending = this.pendingLine;
    if (role === 'user' && pending && this.transcript.at(-1) === pending) {
      pending.text = `${pending.text} ${text}`.trim();
      this.arm('user_line', USER_LINE_MS);
      return;
    }
    await this.writeLine();
    const turn = { role, text };
    this.transcript.push(turn);
    if (role !== 'user') return this.o.recorder.transcript(turn);
    this.pendingLine = turn;
    this.arm('user_line', USER_LINE_MS);
  }

  /** Writes the caller's line that waits for words said on after a pause (USER_LINE_MS). */
  private async writeLine(): Promise<void> {
    const line = this.pendingLine;
    if (!line) return;
    this.pendingLine = undefined;
    this.disarm('user_line');
    await this.o.recorder.transcript({ role: line.role, text: line.text });
  }

  private context(): AgentContext {
    return {
      callId: this.o.callId,
      request: this.o.request,
      inbound: this.o.inbound,
      variables: this.o.variables,
      transcript: this.transcript,
      ...(this.o.knowledge && { knowledge: this.o.knowledge }),
      ...(this.o.lookup && { lookup: this.o.lookup }),
      ...(this.o.onFirstToken && { onFirstToken: this.o.onFirstToken }),
    };
  }

  /**
   * Asks the agent, without waiting for it: the turn runs detached and its reply comes back as an
   * event. A reply the agent writes piece by piece (a language model's stream) is spoken as it
   * comes: speech starts with its first sentence while the model writes the rest (never over the
   * caller: while they speak the words wait), and the reply's action is carried out once its
   * words are played. One turn runs at a time; a turn asked for meanwhile follows it.
   */
  private startTurn(input: AgentInput): void {
    if (this.thinking) {
      this.nextTurns.push(input);
      return;
    }
    const turn: AgentTurn = { input, controller: new AbortController(), channel: new TextChannel() };
    this.thinking = turn;
    const context: AgentContext = {
      ...this.context(),
      signal: turn.controller.signal,
      onText: (piece) => {
        if (this.thinking !== turn) return;
        turn.channel.push(piece);
        this.speakStreamed(turn);
      },
    };
    // A span per turn of the agent (under the call's), with the model's requests under it.
    void inSpan('turn', { 'openline.call.id': this.o.callId, 'openline.turn.input': input.kind }, (span) =>
      this.o.agent.respond(input, context).then((answer) => {
        if (answer.action) span.setAttribute('openline.turn.action', answer.action.type);
        return answer;
      }),
    ).then(
      (reply) => {
        turn.channel.close();
        this.events.push({ type: 'reply', turn, reply });
      },
      (error: unknown) => {
        turn.channel.close();
        this.events.push({ type: 'turn_failed', turn, error });
      },
    );
  }

  /** Starts saying a streamed reply's words once there are some and the caller is not speaking. */
  private speakStreamed(turn: AgentTurn): void {
    if (turn.speech || this.theySpeaking || turn.channel.text.trim() === '') return;
    turn.speech = this.say(turn.channel, null);
  }

  /** The agent's reply to the turn under way: said (or held while the caller speaks). */
  private async onReply(turn: AgentTurn, reply: AgentReply): Promise<void> {
    if (turn !== this.thinking) return;
    if (this.theySpeaking && !turn.speech) {
      turn.reply = reply;
      return;
    }
    await this.finishTurn(turn, reply);
  }

  private async finishTurn(turn: AgentTurn, reply: AgentReply): Promise<void> {
    this.thinking = undefined;
    this.o.onReply?.();
    // The reply differs from the words streamed (the model failed midway and a fallback line
    // replaces them): say it instead, as an ordinary reply.
    const streamed = turn.speech && (reply.say === null || reply.say.trim() === turn.channel.text.trim());
    await this.act(streamed ? { ...reply, streamed: turn.speech } : reply);
    const next = this.nextTurns.shift();
    if (next && !this.done) this.startTurn(next);
  }

  /**
   * Abandons the turn under way. A restartable agent's work stops at once (model request,
   * synthesis); another agent's turn runs on but its reply is not used, unless the call ended.
   * `merge`: the caller went on talking before a word of the reply was said, so what they said
   * before is answered again together with what they say now.
   */
  private cancelTurn(how: { ended?: boolean; merge?: boolean }): void {
    this.nextTurns.length = 0;
    const turn = this.thinking;
    if (!turn) return;
    this.thinking = undefined;
    if (how.ended || this.o.agent.restartable) turn.controller.abort();
    turn.channel.close();
    if (how.merge && turn.input.kind === 'heard') this.heard.unshift(turn.input.text);
  }

  /**
   * Whether the caller's words, ending while the agent was still thinking, restart its turn with
   * all their words: a restartable agent answering what was heard (or the silence) that has said
   * nothing of its reply yet.
   */
  private restarts(turn: AgentTurn): boolean {
    return (
      this.o.agent.restartable === true &&
      // The answer to a call screener is said whatever its hold lines say meanwhile.
      this.phase !== 'screener' &&
      !turn.speech &&
      (turn.input.kind === 'heard' || turn.input.kind === 'silence')
    );
  }

  /** The caller's voice ended while the agent was thinking: their words restart the turn, or it goes on. */
  private async onSpeechWhileThinking(text: string): Promise<void> {
    const turn = this.thinking;
    if (!turn) return;
    if (text.trim() !== '' && this.restarts(turn)) return this.cancelTurn({ merge: true });
    if (turn.reply) return this.finishTurn(turn, turn.reply);
    this.speakStreamed(turn);
  }

  private greet(): void {
    if (this.greeted) return;
    this.greeted = true;
    this.disarm('greeting_wait');
    this.startTurn({ kind: 'start' });
  }

  /** Says the reply's words (if any), then carries out its action once they have been played. */
  private async act(reply: AgentReply & { streamed?: AbortController }): Promise<void> {
    if (reply.note) await this.record('agent-action', reply.note);
    if (reply.streamed) {
      // Its words are being said already: the action follows them (see onSpoken).
      this.streamedThen.set(reply.streamed, reply.action);
      return;
    }
    if (reply.say && reply.say.trim() !== '') {
      this.say(reply.say, reply.action);
    } else if (reply.action) {
      await this.perform(reply.action);
    } else {
      this.arm('silence', SILENCE_MS);
    }
  }

  /**
   * The words of what the agent is saying now, after those of its last utterance if that ended
   * less than ECHO_TAIL_MS ago (its echo may still be coming back, or still being recognised).
   */
  private sayingNow(): string {
    const current = (this.speaking && this.saying.get(this.speaking)?.words()) || '';
    const last =
      this.lastSaid && this.o.clock.now().getTime() - this.lastSaid.at < ECHO_TAIL_MS ? this.lastSaid.text : '';
    return `${last} ${current}`.trim();
  }

  /** Pauses the agent's current utterance (the caller's voice started over it). */
  private hold(): void {
    if (!this.speaking || this.held === this.speaking || !this.o.leg.pause) return;
    this.o.leg.pause();
    this.held = this.speaking;
    this.arm('hold', HOLD_MAX_MS);
  }

  /** The caller's words on a held utterance: an interruption ends it, anything else lets it go on. */
  private release(text: string): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    this.disarm('hold');
    if (held !== this.speaking) return;
    if (isInterruption(text, this.o.request.interruption_threshold, this.sayingNow())) held.abort();
    else this.o.leg.resume?.(text.trim() || this.partial.trim());
  }

  /** A real interruption: the agent's turn ends where it was cut (what was played is kept). */
  private interrupt(): void {
    this.held = undefined;
    this.disarm('hold');
    this.speaking?.abort();
  }

  /** What each utterance under way says and how it ends (a hang-up records what was heard of it). */
  private readonly saying = new Map<AbortController, { words: () => string; result: Promise<SpeakResult> }>();

  /** The actions of streamed replies, by the speech that says their words. */
  private readonly streamedThen = new Map<AbortController, AgentAction | null>();

  private say(text: string | TextChannel, then: AgentAction | 'hangup' | null): AbortController {
    this.speaking?.abort();
    const controller = new AbortController();
    this.speaking = controller;
    this.disarm('silence');
    const words = () => (typeof text === 'string' ? text : text.text);
    const result = this.o.leg.speak(text, { signal: controller.signal }).then(
      (r) => r,
      (): SpeakResult => ({ played: '', interrupted: true }),
    );
    this.saying.set(controller, { words, result });
    void result.then((r) => {
      this.saying.delete(controller);
      this.events.push({ type: 'spoken', text: words(), result: r, then, by: controller });
    });
    return controller;
  }

  private async handle(event: Internal): Promise<void> {
    switch (event.type) {
      case 'hangup': {
        this.endedBy = this.phase === 'ending' ? this.endedBy : 'USER';
        if (event.error) this.error ??= event.error;
        // They hung up while the agent spoke: what they heard of it stays in the transcript.
        const under = this.speaking && this.saying.get(this.speaking);
        if (under) {
          this.speaking!.abort();
          // A leg that went away may never settle its words: the call ends regardless.
          const heard = await Promise.race([under.result, this.o.clock.sleep(1000).then(() => undefined)]);
          const played = heard?.played.trim();
          if (played) await this.record('assistant', played !== under.words().trim() ? `${played}...` : played);
        }
        this.speaking = undefined;
        this.done = true;
        return;
      }
      case 'stop':
        await this.record('agent-action', 'Call stopped through the API');
        return this.end();
      case 'opener_due':
        if (this.greeted || this.phase !== 'conversation') return;
        // The far end paused half a second (or has greeted at length): the agent's first sentence
        // goes out now, whatever the recogniser's end of turn says (OpenerMoment).
        this.theySpeaking = false;
        this.greetedAtPause = true;
        this.greet();
        return;
      case 'max_duration':
        await this.record('agent-action', `Call ended: max_duration of ${this.o.request.max_duration} minutes reached`);
        this.phase = 'ending';
        this.cancelTurn({ ended: true });
        this.say("I'm sorry, we have reached the time limit for this call. Goodbye!", 'hangup');
        return;
      case 'speech_start':
        this.partial = '';
        this.detector.observe(event);
        this.disarm('detect_pause');
        // The menu goes on: it is not complete yet. A greeting that goes on is not over either.
        this.disarm('menu_pause');
        if (this.phase === 'voicemail') this.disarm('voicemail_fallback');
        this.theySpeaking = true;
        this.overAgent = this.speaking !== undefined;
        this.disarm('respond');
        this.disarm('silence');
        if (this.speaking && !this.o.request.block_interruptions && this.phase === 'conversation') {
          // Silent at once, as a person would fall silent: their words decide what follows.
          this.hold();
          this.arm('barge_in', BARGE_IN_MS);
        }
        return;
      case 'speech_paused':
        // The voice over the agent stopped with no interruption in its words so far (a
        // backchannel, a cough): the agent goes on without waiting for the end of their turn.
        if (this.held && !isInterruption(this.partial, this.o.request.interruption_threshold, this.sayingNow()))
          this.release('');
        return;
      case 'speech_partial':
        this.partial = event.text;
        // The interim transcript decides, not the mere sound of a voice.
        this.disarm('barge_in');
        if (
          this.speaking &&
          !this.o.request.block_interruptions &&
          this.phase === 'conversation' &&
          isInterruption(event.text, this.o.request.interruption_threshold, this.sayingNow())
        ) {
          this.interrupt();
        }
        return;
      case 'speech': {
        // The agent's own voice came back on the line and was recognised (an echo the guard let
        // through): a voice that started over the agent and says a run of its words is no caller.
        // One word is not enough ("Hello?" said as the agent says "Hello"): the leg tells such an
        // echo by its sound once the guard has learnt the path (EchoGuard.explains).
        const heard = wordsOf(event.text);
        if (this.overAgent && heard.length >= 2 && echoesAgent(heard, this.sayingNow()))
          return this.onSpeech('', event);
        return this.onSpeech(event.text, event);
      }
      case 'tone':
        return this.onDetected(this.detector.observe(event), event.type);
      case 'answered_by':
        // The carrier's AMD: a greeting known to be over counts like the beep (leave the message now).
        return this.onDetected(this.detector.observe(event), event.messageEnded ? 'tone' : 'speech');
      case 'dtmf':
        await this.record('agent-action', `Caller pressed ${event.digit}`);
        return;
      case 'provider_failed':
        return this.onProviderFailed(event);
      case 'audio':
        return;
      case 'spoken':
        return this.onSpoken(event);
      case 'timer':
        if (event.live) {
          if (!event.live.armed) return;
          event.live.armed = false;
          this.timers.delete(event.name);
        }
        return this.onTimer(event.name);
      case 'reply':
        return this.onReply(event.turn, event.reply);
      case 'turn_failed':
        // The agent broke (not a model failure: agents turn those into a fallback line).
        if (event.turn === this.thinking) throw event.error;
        return;
      case 'answer_reading':
        return this.onAnswerReading(event.reading);
      case 'tool_done':
        this.toolRunning = false;
        // Let the tool's speech finish before saying what came back.
        if (this.speaking) this.toolResult = event;
        else await this.onToolDone(event);
        return;
    }
  }

  private async onSpeech(text: string, event: LegEvent): Promise<void> {
    this.theySpeaking = false;
    // The first words after greeting at the pause are the greeting the agent answered.
    const greeting = this.greetedAtPause;
    this.greetedAtPause = false;
    if (this.pendingKeys !== undefined && this.phase === 'ivr') {
      const keys = this.pendingKeys;
      this.pendingKeys = undefined;
      await this.pressKeys(keys);
    }
    this.disarm('barge_in');
    // A held utterance: cut by an interruption, resumed after a backchannel, a cough or a noise.
    this.release(text);
    await this.onSpeechWhileThinking(text);
    // An audio leg heard a voice but no words came of it (a cough, line noise): nothing to answer.
    if (text.trim() === '') {
      if (!this.speaking && this.phase === 'conversation' && this.heard.length === 0) this.arm('silence', SILENCE_MS);
      if (this.phase === 'ivr' && this.menuLines.length > 0) this.arm('menu_pause', MENU_PAUSE_MS);
      if (this.phase === 'voicemail') this.arm('voicemail_fallback', VOICEMAIL_FALLBACK_MS);
      return;
    }
    const kind = utteranceKind(text);
    // On a menu's line: the next menu, a hold message, a recording, or the person it handed over to.
    const line = this.phase === 'ivr' || this.phase === 'screener' ? menuLineKind(text) : undefined;
    const answer = this.detector.observe(event);
    // A voicemail's words are a recording's only when they make the verdict: a person says them
    // too ("I'm not available on Tuesday."), and the model reads a robot's lines as a machine's.
    const machine =
      this.reachedVoicemail ||
      ((this.phase === 'ivr' || this.phase === 'screener') && line !== 'person') ||
      kind === 'ivr' ||
      answer === 'voicemail' ||
      kind === 'screener';
    await this.record(machine ? 'robot' : 'user', text);
    await this.onDetected(answer, 'speech');
    this.readAnswer(event);
    // A machine just detected on this utterance: the rules above have handled it.
    if (answer === 'ivr' || answer === 'voicemail') return;
    if (answer === 'screener' && this.phase === 'conversation' && !this.o.inbound) return this.answerScreener(text);
    if (this.detector.pending) this.arm('detect_pause', AnswerDetector.PAUSE_MS);
    if (this.done || this.phase === 'ending') return;
    if (this.phase === 'voicemail') {
      // A long recorded preamble ("If this is an emergency, hang up and dial 911.") sounds like a
      // voicemail's greeting; options with keys after it make it a menu's.
      if (kind === 'ivr') return this.menuAfterAll();
      // No beep yet: act once the greeting has been followed by a pause.
      this.arm('voicemail_fallback', VOICEMAIL_FALLBACK_MS);
      return;
    }
    // A menu that starts after a long recorded greeting, once the first judgement was made (a
    // person, or nothing known): it is a menu all the same.
    if (this.phase === 'conversation' && kind === 'ivr' && !this.o.inbound) return this.menuAfterAll();
    if (this.phase === 'screener') {
      // The screener's own words ("Thanks, one moment, please.") are waited through in silence.
      if (line !== 'person') return;
      // The person it was screening for picked up: the agent greets them with the task, as one
      // who just answered (the note tells it so).
      this.phase = 'conversation';
      this.disarm('silence');
      await this.record('agent-action', PERSON_AFTER_SCREENER);
    }
    if (this.phase === 'ivr') {
      if (line !== 'person') return this.onMenuLine(text, line ?? 'menu');
      // A person took over from the menu: the agent answers them as one who just picked up
      // (the note tells it so), with the task.
      this.phase = 'conversation';
      this.menuLines = [];
      this.chosenMenu = '';
      this.disarm('menu_pause');
      await this.record('agent-action', PERSON_AFTER_MENU);
    }
    if (!this.greeted) {
      this.greet();
      return;
    }
    if (greeting) return;
    this.heard.push(text);
    // Said over our own words, or while they were being got ready (a "Hello?" as the greeting is
    // written): they will answer what we say, so that is waited for first (OVERLAP_ANSWER_MS).
    this.overlapped = this.speaking !== undefined || this.thinking !== undefined;
    if (!this.speaking) this.arm('respond', this.respondDelayMs());
  }

  /**
   * On an audio leg whose agent has a language model, the far end's first words are also read by
   * the model (who answered?); its reading comes back as an `answer_reading` event, weighed by the
   * detector under the cost rule. Asked once; stopped when the verdict is settled.
   */
  private readAnswer(event: LegEvent): void {
    const classify = this.o.agent.classifyAnswer?.bind(this.o.agent);
    if (!classify || this.reading || this.o.inbound || !hasInboundAudio(this.o.leg)) return;
    if (!this.detector.openAt(event.at)) return;
    const words = this.transcript
      .filter((t) => t.role === 'user' || t.role === 'robot')
      .map((t) => t.text)
      .join(' ');
    const controller = new AbortController();
    this.reading = controller;
    void classify(words, controller.signal).then(
      (reading) => {
        if (!controller.signal.aborted) this.events.push({ type: 'answer_reading', reading });
      },
      () => undefined,
    );
  }

  /** Records which evidence decided who answered, when the language model took part. */
  private async noteEvidence(): Promise<void> {
    const evidence = this.detector.modelEvidence;
    if (!evidence || evidence === this.evidenceNoted) return;
    this.evidenceNoted = evidence;
    await this.record('agent-action', `Who answered, decided by ${evidence}`);
  }

  /** The model's reading of who answered: evidence for the detector, recorded when it counted. */
  private async onAnswerReading(reading: AnswerReading | undefined): Promise<void> {
    if (!reading || this.done || this.phase === 'ending') return;
    const answer = this.detector.modelSaid(reading, this.o.clock.now());
    await this.noteEvidence();
    if (answer === 'screener' && this.phase === 'conversation') {
      const prompt = this.transcript.filter((t) => t.role === 'user' || t.role === 'robot').at(-1)?.text ?? '';
      this.disarm('detect');
      return this.answerScreener(prompt);
    }
    await this.onDetected(answer, 'speech');
  }

  private async onDetected(answer: Answerer | undefined, via: 'speech' | 'tone'): Promise<void> {
    // A settled verdict needs no reading of the model any more.
    if (answer !== undefined && !this.detector.openAt(this.o.clock.now())) this.reading?.abort();
    if (answer !== undefined) await this.noteEvidence();
    if (answer === undefined) {
      if (via === 'tone' && this.phase === 'voicemail') await this.onVoicemailReady();
      return;
    }
    this.disarm('detect');
    if (answer === 'voicemail') {
      this.reachedVoicemail = true;
      this.phase = 'voicemail';
      this.cancelTurn({});
      this.heard = [];
      this.disarm('respond');
      this.disarm('silence');
      // Stop talking over the greeting; the message is left after the beep.
      this.speaking?.abort();
      if (via === 'tone') await this.onVoicemailReady();
      else this.arm('voicemail_fallback', VOICEMAIL_FALLBACK_MS);
      return;
    }
    if (answer === 'ivr') {
      const decision = decideVoicemail('ivr', this.voicemailSettings());
      await this.record('agent-action', `IVR detected (rule ${decision.rule}): ${decision.action}`);
      this.cancelTurn({});
      this.speaking?.abort();
      this.heard = [];
      this.disarm('respond');
      if (decision.action === 'continue') {
        this.phase = decision.navigate ? 'ivr' : 'conversation';
        if (decision.navigate) {
          const menu = this.transcript.filter((t) => t.role === 'robot').at(-1)?.text ?? '';
          if (isMenu(menu)) await this.onMenuLine(menu, 'menu');
        } else {
          this.heard.push(this.transcript.at(-1)?.text ?? '');
          this.arm('respond', this.respondDelayMs());
        }
      } else if (decision.action === 'leave_message_and_end') {
        await this.leaveMessage(decision.message);
      } else {
        await this.end();
      }
    }
  }

  /**
   * A call screener ("Please say your name and why you are calling."): not a voicemail, so no
   * voicemail rule applies and nobody hangs up. The agent stops whatever it was saying, answers the
   * prompt (who is calling and why: the agent's reply to what the screener asked), and waits for
   * the person, saying nothing to the screener's hold lines.
   */
  private async answerScreener(prompt: string): Promise<void> {
    this.phase = 'screener';
    this.greeted = true;
    this.greetedAtPause = false;
    this.cancelTurn({});
    this.speaking?.abort();
    this.heard = [];
    this.disarm('respond');
    this.disarm('silence');
    await this.record(
      'agent-action',
      'Call screener detected: saying who is calling and why, then waiting for the person',
    );
    this.startTurn({ kind: 'heard', text: prompt });
  }

  /**
   * Options with keys came after the first judgement of who answered (a voicemail's greeting, a
   * person, or nothing known): it is a menu, and the IVR rules apply.
   */
  private async menuAfterAll(): Promise<void> {
    this.reachedVoicemail = false;
    this.heardMenu = true;
    this.disarm('voicemail_fallback');
    await this.onDetected('ivr', 'speech');
  }

  /**
   * One line heard while navigating a menu. Menu lines are collected until the menu is complete
   * (a pause after an option, an offer to repeat, the menu starting over, or a prompt to enter
   * digits), then the agent chooses once. Hold messages and recordings are waited through in
   * silence: the agent neither talks nor hangs up.
   */
  private async onMenuLine(text: string, kind: MenuLineKind): Promise<void> {
    // The menu already chosen from, said again (the agent chose while it started over, or nothing
    // fitted): choosing again would press a second key for the same menu.
    const again = kind === 'menu' && this.chosenMenu !== '' && repeatsMenu(this.chosenMenu, text);
    if (kind !== 'menu' || again) {
      if (this.menuLines.length > 0) this.arm('menu_pause', MENU_PAUSE_MS);
      return;
    }
    // The menu starts over without a pause long enough to tell: what came before is all of it.
    if (this.menuLines.length > 0 && repeatsMenu(this.menuLines.join(' '), text)) return this.decideMenu();
    this.menuLines.push(text);
    const menu = parseMenu(this.menuLines.join(' '));
    const line = parseMenu(text);
    const complete = line.entry !== undefined || (line.offersRepeat && menu.options.some((o) => !o.navigation));
    if (complete) return this.decideMenu();
    this.arm('menu_pause', MENU_PAUSE_MS);
  }

  /** The menu is complete: the agent chooses once, from all of it. */
  private decideMenu(): void {
    this.disarm('menu_pause');
    const text = this.menuLines.join(' ');
    this.menuLines = [];
    if (text === '' || this.done) return;
    this.chosenMenu = text;
    this.startTurn({ kind: 'ivr_menu', text });
  }

  /** The beep sounded (or the greeting ended and a pause followed): apply the voicemail rules. */
  private async onVoicemailReady(): Promise<void> {
    if (this.phase !== 'voicemail') return;
    this.disarm('voicemail_fallback');
    const decision = decideVoicemail('voicemail', this.voicemailSettings());
    if (decision.action === 'leave_message_and_end') {
      await this.record('agent-action', 'Voicemail detected: leaving a message');
      await this.leaveMessage(decision.message);
    } else {
      await this.record('agent-action', 'Voicemail detected: hanging up');
      await this.end();
    }
  }

  private async leaveMessage(message: string): Promise<void> {
    this.phase = 'ending';
    this.say(renderSpoken(message, this.o.variables), 'hangup');
  }

  private voicemailSettings() {
    const r = this.o.request;
    return { voicemail_message: r.voicemail_message, voicemail_action: r.voicemail_action, amd: r.answered_by_enabled };
  }

  private async onSpoken(spoken: Extract<Internal, { type: 'spoken' }>): Promise<void> {
    // A streamed reply's action is known once the model has finished: it was noted by act().
    const streamedThen = this.streamedThen.get(spoken.by);
    this.streamedThen.delete(spoken.by);
    const event = streamedThen === undefined ? spoken : { ...spoken, then: streamedThen };
    const current = this.speaking === event.by;
    if (current) this.speaking = undefined;
    this.lastSaid = { text: mayEcho(event.text, event.result.played), at: this.o.clock.now().getTime() };
    // The first sentence said at the pause was cut by their greeting going on: that greeting is
    // answered as any words are, or nobody would speak.
    if (event.result.interrupted && this.greetedAtPause) this.greetedAtPause = false;
    const played = event.result.played.trim();
    // A streamed reply cut while the agent still writes it: the rest is not wanted (if nothing of
    // it was heard, what the caller said before is answered together with what they say now).
    if (event.result.interrupted && this.thinking?.speech === event.by) this.cancelTurn({ merge: played === '' });
    if (played)
      await this.record(
        'assistant',
        event.result.interrupted && played !== event.text.trim() ? `${played}...` : played,
      );
    // A turn replaced by a newer one (or cut by the end of the call) carries out nothing more.
    if (this.done || !current) return;
    if (this.toolResult && this.phase === 'conversation') {
      const result = this.toolResult;
      this.toolResult = null;
      return this.onToolDone(result);
    }
    // A forced finish ends the call even when its goodbye is talked over (a language model that
    // gave up must not be asked again and again); an ordinary goodbye talked over listens first.
    const finishing = event.then === 'hangup' || (event.then?.type === 'finish' && event.then.force === true);
    if (event.result.interrupted && !finishing && this.phase !== 'ending') {
      // Barged in on: listen to what they say instead of carrying out the rest of the turn. Their
      // words may be in already (the end of their turn came before this event): answer them, or
      // the call would wait forever.
      if (this.heard.length > 0 && !this.theySpeaking) this.arm('respond', this.respondDelayMs());
      return;
    }
    if (event.then === 'hangup') return this.end();
    if (event.then) return this.perform(event.then);
    if (this.heard.length > 0 && !this.theySpeaking)
      this.arm('respond', this.overlapped ? OVERLAP_ANSWER_MS : this.respondDelayMs());
    // A screener puts the person through in its own time: the agent waits longer before asking.
    else this.arm('silence', this.phase === 'screener' ? SCREENER_WAIT_MS : SILENCE_MS);
  }

  private async onTimer(name: Extract<Internal, { type: 'timer' }>['name']): Promise<void> {
    switch (name) {
      case 'user_line':
        return this.writeLine();
      case 'respond': {
        if (this.toolRunning || this.toolResult || this.thinking) return;
        if (this.speaking || this.heard.length === 0 || this.phase !== 'conversation') return;
        const text = this.heard.join(' ');
        this.heard = [];
        this.overlapped = false;
        this.silences = 0;
        return this.startTurn({ kind: 'heard', text });
      }
      case 'silence': {
        if (this.toolRunning || this.toolResult || this.thinking) return;
        // Nobody came after the screener: the agent asks whether anyone is there, as in a conversation.
        if (this.phase === 'screener' && !this.speaking && !this.theySpeaking) this.phase = 'conversation';
        if (this.speaking || this.theySpeaking || this.phase !== 'conversation') return;
        if (this.heard.length > 0) {
          const text = this.heard.join(' ');
          this.heard = [];
          return this.startTurn({ kind: 'heard', text });
        }
        this.silences++;
        return this.startTurn({ kind: 'silence', silentMs: SILENCE_MS * this.silences, times: this.silences });
      }
      case 'barge_in':
        // Only a voice that held the agent all along: one that stopped with no words let it go on
        // (a cough, or its own echo heard before the guard learnt its path), and does not cut it later.
        if (this.theySpeaking && this.speaking && this.held === this.speaking) this.interrupt();
        return;
      case 'hold':
        // Their voice started and then nothing came of it: the agent goes on where it stopped.
        if (!this.theySpeaking) this.release('');
        return;
      case 'detect':
        return this.onDetected(this.detector.timeout(), 'speech');
      case 'detect_pause':
        return this.onDetected(this.detector.confirmPause(), 'speech');
      case 'voicemail_fallback':
        return this.onVoicemailReady();
      case 'greeting_wait':
        this.greet();
        return;
      case 'menu_pause':
        if (this.phase === 'ivr' && !this.theySpeaking) this.decideMenu();
        return;
    }
  }

  private async perform(action: AgentAction): Promise<void> {
    switch (action.type) {
      case 'finish':
        return this.end();
      case 'wait':
        this.arm('silence', SILENCE_MS * 3);
        return;
      case 'press_buttons': {
        const digits = action.digits.replace(/[^0-9*#w]/gi, '');
        // A menu that is speaking again: the keys wait for the end of its prompt.
        if (this.phase === 'ivr' && this.theySpeaking) {
          this.pendingKeys = digits;
          return;
        }
        return this.pressKeys(digits);
      }
      case 'transfer':
        return this.transfer(action.target);
      case 'tool':
        return this.startTool(action.name, action.input);
    }
  }

  private async pressKeys(digits: string): Promise<void> {
    await this.record('agent-action', `Pressed buttons: ${digits}`);
    await this.o.leg.sendDtmf(digits);
  }

  /**
   * Starts a custom tool without blocking the call: its `speech` (or a `speech` the agent put in
   * the input, seed 2.5) is said while it runs, and its result comes back as an event, so a
   * hangup, stop or max_duration is still handled meanwhile.
   */
  private async startTool(name: string, input: unknown): Promise<void> {
    const tool = findTool(this.o.request.tools, name);
    if (!tool) {
      const error = 'no such tool on this call';
      await this.noteTool(toolOutcomeNote(name, { ok: false, variables: {}, spokenResult: '', error }));
      return this.startTurn({ kind: 'tool_result', name, ok: false, result: {}, error });
    }
    await this.noteTool(toolCalledNote(tool.name, input));
    const dynamic =
      input && typeof input === 'object' && typeof (input as { speech?: unknown }).speech === 'string'
        ? (input as { speech: string }).speech
        : undefined;
    const speech = dynamic ?? (tool.speech ? renderSpoken(tool.speech, this.o.variables) : undefined);
    this.toolRunning = true;
    this.disarm('silence');
    this.disarm('respond');
    if (speech && speech.trim() !== '') this.say(speech, null);
    const run = this.o.runTool
      ? this.o.runTool(tool, input)
      : Promise.resolve<ToolResult>({
          ok: false,
          variables: {},
          spokenResult: '',
          error: 'custom tools are not available',
        });
    void run.then(
      (result) => this.events.push({ type: 'tool_done', tool, result }),
      (error: unknown) =>
        this.events.push({
          type: 'tool_done',
          tool,
          result: { ok: false, variables: {}, spokenResult: '', error: String(error) },
        }),
    );
  }

  /** A note of a tool's run: the transcript's line, and the same words as the call's `tool` event. */
  private async noteTool(text: string): Promise<void> {
    this.o.onToolNote?.(text);
    await this.record('agent-action', text);
  }

  /** Notes the outcome, merges the new variables into the call's, and lets the agent go on. */
  private async onToolDone(event: Extract<Internal, { type: 'tool_done' }>): Promise<void> {
    if (this.done || this.phase !== 'conversation') return;
    const { tool, result } = event;
    if (result.ok) Object.assign(this.o.variables, result.variables);
    await this.noteTool(toolOutcomeNote(tool.name, result));
    this.startTurn({
      kind: 'tool_result',
      name: tool.name,
      ok: result.ok,
      result: result.variables,
      ...(result.error !== null && { error: result.error }),
    });
  }

  /** transfer_list.default overrides transfer_phone_number; a label picks its own number. */
  private async transfer(target: string | undefined): Promise<void> {
    const r = this.o.request;
    const list = r.transfer_list ?? {};
    const number =
      (target && list[target]) ||
      (target && /^\+\d+$/.test(target) ? target : undefined) ||
      list.default ||
      r.transfer_phone_number;
    if (!number) {
      await this.record('agent-action', 'Transfer requested but no transfer number is configured');
      return;
    }
    await this.record('agent-action', `Transferring to ${number}`);
    // A carrier that bridges the call itself holds the transfer until the bridge ends: a stop
    // through the API, or max_duration, hangs it up meanwhile.
    const stopped = () => void this.o.leg.hangup();
    let limited = false;
    this.onLimit = () => {
      limited = true;
      stopped();
    };
    this.o.signal.addEventListener('abort', stopped);
    const result = await this.o.leg.transfer(number).finally(() => {
      this.o.signal.removeEventListener('abort', stopped);
      this.onLimit = undefined;
    });
    if (limited) {
      await this.record('agent-action', `Call ended: max_duration of ${this.o.request.max_duration} minutes reached`);
      if (!result.ok) {
        // Hung up while the target was still being reached: no transfer, and no failure either.
        this.endedBy = 'ASSISTANT';
        this.phase = 'ending';
        this.done = true;
        return;
      }
    }
    if (result.ok) {
      this.transferredTo = number;
      this.failedTransfer = null;
      this.endedBy = result.endedBy ?? 'ASSISTANT';
      this.phase = 'ending';
      this.done = true;
      return;
    }
    const failure = `Transfer to ${number} failed: ${result.reason}`;
    await this.record('agent-action', failure);
    if (result.resumed && !this.done) {
      // The caller is back on the line: the agent hears how the transfer went, as a tool's
      // result, and goes on with them.
      this.failedTransfer = failure;
      return this.startTurn({ kind: 'tool_result', name: 'transfer', ok: false, result: {}, error: result.reason });
    }
    this.error = failure;
    await this.end();
  }

  /**
   * A speech provider failed for good: the call ends with the failure as its error_message. When
   * the recogniser failed the agent can still speak, and says why it is hanging up.
   */
  private async onProviderFailed(event: Extract<LegEvent, { type: 'provider_failed' }>): Promise<void> {
    if (this.done || this.error) return;
    const what = event.kind === 'stt' ? 'Speech recognition' : 'Speech synthesis';
    this.error = `${what} failed (${event.provider}): ${event.message}`;
    await this.record('agent-action', this.error);
    if (event.kind === 'tts') return this.end();
    this.phase = 'ending';
    this.cancelTurn({ ended: true });
    this.say(CANNOT_HEAR_LINE, 'hangup');
  }

  private async end(): Promise<void> {
    if (this.done) return;
    this.phase = 'ending';
    this.endedBy = 'ASSISTANT';
    this.cancelTurn({ ended: true });
    this.speaking?.abort();
    await this.o.leg.hangup();
    this.done = true;
  }
}
