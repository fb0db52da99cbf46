/**
 * Drives the far end of a sandbox line from persona data: says lines, listens, matches what it
 * hears to replies, follows key menus, beeps, records, and hangs up, all on the line's clock.
 */
import type { Clock } from '../../clock.js';
import type { LegEvent } from '../types.js';
import type { PersonaLine } from './leg-pair.js';
import type { Listen, Persona, Rule, Step } from './persona-format.js';

export interface PersonaSession {
  /** The persona on the line now (another one after a `become`). */
  readonly persona: Persona;
  /** What the other side said during `record` steps, in order. */
  readonly recording: readonly string[];
  /** Utterances heard by listening steps since the current persona took over. */
  readonly exchanges: number;
  /** What was said on the line, both ways, in order (utterances; keys and tones are left out). */
  readonly conversation: readonly ConversationLine[];
  /** Settles when the persona is done: it hung up, was hung up on, or was stopped. */
  readonly done: Promise<void>;
  /** Stops driving the line (the line itself is left as it is). */
  stop(): void;
}

/** One line of a sandbox call as a persona lived it: said by the persona, or heard from the other side. */
export interface ConversationLine {
  by: 'persona' | 'other';
  text: string;
}

/** What a line writer answers: the line to say, and whether to hang up (after saying it). */
export interface WrittenLine {
  say?: string;
  hangup?: boolean;
}

/**
 * Writes an `improvise` step's line from the conversation so far (a caller driven by a language
 * model). `signal` aborts when the line closes.
 */
export type LineWriter = (request: {
  persona: Persona;
  conversation: readonly ConversationLine[];
  signal: AbortSignal;
}) => Promise<WrittenLine>;

export interface PersonaRunOptions {
  clock: Clock;
  /** Resolves `become` targets by persona id (validated when the personas were loaded). */
  resolve: (id: string) => Persona | undefined;
  /** Told about what the persona records and about persona changes, for call logs. */
  note?: (kind: 'recording' | 'persona', text: string) => void;
  /** The line writer of a persona id, for `improvise` steps. */
  lineWriter?: (personaId: string) => LineWriter | undefined;
}

type Flow =
  { kind: 'next' } | { kind: 'goto'; state: string } | { kind: 'become'; id: string; state?: string } | { kind: 'end' };

const NEXT: Flow = { kind: 'next' };
const END: Flow = { kind: 'end' };

/** Thrown through the running steps when the line is gone. */
class Stopped extends Error {}

/** Heard input a persona reacts to; audio frames and our own tones are not among them. */
type Heard = Extract<LegEvent, { type: 'speech_start' | 'speech' | 'dtmf' | 'tone' }>;

/** State changes in a row without any waiting step: more means a loop that would spin forever. */
const MAX_TRANSITIONS_WITHOUT_WAITING = 100;

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const compiled = new WeakMap<Rule, { keywords?: RegExp; regex?: RegExp }>();

function patterns(rule: Rule): { keywords?: RegExp; regex?: RegExp } {
  let found = compiled.get(rule);
  if (!found) {
    found = {
      // Whole words only, so that "bye" does not fire inside "byelaw".
      keywords: rule.keywords
        ? new RegExp(`(?<![\\p{L}\\p{N}])(?:${rule.keywords.map(escapeRegex).join('|')})(?![\\p{L}\\p{N}])`, 'iu')
        : undefined,
      regex: rule.regex !== undefined ? new RegExp(rule.regex, 'i') : undefined,
    };
    compiled.set(rule, found);
  }
  return found;
}

/** Whether `rule` reacts to `event`; `exchanges` counts utterances including this one. */
export function ruleMatches(rule: Rule, event: Heard, exchanges: number): boolean {
  if (event.type === 'speech_start') return rule.speechStart === true;
  if (event.type === 'dtmf') return rule.digits !== undefined && rule.digits.includes(event.digit);
  if (event.type !== 'speech') return false;
  const speechTrigger =
    rule.keywords !== undefined || rule.regex !== undefined || rule.any === true || rule.exchangesAtLeast !== undefined;
  if (!speechTrigger) return false;
  const { keywords, regex } = patterns(rule);
  if (keywords && !keywords.test(event.text)) return false;
  if (regex && !regex.test(event.text)) return false;
  return rule.exchangesAtLeast === undefined || exchanges >= rule.exchangesAtLeast;
}

class PersonaRunner implements PersonaSession {
  persona: Persona;
  readonly recording: string[] = [];
  exchanges = 0;
  readonly conversation: ConversationLine[] = [];
  readonly done: Promise<void>;
  private readonly stopped = new AbortController();
  private readonly inbox: Heard[] = [];
  private wake: (() => void) | null = null;
  /** Which line of a multi-line `say` comes next, per step. */
  private readonly lineIndex = new WeakMap<Step, number>();
  private transitions = 0;

