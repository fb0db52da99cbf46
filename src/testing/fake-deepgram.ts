/**
 * A local Deepgram live-transcription server on loopback, speaking the real protocol: a websocket
 * at /v1/listen that checks `Authorization: Token <key>` and the query (refusals are HTTP errors
 * with Deepgram's `{"err_code","err_msg"}` body), takes binary mu-law 8 kHz audio and answers with
 * `Results` messages.
 *
 * It does not recognise speech. It finds voiced segments by energy over 20 ms frames and gives
 * each segment the next transcript of its script: interim results (is_final false) revealing the
 * words one by one while the segment lasts, then a final with speech_final true once the
 * `endpointing` silence of the query has passed (long segments may be settled in pieces first,
 * `finalAfterMs`). `Finalize` is answered with a final marked
 * from_finalize (voice resuming within the endpointing silence, or 1 s, goes on with the same
 * utterance, its words all given), `KeepAlive` keeps an idle stream open (otherwise it closes with 1011 NET-0001
 * after `idleTimeoutMs`), `CloseStream` flushes, sends Metadata and closes with 1000.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { FRAME_SAMPLES, decodeMulaw, rms } from '../media/audio.js';

export interface FakeDeepgramOptions {
  /** The key clients must send. Default `dg-test-key`. */
  apiKey?: string;
  /** Transcripts given to voiced segments in order; once used up, every segment hears "hello". */
  transcripts?: string[];
  /** Delay before every message the fake sends. Default 0. */
  latencyMs?: number;
  /** RMS level (0..32768) from which a 20 ms frame counts as voiced. Default 500 (about -36 dBFS). */
  voicedRms?: number;
  /** Voiced audio per revealed word of an interim result. Default 200. */
  wordMs?: number;
  /**
   * Voiced audio after which a segment still going on is settled (is_final without speech_final)
   * and continues as the same utterance, as Deepgram does with long speech. Default: never.
   */
  finalAfterMs?: number;
  /** Closes a stream that received nothing (audio or KeepAlive) for this long. Default 10000, as Deepgram. */
  idleTimeoutMs?: number;
  /**
   * A segment's final gives only as many of its transcript's words as its voice lasted for (one
   * per wordMs, at least one), as a recogniser transcribes only what it heard: 200 ms of an echo
   * is one word. Default false: the final gives the rest of the transcript, however short the voice.
   */
  wordsAsHeard?: boolean;
}

/** One stream as the fake saw it, for assertions. */
export interface FakeDeepgramConnection {
  /** The query of the handshake (`getAll('keywords')` for repeated parameters). */
  query: URLSearchParams;
  authorization: string | undefined;
  /** Bytes of audio received. */
  bytes: number;
  /** Control message types received in order (KeepAlive, Finalize, CloseStream, ...). */
  controls: string[];
  /** Messages sent to the client, parsed. */
  sent: Record<string, unknown>[];
  /** Set when the stream ended: who closed it and with which code. */
  closed?: { code: number; by: 'client' | 'server' };
}

/** A refused handshake, for assertions on what was wrong. */
export interface FakeDeepgramRefusal {
  status: number;
  authorization: string | undefined;
  query: URLSearchParams;
}

/** The voiced stretch under way: its transcript's words, how many are final or shown, its timing. */
interface Segment {
  words: string[];
  /** Words already sent in an is_final result. */
  base: number;
  /** Words after `base` shown in interim results. */
  shown: number;
  startMs: number;
  voicedMs: number;
  silenceMs: number;
  /**
   * Finalize settled every word while the speaker only paused: voice that follows within the
   * endpointing silence (at most 1 s) belongs to the same utterance, so it takes no new transcript.
   */
  settled?: boolean;
}

