/**
 * The sandbox telephone network: a Carrier whose numbers are answered by personas (data files)
 * instead of phones. Calls ring, are answered or not, carry speech and keys both ways, transfer
 * and hang up on the injected clock, so the engine drives them exactly like real carrier legs.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { CallLeg, Carrier, DialRequest, DialResult, LegEvent, TransferResult } from '../types.js';
import { createLegPair, type LegPairOptions, type LegTiming, type SandboxLegEnd } from './leg-pair.js';
import { runPersona, type LineWriter, type PersonaSession } from './persona.js';
import { loadPersonas, type Persona, type PersonaSet } from './persona-format.js';
import {
  connectAudioCall,
  personaVoice,
  sandboxScheduler,
  wantsSandboxAudio,
  type AudioCallParts,
  type SandboxAudioOptions,
} from './audio.js';
import type { FrameScheduler } from '../../media/pacer.js';
import type { CallRequest } from '../../schemas/call-request.js';
import { espeakVoiceFor } from '../../providers/tts/espeak.js';

export interface CallLogEntry {
  at: Date;
  /** Who did it: 'agent' (our end), 'persona', 'transfer target', 'agent B', or 'network'. */
  by: string;
  kind:
    | 'dial'
    | 'answered'
    | 'no-answer'
    | 'busy'
    | 'failed'
    | 'speech'
    | 'dtmf'
    | 'tone'
    | 'hangup'
    | 'transfer'
    | 'recording'
    | 'persona'
    | 'sms'
    | 'audio'
    | 'error';
  /** The words, the digit, the tone, the reason or the number, as fits the kind. */
  text?: string;
}

export interface TransferRecord {
  callId: string;
  at: Date;
  to: string;
  /** The persona that was dialed for the transfer. */
  personaId: string;
  result: TransferResult;
}

export interface SandboxCall {
  callId: string;
  direction: 'outbound' | 'inbound' | 'agents';
  from: string | null;
  to: string | null;
  /** What happened on the call, oldest first; the oldest entries go once the log is full. */
  readonly log: CallLogEntry[];
  droppedLogEntries: number;
  /** The persona at the far end, if any. */
  remote?: PersonaSession;
  /** The persona that answered a transfer, if any. */
  transferTarget?: PersonaSession;
  /** Our end of the line (the engine's leg). */
  leg?: SandboxLegEnd;
  /** Audio mode: both ends of the audio line (docs/sandbox.md, "Audio mode"). */
  audio?: AudioCallParts;
}

export interface SandboxNetworkOptions {
  clock: Clock;
  /** Personas to use; default: the built-in ones plus those of `personaDirs`. */
  personas?: PersonaSet;
  /** Extra persona directories, loaded after the built-in personas (ignored with `personas`). */
  personaDirs?: string[];
  /** How long a transfer target may ring before the transfer fails. Default 30000. */
  transferRingTimeoutMs?: number;
  /** Calls whose logs are kept; the oldest go first. Default 200. */
  maxCalls?: number;
  /** Log entries kept per call. Default 1000. */
  maxLogEntries?: number;
  /** Line timing (speaking rate, DTMF lengths). Default: DEFAULT_TIMING. */
  timing?: Partial<LegTiming>;
  /** Audio mode: on for every call (`enabled`) or for calls that opt in; voices, VAD, pacing. */
  audio?: SandboxAudioOptions;
}

/** Time the network takes to report a busy line or an unreachable area. */
const BUSY_AFTER_MS = 1500;
const UNREACHABLE_AFTER_MS = 800;

/**
 * Callers placed on numbers at run time (an agent test run's scripted caller): the persona that
 * answers `number`, or undefined to leave it to the persona files.
 */
export type CallerLookup = (number: string) => Promise<Persona | undefined>;

type RingOutcome =
  { status: 'answered' } | { status: 'no-answer' } | { status: 'busy' } | { status: 'failed'; reason: string };

/** Why a transfer target that did not answer was not reached. */
function failedTransfer(outcome: Exclude<RingOutcome, { status: 'answered' }>): string {
  if (outcome.status === 'failed') return outcome.reason;
  return outcome.status === 'busy' ? 'The transfer target is busy' : 'The transfer target did not answer';
}

