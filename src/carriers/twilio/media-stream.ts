import type { WebSocket } from 'ws';
import type { MediaEvent, MediaListener, MediaTransport } from '../../media/transport.js';
import { isRecord } from '../../domain/records.js';

/** The `start` message's details (Twilio sends counters and ids as strings). */
export interface StreamStart {
  streamSid: string;
  callSid: string;
  accountSid: string;
  /** The `<Parameter>`s of the TwiML's `<Stream>`. */
  customParameters: Record<string, string>;
}

/** What the route reads off one message from Twilio; anything else is ignored. */
export type TwilioStreamMessage =
  | { event: 'connected' }
  | { event: 'start'; start: StreamStart }
  | { event: 'media'; payload: Buffer; timestampMs: number; track: string }
  | { event: 'dtmf'; digit: string }
  | { event: 'mark'; name: string }
  | { event: 'stop' };

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

const DTMF_DIGIT = /^[0-9*#A-D]$/;

const MEDIA_START = Buffer.from('{"event":"media",');
const PAYLOAD_KEY = Buffer.from('"payload":"');
const TIMESTAMP_KEY = Buffer.from('"timestamp":"');
const TRACK_KEY = Buffer.from('"track":"');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The string value after `key` (a `"name":"` sequence), or undefined. */
function valueAfter(raw: Buffer, key: Buffer): string | undefined {
  const at = raw.indexOf(key);
  if (at < 0) return undefined;
  const start = at + key.length;
  const end = raw.indexOf(QUOTE, start);
  return end < 0 ? undefined : raw.toString('latin1', start, end);
}

/**
 * Fifty `media` messages a second per call: read as Twilio writes them (`{"event":"media",...}`,
 * no escapes) without building the whole object. Anything else, or anything unusual, returns null
 * for the general parser.
 */
function fastMedia(raw: Buffer): TwilioStreamMessage | null {
  if (raw.length < MEDIA_START.length || raw.compare(MEDIA_START, 0, MEDIA_START.length, 0, MEDIA_START.length) !== 0)
    return null;
  // An escape could hide a quote inside a string: only the general parser reads those right.
  if (raw.indexOf(BACKSLASH) >= 0 || raw[raw.length - 1] !== 0x7d) return null;
  const payload = valueAfter(raw, PAYLOAD_KEY);
  if (payload === undefined) return null;
  const timestampMs = Number(valueAfter(raw, TIMESTAMP_KEY) ?? 0);
  return {
    event: 'media',
    payload: Buffer.from(payload, 'base64'),
    timestampMs: Number.isFinite(timestampMs) ? timestampMs : 0,
    track: valueAfter(raw, TRACK_KEY) ?? 'inbound',
  };
}

/**
 * Parses one websocket message of Twilio's Media Streams protocol (a JSON text frame). Returns
 * undefined for malformed or unknown messages, which the stream ignores rather than failing on.
 */
export function parseStreamMessage(raw: string | Buffer): TwilioStreamMessage | undefined {
  if (typeof raw !== 'string') {
    const media = fastMedia(raw);
    if (media) return media;
  }
  let message: unknown;
  try {
    message = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isRecord(message)) return undefined;
  switch (message.event) {
    case 'connected':
      return { event: 'connected' };
    case 'start': {
      const start = message.start;
      if (!isRecord(start)) return undefined;
      const streamSid = text(start.streamSid) ?? text(message.streamSid);
      const callSid = text(start.callSid);
      if (!streamSid || !callSid) return undefined;
      const customParameters: Record<string, string> = {};
      if (isRecord(start.customParameters)) {
        for (const [key, value] of Object.entries(start.customParameters)) {
          if (typeof value === 'string') customParameters[key] = value;
        }
      }
      return {
        event: 'start',
        start: { streamSid, callSid, accountSid: text(start.accountSid) ?? '', customParameters },
      };
    }
    case 'media': {
      const media = message.media;
      if (!isRecord(media)) return undefined;
      const payload = text(media.payload);
      if (payload === undefined) return undefined;
      const timestampMs = Number(media.timestamp ?? 0);
      return {
        event: 'media',
        payload: Buffer.from(payload, 'base64'),
        timestampMs: Number.isFinite(timestampMs) ? timestampMs : 0,
        track: text(media.track) ?? 'inbound',
      };
    }
    case 'dtmf': {
      const digit = isRecord(message.dtmf) ? text(message.dtmf.digit) : undefined;
      return digit && DTMF_DIGIT.test(digit) ? { event: 'dtmf', digit } : undefined;
    }
    case 'mark': {
      const name = isRecord(message.mark) ? text(message.mark.name) : undefined;
      return name === undefined ? undefined : { event: 'mark', name };
    }
    case 'stop':
      return { event: 'stop' };
    default:
      return undefined;
  }
}

const MEDIA_SUFFIX = Buffer.from('"}}');

/** Events kept for a listener that subscribes a moment after the stream started (about 10 s of audio). */
const MAX_EARLY_EVENTS = 500;

/**
 * One Twilio bidirectional media stream as a MediaTransport: inbound `media` frames (base64 mu-law
 * 8 kHz, 20 ms), `dtmf`, `mark` echoes and `stop` become MediaEvents; outbound frames, marks and
 * clear become `media`, `mark` and `clear` messages carrying the stream's streamSid.
 *
 * `stop` is emitted exactly once: on Twilio's `stop` message or our own close() (remote), or when
 * the socket closes without either (network).
 */
export class TwilioMediaStream implements MediaTransport {
  private readonly listeners = new Set<MediaListener>();
  private early: MediaEvent[] | undefined = [];
  private stopped = false;
  private closedByUs = false;

  /** Every outbound media message is this, the base64 payload, and MEDIA_SUFFIX. */
  private readonly mediaPrefix: Buffer;

  constructor(
    private readonly socket: WebSocket,
    readonly start: StreamStart,
  ) {
    this.mediaPrefix = Buffer.from(
      `{"event":"media","streamSid":${JSON.stringify(start.streamSid)},"media":{"payload":"`,
    );
    socket.on('close', () => this.emitStop('network'));
    socket.on('error', () => this.emitStop('network'));
  }

  get streamSid(): string {
    return this.start.streamSid;
  }

  get callSid(): string {
    return this.start.callSid;
  }

  get ended(): boolean {
    return this.stopped;
  }

  /** Feeds one parsed message from Twilio (the route reads the socket). */
  receive(message: TwilioStreamMessage): void {
    switch (message.event) {
      case 'media':
        // Only the caller's audio: a stream with both tracks would otherwise echo our own words back.
        if (message.track === 'inbound' || message.track === 'inbound_track') {
          this.emit({ type: 'media', payload: message.payload, timestampMs: message.timestampMs });
        }
        return;
      case 'dtmf':
        this.emit({ type: 'dtmf', digit: message.digit });
        return;
      case 'mark':
        this.emit({ type: 'mark', name: message.name });
        return;
      case 'stop':
        this.emitStop('remote');
        this.closeSocket();
        return;
      default:
        return;
    }
  }

  on(listener: MediaListener): () => void {
    this.listeners.add(listener);
    const early = this.early;
    this.early = undefined;
    if (early) for (const event of early) listener(event);
    return () => this.listeners.delete(listener);
  }

  sendMedia(payload: Buffer): void {
    if (!this.writable) return;
    // Built in one buffer: the same JSON as JSON.stringify would write, at a fraction of the cost.
    const prefix = this.mediaPrefix;
    const base64Length = 4 * Math.ceil(payload.length / 3);
    const message = Buffer.allocUnsafe(prefix.length + base64Length + MEDIA_SUFFIX.length);
    prefix.copy(message, 0);
    message.write(payload.toString('base64'), prefix.length, 'latin1');
    MEDIA_SUFFIX.copy(message, prefix.length + base64Length);
    this.socket.send(message, { binary: false });
  }

  sendMark(name: string): void {
    this.send({ event: 'mark', streamSid: this.streamSid, mark: { name } });
  }

  /** Twilio drops the audio it has buffered for the call and echoes the marks still pending. */
  readonly dropsOnClear = true;

  clear(): void {
    this.send({ event: 'clear', streamSid: this.streamSid });
  }

  /**
   * Ends the stream from our side (our hang-up, or Twilio's status callback saying the call is
   * over): `stop` is emitted now, not once the peer answers the close frame, which a stuck
   * connection never does (ws would wait 30 s).
   */
  close(): void {
    if (this.closedByUs) return;
    this.closedByUs = true;
    this.emitStop('remote');
    this.closeSocket();
  }

  private closeSocket(): void {
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) {
      this.socket.close(1000);
    }
  }

  private get writable(): boolean {
    return !this.stopped && this.socket.readyState === this.socket.OPEN;
  }

  private send(message: object): void {
    if (!this.writable) return;
    this.socket.send(JSON.stringify(message));
  }

  private emit(event: MediaEvent): void {
    if (this.stopped) return;
    if (this.early) {
      if (this.early.length < MAX_EARLY_EVENTS) this.early.push(event);
      return;
    }
    for (const listener of this.listeners) listener(event);
  }

  private emitStop(reason: 'remote' | 'network'): void {
    if (this.stopped) return;
    const event: MediaEvent = { type: 'stop', reason };
    if (this.early) this.early.push(event);
    else for (const listener of this.listeners) listener(event);
    this.stopped = true;
  }
}