export class FakeDeepgram {
  readonly connections: FakeDeepgramConnection[] = [];
  readonly refusals: FakeDeepgramRefusal[] = [];
  readonly apiKey: string;
  /** Delay before every message sent; tests may change it at any time. */
  latencyMs: number;
  private readonly transcripts: string[];
  private readonly voicedRms: number;
  private readonly wordMs: number;
  private readonly idleTimeoutMs: number;
  private readonly finalAfterMs: number;
  private readonly wordsAsHeard: boolean;
  private readonly sockets = new Set<Socket>();
  private readonly clients = new Set<WebSocket>();
  private readonly closedByServer = new WeakSet<WebSocket>();
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly scriptedRefusals: { status: number; retryAfterS?: number }[] = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    options: FakeDeepgramOptions,
  ) {
    this.apiKey = options.apiKey ?? 'dg-test-key';
    this.transcripts = [...(options.transcripts ?? [])];
    this.latencyMs = options.latencyMs ?? 0;
    this.voicedRms = options.voicedRms ?? 500;
    this.wordMs = options.wordMs ?? 200;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 10_000;
    this.finalAfterMs = options.finalAfterMs ?? Infinity;
    this.wordsAsHeard = options.wordsAsHeard ?? false;
  }

  /** Starts on a free loopback port; `url` is the base to configure (ws://127.0.0.1:PORT). */
  static async start(options: FakeDeepgramOptions = {}): Promise<FakeDeepgram> {
    const server = http.createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ err_code: 'Bad Request', err_msg: 'This endpoint expects a websocket upgrade.' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const fake = new FakeDeepgram(server, `ws://127.0.0.1:${port}`, options);
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => fake.upgrade(req, socket, head));
    server.on('connection', (socket: Socket) => {
      fake.sockets.add(socket);
      socket.on('close', () => fake.sockets.delete(socket));
    });
    return fake;
  }

  /**
   * Refuses the next handshakes, one per status, as Deepgram does when an account is over its
   * concurrency limit (429, `TOO_MANY_REQUESTS`) or the service is down (5xx); `retryAfterS` is sent
   * as Retry-After.
   */
  refuseNext(...refusals: { status: number; retryAfterS?: number }[]): void {
    this.scriptedRefusals.push(...refusals);
  }

  /** Adds transcripts to the script. */
  script(...transcripts: string[]): void {
    this.transcripts.push(...transcripts);
  }

  /** Closes every open stream from the server side, as Deepgram does on an internal failure. */
  dropAll(code = 1011, reason = 'NET-0000'): void {
    for (const ws of this.clients) this.closeFromServer(ws, code, reason);
  }

  private closeFromServer(ws: WebSocket, code: number, reason?: string): void {
    this.closedByServer.add(ws);
    ws.close(code, reason);
  }

  async close(): Promise<void> {
    for (const ws of this.clients) ws.terminate();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const authorization = req.headers.authorization;
    const refuse = (status: number, code: string, message: string, retryAfterS?: number): void => {
      this.refusals.push({ status, authorization, query: url.searchParams });
      const body = JSON.stringify({ err_code: code, err_msg: message, request_id: randomUUID() });
      socket.end(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
          (retryAfterS === undefined ? '' : `retry-after: ${retryAfterS}\r\n`) +
          `dg-error: ${message}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    if (url.pathname !== '/v1/listen') return refuse(404, 'Not Found', 'Unknown path.');
    if (authorization !== `Token ${this.apiKey}`) return refuse(401, 'INVALID_AUTH', 'Invalid credentials.');
    const scripted = this.scriptedRefusals.shift();
    if (scripted) {
      const [code, message] =
        scripted.status === 429
          ? ['TOO_MANY_REQUESTS', 'Too many requests. Please try again later.']
          : ['INTERNAL_SERVER_ERROR', 'The service is temporarily unavailable.'];
      return refuse(scripted.status, code, message, scripted.retryAfterS);
    }
    const q = url.searchParams;
    if (q.get('encoding') !== 'mulaw' || q.get('sample_rate') !== '8000') {
      return refuse(400, 'Bad Request', 'This server reads only encoding=mulaw with sample_rate=8000.');
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.serve(ws, q, authorization));
  }

  private serve(ws: WebSocket, query: URLSearchParams, authorization: string | undefined): void {
    const connection: FakeDeepgramConnection = { query, authorization, bytes: 0, controls: [], sent: [] };
    this.connections.push(connection);
    this.clients.add(ws);
    const requestId = randomUUID();
    const model = query.get('model') ?? 'nova-2';
    const endpointing = query.get('endpointing');
    // Deepgram's default endpointing is 10 ms; "false" turns speech_final off.
    const endpointingMs = endpointing === 'false' ? Infinity : Number(endpointing ?? 10) || 10;
    const interim = query.get('interim_results') === 'true';
    let pending = Buffer.alloc(0);
    let positionMs = 0;
    let segment: Segment | undefined;
    let closing = false;

    const send = (message: Record<string, unknown>): void => {
      connection.sent.push(message);
      const text = JSON.stringify(message);
      const deliver = (): void => {
        if (ws.readyState === ws.OPEN) ws.send(text);
      };
      if (this.latencyMs > 0) setTimeout(deliver, this.latencyMs);
      else deliver();
    };
    const results = (
      words: string[],
      flags: { is_final: boolean; speech_final: boolean; from_finalize: boolean },
      startMs: number,
    ): void => {
      const durationMs = Math.max(0, positionMs - startMs);
      const each = words.length ? durationMs / words.length : 0;
      send({
        type: 'Results',
        channel_index: [0, 1],
        duration: durationMs / 1000,
        start: startMs / 1000,
        ...flags,
        channel: {
          alternatives: [
            {
              transcript: words.join(' '),
              confidence: words.length ? 0.98 : 0,
              words: words.map((w, i) => ({
                word: w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ''),
                start: (startMs + i * each) / 1000,
                end: (startMs + (i + 1) * each) / 1000,
                confidence: 0.98,
                punctuated_word: w,
              })),
            },
          ],
        },
        metadata: {
          request_id: requestId,
          model_info: { name: model, version: '2024-01-09.29447', arch: model.split('-').slice(0, 2).join('-') },
          model_uuid: '00000000-0000-4000-8000-000000000000',
        },
      });
    };
    /** Ends the segment with the words not finalised yet (Finalize, CloseStream, endpointing). */
    const finish = (flags: { speech_final: boolean; from_finalize: boolean }): void => {
      if (segment) {
        const heard = Math.max(1, Math.ceil(segment.voicedMs / this.wordMs));
        const end = this.wordsAsHeard ? segment.base + heard : segment.words.length;
        results(segment.words.slice(segment.base, end), { is_final: true, ...flags }, segment.startMs);
      } else if (flags.from_finalize) results([], { is_final: true, ...flags }, positionMs);
      if (segment && flags.from_finalize && !segment.settled) {
        segment = { ...segment, base: segment.words.length, shown: 0, startMs: positionMs, settled: true };
      } else segment = undefined;
    };
    const continuationMs = Math.min(endpointingMs, 1000);
    const frame = (bytes: Buffer): void => {
      positionMs += 20;
      const voiced = rms(decodeMulaw(bytes)) >= this.voicedRms;
      if (!segment) {
        if (!voiced) return;
        const transcript = this.transcripts.shift() ?? 'hello';
        const words = transcript.split(/\s+/).filter(Boolean);
        segment = { words, base: 0, shown: 0, startMs: positionMs - 20, voicedMs: 0, silenceMs: 0 };
      }
      if (!voiced) {
        segment.silenceMs += 20;
        if (segment.settled && segment.silenceMs >= continuationMs) segment = undefined;
        else if (segment.silenceMs >= endpointingMs) finish({ speech_final: true, from_finalize: false });
        return;
      }
      segment.settled = false;
      segment.voicedMs += 20;
      segment.silenceMs = 0;
      const left = segment.words.length - segment.base;
      const shown = Math.min(left, Math.ceil(segment.voicedMs / this.wordMs));
      if (interim && shown > segment.shown) {
        segment.shown = shown;
        const words = segment.words.slice(segment.base, segment.base + shown);
        results(words, { is_final: false, speech_final: false, from_finalize: false }, segment.startMs);
      }
      // Long speech without a pause: Deepgram settles what it has and carries on in the same utterance.
      if (segment.voicedMs >= this.finalAfterMs && segment.shown > 0) {
        const words = segment.words.slice(segment.base, segment.base + segment.shown);
        results(words, { is_final: true, speech_final: false, from_finalize: false }, segment.startMs);
        segment.base += segment.shown;
        segment.shown = 0;
        segment.voicedMs = 0;
        segment.startMs = positionMs;
      }
    };

    let idle: NodeJS.Timeout | undefined;
    const touch = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => this.closeFromServer(ws, 1011, 'NET-0001'), this.idleTimeoutMs);
    };
    touch();

    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (closing) return;
      touch();
      if (isBinary) {
        connection.bytes += data.length;
        pending = Buffer.concat([pending, data]);
        let at = 0;
        for (; at + FRAME_SAMPLES <= pending.length; at += FRAME_SAMPLES)
          frame(pending.subarray(at, at + FRAME_SAMPLES));
        pending = pending.subarray(at);
        return;
      }
      let type: unknown;
      try {
        type = (JSON.parse(data.toString('utf8')) as { type?: unknown }).type;
      } catch {
        this.closeFromServer(ws, 1008, 'DATA-0000');
        return;
      }
      connection.controls.push(String(type));
      if (type === 'Finalize') finish({ speech_final: false, from_finalize: true });
      else if (type === 'CloseStream') {
        closing = true;
        finish({ speech_final: false, from_finalize: false });
        send({
          type: 'Metadata',
          transaction_key: 'deprecated',
          request_id: requestId,
          sha256: '',
          created: new Date().toISOString(),
          duration: positionMs / 1000,
          channels: 1,
        });
        setTimeout(() => this.closeFromServer(ws, 1000), this.latencyMs);
      }
    });
    ws.on('close', (code: number) => {
      clearTimeout(idle);
      this.clients.delete(ws);
      connection.closed ??= { code, by: this.closedByServer.has(ws) ? 'server' : 'client' };
    });
  }
}