export class SandboxNetwork implements Carrier {
  /**
   * Calls that name no `from` come from the sandbox's own numbers, +1 415 555-1200..1209 (outside
   * the personas' 555-01XX and the numbers sold at 555-0200..0999), one per call id.
   */
  async callerId(request: DialRequest): Promise<string | null> {
    if (request.from) return request.from;
    let hash = 0;
    for (const char of request.callId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
    return `+1415555120${hash % 10}`;
  }

  readonly name = 'sandbox';
  readonly personas: PersonaSet;
  /** Every transfer asked on this network, oldest first (bounded like the call logs). */
  readonly transfers: TransferRecord[] = [];
  private readonly clock: Clock;
  private readonly calls = new Map<string, SandboxCall>();
  private readonly maxCalls: number;
  private readonly maxLogEntries: number;
  private readonly transferRingTimeoutMs: number;
  private readonly timing: Partial<LegTiming>;
  private readonly audio: SandboxAudioOptions;
  private scheduler: FrameScheduler | undefined;
  private readonly lineWriters = new Map<string, LineWriter>();
  private callers: CallerLookup | undefined;

  constructor(options: SandboxNetworkOptions) {
    this.clock = options.clock;
    this.personas = options.personas ?? loadPersonas(options.personaDirs ?? []);
    this.maxCalls = options.maxCalls ?? 200;
    this.maxLogEntries = options.maxLogEntries ?? 1000;
    this.transferRingTimeoutMs = options.transferRingTimeoutMs ?? 30_000;
    this.timing = options.timing ?? {};
    this.audio = options.audio ?? {};
  }

  /** Asks `lookup` first for the persona of every dialed number (callers registered at run time). */
  useCallers(lookup: CallerLookup): void {
    this.callers = lookup;
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const call = this.openCall(request.callId, 'outbound', request.from, request.to);
    const persona = (await this.callers?.(request.to)) ?? this.personas.forNumber(request.to);
    this.note(call, 'network', 'dial', `${request.to} (${persona.id})`);
    const outcome = await this.ring(persona, request.ringTimeoutMs, request.signal);
    if (outcome.status !== 'answered') {
      this.note(call, 'network', outcome.status, outcome.status === 'failed' ? outcome.reason : undefined);
      return outcome;
    }
    this.note(call, 'network', 'answered', persona.id);
    if (this.audio.enabled || wantsSandboxAudio(request.request)) {
      return { status: 'answered', leg: this.connectAudio(call, persona, request.request) };
    }
    return { status: 'answered', leg: this.connect(call, persona, ['agent', 'persona']) };
  }

  /** An inbound call: `from`'s persona calls us; returns our end of the line. */
  connectInbound(call: { from: string; to: string; callId?: string }): CallLeg {
    const record = this.openCall(call.callId ?? randomUUID(), 'inbound', call.from, call.to);
    let persona: Persona = this.personas.forNumber(call.from);
    // A number that never answers outbound still places calls: its caller is the default person.
    if (!persona.start) persona = this.personas.forNumber('');
    // A caller with a purpose: the persona's inbound start (waits for the agent's greeting, then asks).
    if (persona.inboundStart) persona = { ...persona, start: persona.inboundStart };
    this.note(record, 'network', 'answered', persona.id);
    // Audio mode: the caller speaks audio; our end has the default voice settings.
    if (this.audio.enabled) return this.connectAudio(record, persona, undefined);
    return this.connect(record, persona, ['agent', 'persona']);
  }

  /** A call between two agents (two numbers of one account): both ends are engine legs. */
  connectAgents(call: { callId?: string; from?: string; to?: string } = {}): [CallLeg, CallLeg] {
    const record = this.openCall(call.callId ?? randomUUID(), 'agents', call.from ?? null, call.to ?? null);
    const { a, b } = createLegPair(this.clock, this.lineOptions(record, ['agent', 'agent B']));
    record.leg = a;
    this.note(record, 'network', 'answered');
    return [a, b];
  }

  /**
   * A text message sent during a call (a pathway's SMS node). The sandbox delivers nothing: it
   * notes the message in the call's log (`kind: 'sms'`, text `to <number>: <body>`).
   */
  sendSms(message: { callId: string; to: string; body: string }): { ok: true } | { ok: false; reason: string } {
    const call = this.calls.get(message.callId);
    if (!call) return { ok: false, reason: 'the call is not on the sandbox network' };
    this.note(call, 'agent', 'sms', `to ${message.to}: ${message.body}`);
    return { ok: true };
  }

  /**
   * Sets the program that writes the lines of a persona's `improvise` steps (a caller driven by a
   * language model); returns a function that removes it.
   */
  setLineWriter(personaId: string, writer: LineWriter): () => void {
    this.lineWriters.set(personaId, writer);
    return () => {
      if (this.lineWriters.get(personaId) === writer) this.lineWriters.delete(personaId);
    };
  }

  /** The record of a call (its log, the persona sessions), while it is among the kept calls. */
  call(callId: string): SandboxCall | undefined {
    return this.calls.get(callId);
  }

  /** Drops every call still up (both ends hear a `network` hangup) and stops the personas. */
  close(): void {
    for (const call of this.calls.values()) {
      call.leg?.drop();
      call.audio?.drop();
      call.remote?.stop();
      call.transferTarget?.stop();
    }
  }

  private openCall(callId: string, direction: SandboxCall['direction'], from: string | null, to: string | null) {
    const call: SandboxCall = { callId, direction, from, to, log: [], droppedLogEntries: 0 };
    this.calls.delete(callId);
    this.calls.set(callId, call);
    for (const oldest of this.calls.keys()) {
      if (this.calls.size <= this.maxCalls) break;
      this.calls.delete(oldest);
    }
    return call;
  }

  private note(call: SandboxCall, by: string, kind: CallLogEntry['kind'], text?: string): void {
    call.log.push({ at: this.clock.now(), by, kind, ...(text === undefined ? {} : { text }) });
    if (call.log.length > this.maxLogEntries) {
      call.log.shift();
      call.droppedLogEntries += 1;
    }
  }

  private lineOptions(call: SandboxCall, labels: [string, string]): LegPairOptions {
    return {
      ...this.timing,
      labels,
      observe: (from, event) => this.observe(call, from.label, event),
      onTransfer: (end, to) => this.transfer(call, end, to),
    };
  }

  private observe(call: SandboxCall, by: string, event: LegEvent): void {
    switch (event.type) {
      case 'speech':
        return this.note(call, by, 'speech', event.text);
      case 'dtmf':
        return this.note(call, by, 'dtmf', event.digit);
      case 'tone':
        return this.note(call, by, 'tone', `${event.frequencyHz} Hz, ${event.durationMs} ms`);
      case 'hangup':
        return this.note(call, by, 'hangup');
      default:
        return;
    }
  }

  /** Opens a line for `call` with `persona` driving the far end; returns our end. */
  /** Audio mode: our end is an audio leg, the persona speaks and hears audio (src/carriers/sandbox/audio.ts). */
  private connectAudio(call: SandboxCall, persona: Persona, request: CallRequest | undefined): CallLeg {
    this.scheduler ??= this.audio.scheduler ?? sandboxScheduler(this.clock);
    const parts = connectAudioCall({
      clock: this.clock,
      callId: call.callId,
      request,
      persona,
      options: this.audio,
      scheduler: this.scheduler,
      note: (by, kind, text) => this.note(call, by, kind, text),
      transfer: (to) => this.transferAudio(call, to),
    });
    call.audio = parts;
    this.note(call, 'network', 'audio', personaVoice(persona));
    const session = runPersona(parts.persona, persona, {
      clock: this.clock,
      resolve: (id) => this.personas.get(id),
      lineWriter: (id) => this.lineWriters.get(id),
      note: (kind, text) => {
        // A persona handing over (`become`): the new one speaks with its own voice.
        const next = kind === 'persona' && text ? this.personas.get(text) : undefined;
        if (next) parts.persona.setVoice(espeakVoiceFor(personaVoice(next), request?.language ?? 'en-US'));
        this.note(call, 'persona', kind, text);
      },
    });
    session.done.catch((error: unknown) => this.note(call, 'persona', 'error', (error as Error).message));
    call.remote = session;
    return parts.leg;
  }

  /**
   * A transfer asked by our audio leg: the network dials `to`'s persona; if it answers, the caller
   * is handed to it (off our line, which then closes) and our end is done; if not, the caller is
   * still on the line with the agent (`resumed`).
   */
  private async transferAudio(call: SandboxCall, to: string): Promise<TransferResult> {
    const persona = this.personas.forNumber(to);
    this.note(call, 'agent', 'transfer', `${to} (${persona.id})`);
    const hungUp = new AbortController();
    const abort = () => hungUp.abort();
    void call.remote?.done.then(abort, abort);
    const outcome = await this.ring(persona, this.transferRingTimeoutMs, hungUp.signal);
    const result: TransferResult = hungUp.signal.aborted
      ? { ok: false, reason: 'The call ended before the transfer completed' }
      : outcome.status === 'answered'
        ? { ok: true }
        : { ok: false, reason: failedTransfer(outcome), resumed: true };
    this.transfers.push({ callId: call.callId, at: this.clock.now(), to, personaId: persona.id, result });
    if (this.transfers.length > this.maxCalls) this.transfers.shift();
    this.note(call, 'network', 'transfer', result.ok ? `connected to ${to}` : `failed: ${result.reason}`);
    if (result.ok) {
      call.remote?.stop();
      call.audio?.drop();
    }
    return result;
  }

  private connect(call: SandboxCall, persona: Persona, labels: [string, string]): SandboxLegEnd {
    const { a, b } = createLegPair(this.clock, this.lineOptions(call, labels));
    call.leg = a;
    call.remote = this.startPersona(call, b, persona);
    return a;
  }

  private startPersona(call: SandboxCall, end: SandboxLegEnd, persona: Persona): PersonaSession {
    const session = runPersona(end, persona, {
      clock: this.clock,
      resolve: (id) => this.personas.get(id),
      lineWriter: (id) => this.lineWriters.get(id),
      note: (kind, text) => this.note(call, end.label, kind, text),
    });
    session.done.catch((error: unknown) => this.note(call, end.label, 'error', (error as Error).message));
    return session;
  }

  /** Rings `persona` until it answers, gives up, or `signal` aborts (which counts as no answer). */
  private async ring(persona: Persona, timeoutMs: number, signal: AbortSignal): Promise<RingOutcome> {
    const ring = persona.ring;
    const [waitMs, outcome]: [number, RingOutcome] =
      ring.kind === 'answer'
        ? ring.afterMs <= timeoutMs
          ? [ring.afterMs, { status: 'answered' }]
          : [timeoutMs, { status: 'no-answer' }]
        : ring.kind === 'no-answer'
          ? [Math.min(ring.ringMs, timeoutMs), { status: 'no-answer' }]
          : ring.kind === 'busy'
            ? [BUSY_AFTER_MS, { status: 'busy' }]
            : [UNREACHABLE_AFTER_MS, { status: 'failed', reason: ring.reason }];
    try {
      await this.clock.sleep(waitMs, signal);
    } catch {
      return { status: 'no-answer' };
    }
    return outcome;
  }

  /**
   * Our end asks to hand the far end to `to`: the network dials `to`'s persona; if it answers,
   * the far end is connected to it and our end is done; if not, the far end is still on the line
   * with ours (`resumed`).
   */
  private async transfer(call: SandboxCall, end: SandboxLegEnd, to: string): Promise<TransferResult> {
    const persona = this.personas.forNumber(to);
    this.note(call, end.label, 'transfer', `${to} (${persona.id})`);
    const hungUp = new AbortController();
    void end.closed.then(() => hungUp.abort());
    const outcome = await this.ring(persona, this.transferRingTimeoutMs, hungUp.signal);
    const far = end.far;
    let result: TransferResult;
    if (end.finished || !far || far.finished) {
      result = { ok: false, reason: 'The call ended before the transfer completed' };
    } else if (outcome.status === 'answered') {
      result = { ok: true };
    } else {
      result = { ok: false, reason: failedTransfer(outcome), resumed: true };
    }
    this.transfers.push({ callId: call.callId, at: this.clock.now(), to, personaId: persona.id, result });
    if (this.transfers.length > this.maxCalls) this.transfers.shift();
    this.note(call, 'network', 'transfer', result.ok ? `connected to ${to}` : `failed: ${result.reason}`);
    if (result.ok && far) {
      const target = far.rebind('transfer target');
      call.transferTarget = this.startPersona(call, target, persona);
    }
    return result;
  }
}
