/**
 * Deepgram live transcription over its websocket API (`/v1/listen`): mu-law 8 kHz frames go up as
 * binary messages, `Results` messages come back with interim and final transcripts. Control
 * messages: `Finalize` flushes what was heard (the VAD saw the caller stop), `KeepAlive` holds an
 * idle stream open (Deepgram closes one after about 10 s without data), `CloseStream` ends it.
 * No reconnection: a failure is one `error` event and the audio leg decides what to do.
 */
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { SttError, type SttEvent, type SttOptions, type SttProvider, type SttStream } from './types.js';
import { retryAfter, retryableStatus, withoutSecret } from '../base.js';

export interface DeepgramOptions {
  /** DEEPGRAM_API_KEY, sent as `Authorization: Token <key>`; a self-hosted server may need none. */
  apiKey: string | undefined;
  /** Default wss://api.deepgram.com (http(s) URLs are turned into ws(s)). */
  baseUrl?: string;
  /** Default nova-2-phonecall, Deepgram's model for telephone audio. */
  model?: string;
  /** Silence (ms) after which Deepgram marks an utterance speech_final. Default 300. */
  endpointingMs?: number;
  /** A KeepAlive goes out when nothing was sent for this long. Default 4000. */
  keepAliveMs?: number;
  /** Longest wait for the websocket handshake. Default 5000. */
  connectTimeoutMs?: number;
  /** Longest wait for Deepgram's last results after CloseStream. Default 2000. */
  closeTimeoutMs?: number;
}

/** Boost of a keyword written without one (seed: "default boost factor 2"). */
const DEFAULT_BOOST = 2;

/** Audio kept for a stream that replaces a broken one: at most this much not covered by a final. */
const UNSETTLED_MAX_MS = 15_000;

/** Deepgram's models that know only English; other languages fall back to the general model. */
const ENGLISH_ONLY_SUFFIX =
  /-(phonecall|meeting|finance|conversationalai|voicemail|video|medical|drivethru|automotive|atc)$/;

/** The message Deepgram sends for every transcript, interim or final. */
interface ResultsMessage {
  type: 'Results';
  /** Where the result's audio starts and how long it lasts, in seconds of the stream's audio. */
  start?: number;
  duration?: number;
  is_final?: boolean;
  speech_final?: boolean;
  from_finalize?: boolean;
  channel?: { alternatives?: { transcript?: string }[] };
}

/** The query Deepgram's listen endpoint takes for one call. */
export function deepgramListenUrl(base: string, model: string, endpointingMs: number, options: SttOptions): URL {
  const url = new URL(`${base.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/listen`);
  url.protocol = url.protocol === 'https:' ? 'wss:' : url.protocol === 'http:' ? 'ws:' : url.protocol;
  const english = /^en\b/i.test(options.language);
  const chosenModel = english ? model : model.replace(ENGLISH_ONLY_SUFFIX, '');
  const q = url.searchParams;
  q.set('encoding', options.encoding);
  q.set('sample_rate', String(options.sampleRate));
  q.set('channels', '1');
  q.set('interim_results', 'true');
  q.set('punctuate', 'true');
  q.set('endpointing', String(options.endpointingMs ?? endpointingMs));
  q.set('language', options.language);
  q.set('model', chosenModel);
  // Nova-3 replaced boosted keywords with key terms, which take no boost.
  const keyterms = /^nova-3/.test(chosenModel);
  for (const keyword of options.keywords) {
    const match = /^(.*?)(?::(\d+(?:\.\d+)?))?$/.exec(keyword.trim());
    const word = match?.[1]?.trim();
    if (!word) continue;
    if (keyterms) q.append('keyterm', word);
    else q.append('keywords', `${word}:${match?.[2] ?? DEFAULT_BOOST}`);
  }
  return url;
}

/**
 * Reads Deepgram's refusal of a handshake: `{"err_code","err_msg"}` in the body, and Retry-After;
 * `apiKey` is never quoted.
 */
