import { EventEmitter } from 'node:events';

/** One event of a call, as webhook_events streams it (seed 6.2) and GET /v1/calls/{id}/events sends it. */
export interface CallEvent {
  call_id: string;
  category: 'queue' | 'call' | 'tool' | 'dynamic_data' | 'latency';
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
