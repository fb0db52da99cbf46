import type { WebSocket } from 'ws';
import { decodeMulaw, encodeMulaw, FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, StreamResampler } from '../../media/audio.js';
import { pcmBytes } from '../../media/wav.js';
import type { MediaEvent, MediaListener, MediaTransport } from '../../media/transport.js';
import type { WebCallMessage } from './service.js';
import { ApiError } from '../../errors.js';

/** The hosted web-agent SDKs' rate when the page names none (`initConversation({sampleRate: 44100})`). */
export const DEFAULT_SOCKET_SAMPLE_RATE = 44_100;
export const MIN_SOCKET_SAMPLE_RATE = 8000;
export const MAX_SOCKET_SAMPLE_RATE = 48_000;
/** A page whose microphone sent nothing for this long is gone (its SDKs send audio without pause). */
const SILENT_TIMEOUT_MS = 4000;
/** Outbound audio the socket may hold unsent before frames are dropped (a stalled page). */
const MAX_BUFFERED_BYTES = 512 * 1024;
/**
 * Audio a page may send ahead of the clock: a microphone sends in real time, give or take its
 * buffering; what comes faster (a flood) is dropped rather than queued for VAD and STT.
 */
const MAX_AHEAD_MS = 2000;

/**
 * Closes a page's socket that cannot become a call, with the reason: 1013 ("try again later") at
 * the account's call limit or while the server shuts down, 1008 for what the page sent, 1011 for
 * anything else.
 */
export function refuseSocket(socket: WebSocket, error: unknown): void {
  const status = error instanceof ApiError ? error.statusCode : 500;
  const code = status === 429 || status === 503 ? 1013 : status < 500 ? 1008 : 1011;
  const reason = error instanceof ApiError ? error.message : 'the call could not start';
  // A close reason is at most 123 bytes.
  if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING)
    socket.close(code, Buffer.from(reason).subarray(0, 120).toString());
}

/**
 * A web call over the hosted API's web-agent websocket (docs/web-calls.md, "The hosted web-agent
 * SDKs"): what `bland-client-js-sdk`'s BlandWebClient and its successors speak. Binary messages
 * both ways are 16-bit little-endian mono PCM at the page's rate; text messages are the SDKs'
 * events: `{"type":"callID","payload"}` when the call starts, `{"event":"update","payload":{"type":
 * "human"|"assistant","text"}}` for each transcript line, `clear` when the caller talks over the
 * agent (the page drops what it has not played), `ping` answered with `pong`. As the media port,
 * it turns the page's audio into 20 ms mu-law frames and the agent's frames into the page's PCM.
 */
export class AgentSocketPeer implements MediaTransport {
  private readonly listeners = new Set<MediaListener>();
  private readonly inbound: StreamResampler;
  private readonly outbound: StreamResampler;
  /** Telephone-rate samples heard but not yet a whole frame. */
  private pending = new Int16Array(0);
  /** Half a sample: a page may split its 16-bit samples across messages. */
  private oddByte: number | undefined;
  private frames = 0;
  private readonly started = Date.now();
  private lastHeard = Date.now();
  private closed = false;
  private readonly watchdog: NodeJS.Timeout;

  constructor(
    private readonly socket: WebSocket,
    sampleRate: number,
  ) {
    this.inbound = new StreamResampler(sampleRate, SAMPLE_RATE);
    this.outbound = new StreamResampler(SAMPLE_RATE, sampleRate);
    socket.on('message', (data, isBinary) => {
      const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      if (isBinary) this.hear(bytes);
      else if (bytes.toString() === 'ping' && socket.readyState === socket.OPEN) socket.send('pong');
    });
    socket.on('close', () => this.stop('remote'));
    socket.on('error', () => this.stop('network'));
    this.watchdog = setInterval(() => {
      if (Date.now() - this.lastHeard > SILENT_TIMEOUT_MS) this.stop('remote');
    }, 500);
    this.watchdog.unref();
  }

  /** The page's microphone: PCM at its rate, in pieces of any size, as 20 ms telephone frames. */
  private hear(bytes: Buffer): void {
    if (this.closed) return;
    this.lastHeard = Date.now();
    if (this.frames * FRAME_MS > this.lastHeard - this.started + MAX_AHEAD_MS) return;
    let data = bytes;
    if (this.oddByte !== undefined) {
      data = Buffer.concat([Buffer.of(this.oddByte), bytes]);
      this.oddByte = undefined;
    }
    if (data.length % 2 === 1) {
      this.oddByte = data[data.length - 1];
      data = data.subarray(0, data.length - 1);
    }
    const samples = new Int16Array(data.length / 2);
    for (let i = 0; i < samples.length; i++) samples[i] = data.readInt16LE(i * 2);
    const heard = this.inbound.push(samples);
    const joined = new Int16Array(this.pending.length + heard.length);
    joined.set(this.pending);
    joined.set(heard, this.pending.length);
    let at = 0;
    for (; at + FRAME_SAMPLES <= joined.length; at += FRAME_SAMPLES) {
      const payload = encodeMulaw(joined.subarray(at, at + FRAME_SAMPLES));
      this.emit({ type: 'media', payload, timestampMs: this.frames++ * FRAME_MS });
    }
    this.pending = joined.slice(at);
  }

  on(listener: MediaListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The call's events, in the hosted SDKs' words; the page hears the end as the socket closing. */
  send(message: WebCallMessage): void {
    if (message.type === 'started') this.sendText({ type: 'callID', payload: message.call_id });
    else if (message.type === 'transcript')
      this.sendText({
        event: 'update',
        payload: { type: message.role === 'assistant' ? 'assistant' : 'human', text: message.text },
      });
    else if (message.type === 'notice')
      this.sendText({ event: 'notice', code: message.code, message: message.message });
  }

  private sendText(message: object): void {
    if (!this.closed && this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(message));
  }

  sendMedia(payload: Buffer): void {
    if (this.closed || this.socket.readyState !== this.socket.OPEN) return;
    if (this.socket.bufferedAmount > MAX_BUFFERED_BYTES) return;
    const pcm = this.outbound.push(decodeMulaw(payload));
    // A copy: the socket holds the bytes until they are sent.
    this.socket.send(Buffer.from(pcmBytes(pcm)));
  }

  /** The page plays what it is sent as it arrives (frames are paced here at 20 ms): played means sent. */
  sendMark(name: string): void {
    setImmediate(() => this.emit({ type: 'mark', name }));
  }

  /** The caller talks over the agent: the page drops what it holds but has not played. */
  clear(): void {
    if (!this.closed && this.socket.readyState === this.socket.OPEN) this.socket.send('clear');
  }

  /** The call could not start: the socket closes with the reason. */
  refuse(error: unknown): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watchdog);
    refuseSocket(this.socket, error);
  }

  /** Ends the call from our side: the socket closes, which the SDKs report as the conversation's end. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watchdog);
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING)
      this.socket.close(1000, 'call ended');
  }

  /** The page is gone (it hung up, closed its tab, or the network failed): the last event, then the close. */
  stop(reason: 'remote' | 'network'): void {
    if (this.closed) return;
    this.emit({ type: 'stop', reason });
    this.close();
  }

  private emit(event: MediaEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}
