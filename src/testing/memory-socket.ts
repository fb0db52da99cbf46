import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';

/**
 * The parts of a ws WebSocket that a TwilioMediaStream uses, in memory: what is sent is parsed and
 * kept in `sent` (unless `keep` is false, as for a benchmark sending thousands a second), and
 * close() closes it as ws does, once.
 */
export class MemorySocket extends EventEmitter {
  readonly OPEN = 1;
  readonly CONNECTING = 0;
  readyState = 1;
  readonly sent: unknown[] = [];

  constructor(private readonly keep = true) {
    super();
  }

  /** This socket as the ws type the stream takes. */
  get ws(): WebSocket {
    return this as unknown as WebSocket;
  }

  send(data: string | Buffer): void {
    if (this.keep) this.sent.push(JSON.parse(String(data)));
  }

  close(): void {
    if (this.readyState !== 1) return;
    this.readyState = 3;
    this.emit('close', 1000, Buffer.alloc(0));
  }
}
