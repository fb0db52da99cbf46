import { MAX_MESSAGE_BYTES } from './message.js';

/**
 * SIP over a byte stream (TCP, TLS; RFC 3261 section 18.3): messages are cut out of the stream by
 * their Content-Length, which a stream message must carry. CRLFs between messages are skipped; a
 * double CRLF is a keep-alive ping (RFC 5626 section 3.5.1) that wants a single CRLF back.
 * Anything that cannot be framed (no Content-Length, a message larger than the cap, a header
 * section that never ends) is malformed: the stream cannot be resynchronised and is dropped.
 */
export class SipStreamReader {
  private buffer: Buffer = Buffer.alloc(0);
  /** A lone CRLF was the last thing read: the next CRLF makes it a ping. */
  private halfPing = false;

  constructor(private readonly maxBytes = MAX_MESSAGE_BYTES) {}

  /** Feeds bytes; returns the whole messages and the number of pings read, or 'malformed'. */
  push(chunk: Buffer): { messages: Buffer[]; pings: number } | 'malformed' {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const messages: Buffer[] = [];
    let pings = 0;
    for (;;) {
      // Keep-alives and stray line ends before a start line.
      while (this.buffer.length >= 2 && this.buffer[0] === 0x0d && this.buffer[1] === 0x0a) {
        if (this.halfPing) {
          pings++;
          this.halfPing = false;
        } else this.halfPing = true;
        this.buffer = this.buffer.subarray(2);
      }
      if (this.buffer.length === 0 || (this.buffer.length === 1 && this.buffer[0] === 0x0d)) break;
      this.halfPing = false;
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) {
        if (this.buffer.length > this.maxBytes) return 'malformed';
        break;
      }
      const head = this.buffer.subarray(0, end).toString('latin1');
      const length = /(?:^|\r\n)(?:content-length|l)[ \t]*:[ \t]*(\d{1,9})[ \t]*(?=\r\n|$)/i.exec(head)?.[1];
      if (length === undefined) return 'malformed';
      const total = end + 4 + Number(length);
      if (total > this.maxBytes) return 'malformed';
      if (this.buffer.length < total) break;
      messages.push(Buffer.from(this.buffer.subarray(0, total)));
      this.buffer = this.buffer.subarray(total);
    }
    return { messages, pings };
  }
}