/**
 * The media of one Twilio call across its streams, as the one transport its audio leg keeps: a
 * transfer's `<Dial>` replaces the call's TwiML, so Twilio stops the stream; when the Dial fails,
 * its action connects the caller to a new stream (resume), and the conversation goes on where it
 * was. The stop of a stream being handed over is not the end of the call; close() always is.
 */
export class TwilioCallMedia implements MediaTransport {
  private readonly listeners = new Set<MediaListener>();
  private stream: TwilioMediaStream;
  private unfollow: (() => void) | undefined;
  /** A transfer's Dial is replacing the stream: its stop is expected. */
  private handingOver = false;
  private stopped = false;

  constructor(stream: TwilioMediaStream) {
    this.stream = stream;
  }

  /** The stream the caller is on now, or was on last. */
  get current(): TwilioMediaStream {
    return this.stream;
  }

  /** Whether the caller is on a stream now (not ended, and not away on a transfer's Dial). */
  get connected(): boolean {
    return !this.stopped && !this.stream.ended;
  }

  readonly dropsOnClear = true;

  on(listener: MediaListener): () => void {
    this.listeners.add(listener);
    this.follow();
    return () => this.listeners.delete(listener);
  }

  /** Listens to the current stream once someone listens here (the stream keeps its early events till then). */
  private follow(): void {
    if (this.unfollow || this.listeners.size === 0) return;
    const stream = this.stream;
    this.unfollow = stream.on((event) => {
      if (event.type === 'stop') {
        if (stream !== this.stream) return;
        this.unfollow = undefined;
        if (this.handingOver) return;
        this.stopped = true;
      }
      for (const listener of this.listeners) listener(event);
    });
  }

