import { EventEmitter } from 'node:events';
import type { Clock } from '../clock.js';
import { isEnded } from '../domain/call-state.js';
import type { Call } from '../store/calls.js';

/** The categories of a call's events (seed 6.2's webhook_events). */
export type CallEventCategory = 'queue' | 'call' | 'tool' | 'dynamic_data' | 'latency' | 'webhook';

/** One event of a call, as webhook_events streams it (seed 6.2) and GET /v1/calls/{id}/events sends it. */
export interface CallEvent {
  call_id: string;
  category: CallEventCategory;
  message: string;
  log_level: string;
  at: string;
}

/** A transcript line as the call's record stores it: who spoke (user, assistant, robot) and what. */
export interface TranscriptLine {
  call_id: string;
  user: 'user' | 'assistant' | 'robot';
  text: string;
  at: string;
}

/**
 * The events of the calls this process runs, for listeners in this process (the server-sent event
 * stream). Listeners of one call only; a slow listener never holds up the call (emit is sync and
 * each listener writes to its own stream).
 */
export class CallEventBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    // Many dashboards may watch one call.
    this.emitter.setMaxListeners(0);
  }

  publish(event: CallEvent): void {
    this.emitter.emit(event.call_id, event);
  }

  subscribe(callId: string, listener: (event: CallEvent) => void): () => void {
    this.emitter.on(callId, listener);
    return () => this.emitter.off(callId, listener);
  }

  /** One transcript line of a live call, as it is written (a web call's browser shows them). */
  publishLine(line: TranscriptLine): void {
    this.emitter.emit(`line:${line.call_id}`, line);
  }

  subscribeLines(callId: string, listener: (line: TranscriptLine) => void): () => void {
    this.emitter.on(`line:${callId}`, listener);
    return () => this.emitter.off(`line:${callId}`, listener);
  }
}

export interface CallEventLogDeps {
  bus: CallEventBus;
  calls: { byId(id: string): Promise<Call | undefined>; addEvent(event: CallEvent): Promise<void> };
  /** The call's webhook_events delivery (best-effort, never awaited). */
  stream(event: CallEvent): void;
  clock: Clock;
  log?: { error(object: object, message: string): void } | undefined;
}

/**
 * A call's last event (category `call`), recorded once its final record is written: the hosted
 * API's, which webhook receivers and event-stream readers wait for before fetching the call.
 */
export const LAST_EVENT = 'Closing call stream.';

/**
 * Where each event of a call goes, in one place: the call's stored event list (GET
 * /v1/calls/{id}/events), this process's listeners (the server-sent event stream) and, when the
 * call asked for its category, its webhook. A call's events are stored one after another, in order.
 */
export class CallEventLog {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly d: CallEventLogDeps) {}

  record(callId: string, category: CallEventCategory, message: string, logLevel = 'info'): void {
    const event: CallEvent = {
      call_id: callId,
      category,
      message,
      log_level: logLevel,
      at: this.d.clock.now().toISOString(),
    };
    this.d.bus.publish(event);
    this.d.stream(event);
    const stored = (this.tails.get(callId) ?? Promise.resolve()).then(() =>
      this.d.calls.addEvent(event).catch((error: unknown) => {
        this.d.log?.error({ err: error, call_id: callId, category }, 'call event not stored');
      }),
    );
    this.tails.set(callId, stored);
    void stored.finally(() => {
      if (this.tails.get(callId) === stored) this.tails.delete(callId);
    });
  }

  /** The `queue` and `call` events of a call's end, from its final record. Never throws. */
  async callEnded(callId: string): Promise<void> {
    let row: Call | undefined;
    try {
      row = await this.d.calls.byId(callId);
    } catch (error) {
      this.d.log?.error({ err: error, call_id: callId }, 'call end events not recorded');
      return;
    }
    if (!row || !isEnded(row.queue_status)) return;
    if (row.answered_by) this.record(row.id, 'call', `Answered by: ${row.answered_by}`);
    if (row.transferred_to) this.record(row.id, 'call', `Transferred to ${row.transferred_to}`);
    const why = row.error_message ? `: ${row.error_message}` : '';
    this.record(row.id, 'call', `Call ended${row.call_ended_by ? ` by ${row.call_ended_by}` : ''}${why}`);
    this.record(row.id, 'queue', `Call ended with queue_status ${row.queue_status}`);
    this.record(row.id, 'call', LAST_EVENT);
    await this.settled(row.id);
  }

  /** Resolves once every event of the call recorded so far is stored. */
  async settled(callId: string): Promise<void> {
    await this.tails.get(callId);
  }
}