  constructor(
    private readonly leg: PersonaLine,
    persona: Persona,
    private readonly options: PersonaRunOptions,
  ) {
    this.persona = persona;
    leg.on((event) => this.hear(event));
    void leg.closed.then(() => this.stop());
    this.done = this.run();
  }

  stop(): void {
    this.stopped.abort(new Stopped('line closed'));
    this.wake?.();
  }

  private hear(event: LegEvent): void {
    if (event.type === 'hangup') return this.stop();
    // Personas react to whole utterances; interim transcripts are for the engine's barge-in.
    // The carrier's answering-machine verdict is the engine's business, not something a person hears.
    if (
      event.type === 'audio' ||
      event.type === 'speech_partial' ||
      event.type === 'speech_paused' ||
      event.type === 'answered_by' ||
      event.type === 'provider_failed'
    )
      return;
    if (event.type === 'speech') {
      // Once an utterance is complete, its start is no longer something to talk over.
      const pending = this.inbox.findIndex((e) => e.type === 'speech_start');
      if (pending >= 0) this.inbox.splice(pending, 1);
      if (event.text.trim() === '') return;
      this.conversation.push({ by: 'other', text: event.text });
    }
    this.inbox.push(event);
    this.wake?.();
  }

  private async run(): Promise<void> {
    let state = this.persona.start;
    try {
      while (state !== undefined) {
        const flow = await this.runSteps(this.persona.states?.[state] ?? []);
        if (flow.kind === 'end') return;
        if (flow.kind === 'next') break;
        if (++this.transitions > MAX_TRANSITIONS_WITHOUT_WAITING) {
          throw new Error(`persona ${this.persona.id} moves between states without ever waiting`);
        }
        if (flow.kind === 'goto') {
          state = flow.state;
        } else {
          this.persona = this.options.resolve(flow.id) ?? this.persona;
          this.exchanges = 0;
          this.options.note?.('persona', this.persona.id);
          state = flow.state ?? this.persona.start;
        }
      }
      // A persona that runs out of steps stays on the line, silent, until the other side hangs up.
      await this.waitUntilStopped();
    } catch (error) {
      if (error instanceof Stopped || this.stopped.signal.aborted) return;
      // A broken persona must not leave a call hanging forever.
      await this.leg.hangup();
      throw error;
    }
  }