  /** A transfer's Dial is about to replace the stream: its stop does not end the call. */
  handOver(): void {
    if (!this.stopped) this.handingOver = true;
  }

  /** The hand-over did not happen (Twilio refused the Dial): a stop ends the call again. */
  keep(): void {
    this.handingOver = false;
    if (this.stream.ended && !this.stopped) this.close();
  }

  /** The caller is back, on `stream`: what is sent goes there, what it hears comes from it. */
  resume(stream: TwilioMediaStream): void {
    if (this.stopped) {
      stream.close();
      return;
    }
    const previous = this.stream;
    this.unfollow?.();
    this.unfollow = undefined;
    this.stream = stream;
    this.handingOver = false;
    if (!previous.ended) previous.close();
    this.follow();
  }

  sendMedia(payload: Buffer): void {
    this.stream.sendMedia(payload);
  }

  sendMark(name: string): void {
    this.stream.sendMark(name);
  }

  clear(): void {
    this.stream.clear();
  }

  /** Ends the call's media for good: its stream is closed and listeners hear `stop` (once). */
  close(): void {
    if (this.stopped) return;
    this.handingOver = false;
    if (!this.stream.ended) {
      // Its stop reaches the listeners through follow().
      this.stream.close();
      return;
    }
    // The stream ended while being handed over: the end of the call is told here.
    this.stopped = true;
    for (const listener of this.listeners) listener({ type: 'stop', reason: 'remote' });
  }
}