function refusal(response: IncomingMessage, body: string, apiKey: string | undefined): SttError {
  const status = response.statusCode;
  let detail = body.slice(0, 300);
  try {
    const parsed = JSON.parse(body) as { err_code?: unknown; err_msg?: unknown };
    if (typeof parsed.err_msg === 'string') {
      detail = typeof parsed.err_code === 'string' ? `${parsed.err_code}: ${parsed.err_msg}` : parsed.err_msg;
    }
  } catch {
    // not JSON: keep the text
  }
  const hint = status === 401 || status === 403 ? ' (check DEEPGRAM_API_KEY)' : '';
  return new SttError(
    `Deepgram refused the stream with ${status ?? 'an error'}${hint}: ${withoutSecret(detail, apiKey) || 'no message'}`,
    retryableStatus(status),
    status,
    {
      retryAfterMs: retryAfter({
        get: (name) => {
          const value = response.headers[name];
          return typeof value === 'string' ? value : null;
        },
      }),
    },
  );
}

export class DeepgramStt implements SttProvider {
  readonly name = 'deepgram';
  private readonly baseUrl: string;
  private readonly model: string;

  constructor(private readonly options: DeepgramOptions) {
    this.baseUrl = options.baseUrl ?? 'wss://api.deepgram.com';
    this.model = options.model ?? 'nova-2-phonecall';
  }

  async open(options: SttOptions): Promise<SttStream> {
    const url = deepgramListenUrl(this.baseUrl, this.model, this.options.endpointingMs ?? 300, options);
    const ws = new WebSocket(url, {
      headers: this.options.apiKey ? { Authorization: `Token ${this.options.apiKey}` } : {},
      handshakeTimeout: this.options.connectTimeoutMs ?? 5000,
    });
    await new Promise<void>((resolve, reject) => {
      let refused = false;
      ws.once('open', () => {
        ws.removeAllListeners('error');
        resolve();
      });
      ws.once('unexpected-response', (_request, response) => {
        refused = true;
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (piece: string) => {
          if (body.length < 2000) body += piece;
        });
        const done = (): void => {
          reject(refusal(response, body, this.options.apiKey));
          ws.terminate();
        };
        response.on('end', done);
        response.on('error', done);
      });
      ws.on('error', (error) => {
        if (refused) return; // the refusal explains it better
        const timeout = /timed out/i.test(error.message);
        reject(
          new SttError(
            timeout ? 'Deepgram did not accept the stream in time' : `Cannot reach Deepgram: ${error.message}`,
            true,
            undefined,
            { cause: error },
          ),
        );
      });
    });
    return new DeepgramStream(
      ws,
      this.options.keepAliveMs ?? 4000,
      this.options.closeTimeoutMs ?? 2000,
      // mu-law: one byte a sample.
      options.sampleRate / 1000,
    );
  }
}

class DeepgramStream implements SttStream {
  private readonly listeners = new Set<(event: SttEvent) => void>();
  /** Whether the utterance under way has had a final that did not end it. */
  private settledWords = false;
  private lastSentAt = Date.now();
  private closing = false;
  private failed = false;
  private readonly keepAlive: NodeJS.Timeout;
  private readonly closed: Promise<void>;
  /** Audio written (ms of the stream's audio), and the frames after the end of the last final. */
  private writtenMs = 0;
  private readonly pending: { frame: Buffer; endMs: number }[] = [];