  private waitUntilStopped(): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped.signal.aborted) return resolve();
      this.stopped.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  /** Runs `steps`; `after` are the lists that follow them when they run out (a repeat's, its parent's). */
  private async runSteps(steps: Step[], after: readonly Step[][] = []): Promise<Flow> {
    for (const [i, step] of steps.entries()) {
      const flow = await this.runStep(step, [steps.slice(i + 1), ...after]);
      if (flow.kind !== 'next') return flow;
    }
    return NEXT;
  }

  private async runStep(step: Step, rest: readonly Step[][]): Promise<Flow> {
    this.checkStopped();
    if ('say' in step) {
      const text = this.line(step, step.say);
      const next = this.upcoming(rest);
      if (next !== undefined) this.leg.prepare?.(next);
      await this.speak(text);
      return this.waited();
    }
    if ('improvise' in step) return this.improvise();
    if ('pause' in step) {
      await this.sleep(step.pause);
      return this.waited();
    }
    if ('tone' in step) {
      await this.leg.playTone(step.tone.frequencyHz, step.tone.durationMs);
      return this.waited();
    }
    if ('listen' in step) return this.listen(step.listen, rest);
    if ('record' in step) {
      await this.record(step.record.silenceTimeoutMs, step.record.maxMs);
      return this.waited();
    }
    if ('repeat' in step) {
      for (let i = 0; i < step.repeat.times; i++) {
        const again = i + 1 < step.repeat.times ? [step.repeat.steps] : [];
        const flow = await this.runSteps(step.repeat.steps, [...again, ...rest]);
        if (flow.kind !== 'next') return flow;
      }
      return NEXT;
    }
    if ('goto' in step) return { kind: 'goto', state: step.goto };
    if ('become' in step) return { kind: 'become', id: step.become, state: step.state };
    await this.leg.hangup();
    return END;
  }

  private async speak(text: string): Promise<void> {
    this.conversation.push({ by: 'persona', text });
    await this.leg.speak(text);
  }

  private async improvise(): Promise<Flow> {
    const writer = this.options.lineWriter?.(this.persona.id);
    if (!writer) throw new Error(`persona ${this.persona.id} improvises, but no line writer is set for it`);
    const written = await writer({
      persona: this.persona,
      conversation: [...this.conversation],
      signal: this.stopped.signal,
    });
    this.checkStopped();
    if (written.say && written.say.trim() !== '') await this.speak(written.say.trim());
    if (written.hangup) {
      await this.leg.hangup();
      return END;
    }
    return this.waited();
  }

  private line(step: Step, say: string | string[]): string {
    const text = this.peekLine(step, say);
    if (typeof say !== 'string') this.lineIndex.set(step, (this.lineIndex.get(step) ?? 0) + 1);
    return text;
  }

  /** The words `step` says the next time it runs. */
  private peekLine(step: Step, say: string | string[]): string {
    if (typeof say === 'string') return say;
    return say[(this.lineIndex.get(step) ?? 0) % say.length] as string;
  }

  /**
   * The line the script says next, when only pauses and tones come before it in `lists` (the rest
   * of a list, then the lists that follow it); a listen or a branch makes what comes next unknown.
   */
  private upcoming(lists: readonly Step[][]): string | undefined {
    const [steps, ...later] = lists;
    if (steps === undefined) return undefined;
    for (const [i, step] of steps.entries()) {
      if ('say' in step) return this.peekLine(step, step.say);
      if ('repeat' in step) {
        if (step.repeat.times > 0) return this.upcoming([step.repeat.steps, steps.slice(i + 1), ...later]);
        continue;
      }
      if (!('pause' in step) && !('tone' in step)) return undefined;
    }
    return this.upcoming(later);
  }

  /** After a step that took time: the loop guard resets, and a hangup meanwhile ends the run. */
  private waited(): Flow {
    this.transitions = 0;
    this.checkStopped();
    return NEXT;
  }

  private async listen(listen: Listen, rest: readonly Step[][]): Promise<Flow> {
    const deadline = listen.timeoutMs === undefined ? undefined : this.now() + listen.timeoutMs;
    if (listen.fresh) this.inbox.length = 0;
    // The answer to words the other side went on from: a person answers a turn, not each sentence
    // of it, so what it said next is heard first, and this answer stands when that needs none.
    let held: Step[] | undefined;
    for (;;) {
      const event = await this.next(deadline);
      this.transitions = 0;
      if (!event) return this.runSteps(held ?? listen.timeout ?? [], rest);
      if (event.type === 'speech') this.exchanges += 1;
      const rule = (listen.on ?? []).find((r) => ruleMatches(r, event, this.exchanges));
      const reaction = rule?.do ?? (event.type === 'speech' ? (listen.otherwise ?? held) : undefined);
      if (!reaction) continue;
      await this.sleep(this.persona.replyDelayMs ?? 500);
      if (event.type === 'speech' && this.inbox.some((e) => e.type === 'speech_start' || e.type === 'speech')) {
        held = reaction;
        continue;
      }
      return this.runSteps(reaction, rest);
    }
  }

  private async record(silenceTimeoutMs: number, maxMs: number | undefined): Promise<void> {
    const end = maxMs === undefined ? Infinity : this.now() + maxMs;
    for (;;) {
      const event = await this.next(Math.min(end, this.now() + silenceTimeoutMs));
      if (!event) return;
      if (event.type === 'speech') {
        this.recording.push(event.text);
        this.options.note?.('recording', event.text);
      }
    }
  }

  /** The next heard event, or null when `deadline` (clock ms) passes first. */
  private async next(deadline: number | undefined): Promise<Heard | null> {
    for (;;) {
      this.checkStopped();
      const event = this.inbox.shift();
      if (event) return event;
      const remaining = deadline === undefined ? undefined : deadline - this.now();
      if (remaining !== undefined && remaining <= 0) return null;
      await new Promise<void>((resolve) => {
        const cancel = remaining === undefined ? undefined : this.options.clock.setTimer(resolve, remaining);
        this.wake = () => {
          cancel?.();
          resolve();
        };
      });
      this.wake = null;
    }
  }

  private async sleep(ms: number): Promise<void> {
    if (ms <= 0) return;
    try {
      await this.options.clock.sleep(ms, this.stopped.signal);
    } catch {
      throw new Stopped('line closed');
    }
  }

  private checkStopped(): void {
    if (this.stopped.signal.aborted) throw new Stopped('line closed');
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }
}

/** Starts `persona` on `leg` (the far end of a line); it runs until the line ends. */
export function runPersona(leg: PersonaLine, persona: Persona, options: PersonaRunOptions): PersonaSession {
  return new PersonaRunner(leg, persona, options);
}