  constructor(
    private readonly ws: WebSocket,
    keepAliveMs: number,
    private readonly closeTimeoutMs: number,
    private readonly bytesPerMs: number,
  ) {
    this.closed = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('message', (data, isBinary) => {
      if (!isBinary) this.onMessage(data.toString());
    });
    ws.on('error', (error) => this.fail(`Deepgram stream failed: ${error.message}`));
    ws.on('close', (code, reason) => {
      clearInterval(this.keepAlive);
      if (!this.closing)
        this.fail(`Deepgram closed the stream (${code}${reason.length ? ` ${reason.toString()}` : ''})`);
    });
    // Checking twice per period keeps the longest silence under 1.5 periods, well inside Deepgram's 10 s.
    this.keepAlive = setInterval(
      () => {
        if (Date.now() - this.lastSentAt >= keepAliveMs) this.sendControl('KeepAlive');
      },
      Math.max(1, keepAliveMs / 2),
    );
    this.keepAlive.unref();
  }

  on(listener: (event: SttEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  write(frame: Buffer): void {
    if (this.closing) return;
    // Kept until a final covers it, also when the socket is already going: a stream that replaces
    // this one is given it (unsettled()).
    this.writtenMs += frame.length / this.bytesPerMs;
    this.pending.push({ frame, endMs: this.writtenMs });
    while (this.pending.length > 0 && this.writtenMs - this.pending[0]!.endMs >= UNSETTLED_MAX_MS) this.pending.shift();
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(frame, { binary: true });
    this.lastSentAt = Date.now();
  }

  unsettled(): Buffer[] {
    return this.pending.map((p) => p.frame);
  }

  finalize(): void {
    if (!this.closing) this.sendControl('Finalize');
  }

  async close(): Promise<void> {
    if (this.closing) return this.closed;
    this.closing = true;
    clearInterval(this.keepAlive);
    if (this.ws.readyState === WebSocket.OPEN) {
      // Deepgram answers CloseStream with its last results and metadata, then closes.
      this.sendControl('CloseStream');
      const timer = setTimeout(() => this.ws.terminate(), this.closeTimeoutMs);
      await this.closed;
      clearTimeout(timer);
    } else if (this.ws.readyState !== WebSocket.CLOSED) {
      this.ws.terminate();
      await this.closed;
    }
  }

  private sendControl(type: 'KeepAlive' | 'Finalize' | 'CloseStream'): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(JSON.stringify({ type }));
    this.lastSentAt = Date.now();
  }

  private emit(event: SttEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  private fail(message: string): void {
    if (this.failed) return;
    this.failed = true;
    this.emit({ type: 'error', message });
  }

  private onMessage(text: string): void {
    let message: { type?: unknown; description?: unknown; message?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (message.type === 'Error') {
      const why = typeof message.description === 'string' ? message.description : String(message.message ?? '');
      this.fail(`Deepgram reported an error: ${why || 'no description'}`);
      return;
    }
    if (message.type === 'Results') this.onResults(message as ResultsMessage);
    // Metadata, SpeechStarted and UtteranceEnd carry nothing the port reports.
  }

  private onResults(results: ResultsMessage): void {
    const transcript = (results.channel?.alternatives?.[0]?.transcript ?? '').trim();
    if (results.is_final && typeof results.start === 'number' && typeof results.duration === 'number') {
      // Deepgram will not revise this audio again: it need not be heard again by another stream.
      const settledMs = (results.start + results.duration) * 1000;
      while (this.pending.length > 0 && this.pending[0]!.endMs <= settledMs + 0.5) this.pending.shift();
    }
    if (!results.is_final) {
      if (transcript !== '') this.emit({ type: 'partial', text: transcript });
      return;
    }
    // A final from Finalize answers the leg's own judgement that the caller stopped.
    const endOfUtterance = results.speech_final === true || results.from_finalize === true;
    // An empty final still ends an utterance that had words, and answers a Finalize (nothing more
    // is coming, so the leg need not wait); other empty finals (Deepgram sends them in silence) say nothing.
    if (transcript !== '' || (endOfUtterance && (this.settledWords || results.from_finalize === true))) {
      this.emit({ type: 'final', text: transcript, endOfUtterance });
    }
    this.settledWords = !endOfUtterance && (this.settledWords || transcript !== '');
  }
}
