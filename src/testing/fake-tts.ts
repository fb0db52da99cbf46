/**
 * Local text-to-speech servers on loopback, speaking the vendors' real HTTP protocols:
 * - ElevenLabs: `POST /v1/text-to-speech/{voice_id}/stream?output_format=pcm_16000|ulaw_8000|...`
 *   with `xi-api-key` and `{"text","model_id"}`; errors as `{"detail":{"status","message"}}`.
 * - OpenAI: `POST /v1/audio/speech` with `Authorization: Bearer` and
 *   `{"model","input","voice","response_format":"pcm"}` (24 kHz 16-bit mono); errors as
 *   `{"error":{"message","type","param","code"}}`.
 * Both stream real audio (a tone whose length follows the text, or espeak-ng reading the text)
 * in several chunks split at odd byte offsets, as a network may, after a configurable delay
 * before the first chunk. Requests are recorded, with whether the client left before the end.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { concatPcm, encodeMulaw, resample, tone } from '../media/audio.js';
import { WAVE_FORMAT_PCM, wavHeader } from '../media/wav.js';
import { ESPEAK_SAMPLE_RATE, EspeakTts } from '../providers/tts/espeak.js';

export interface FakeTtsOptions {
  /** What the audio is: a 440 Hz tone of 60 ms per character (300 ms-4 s), or espeak-ng. Default tone. */
  audio?: 'tone' | 'espeak';
  /** Chunks the audio is sent in. Default 5. */
  chunks?: number;
  /** Delay before the headers and first chunk. Default 0. */
  firstChunkDelayMs?: number;
  /** Delay between chunks. Default 10. */
  chunkIntervalMs?: number;
  /** The key both vendors' clients must send. Default `tts-test-key`. */
  apiKey?: string;
  /**
   * What the OpenAI endpoint streams: `pcm` (24 kHz raw, as asked) or, as some compatible servers
   * do whatever the request's response_format, a WAV stream at 22,050 Hz with placeholder sizes.
   * Default pcm.
   */
  openAiAudio?: 'pcm' | 'wav';
}

export interface FakeTtsRequest {
  vendor: 'elevenlabs' | 'openai';
  path: string;
  query: URLSearchParams;
  /** `xi-api-key` for ElevenLabs, `authorization` for OpenAI. */
  credential: string | undefined;
  body: Record<string, unknown>;
  /** Audio chunks written before the end or the client's departure. */
  chunksSent: number;
  /** Every chunk was written. */
  completed: boolean;
  /** The client closed the connection before the last chunk. */
  disconnectedEarly: boolean;
}

/**
 * A scripted failure of the next request: an HTTP error with the vendor's error body (and
 * `Retry-After` in seconds when given), or audio that breaks off after `cutAfterChunks` chunks.
 */
export type FakeTtsFailure = { status: number; message?: string; retryAfterS?: number } | { cutAfterChunks: number };

const OPENAI_RATE = 24000;
const WAV_RATE = 22050;

/** Sample rate and encoding of an ElevenLabs output_format this fake serves. */
function elevenLabsFormat(format: string | null): { rate: number; mulaw: boolean } | undefined {
  const match = /^(pcm|ulaw)_(\d+)$/.exec(format ?? '');
  if (!match) return undefined;
  const rate = Number(match[2]);
  if (match[1] === 'ulaw') return rate === 8000 ? { rate, mulaw: true } : undefined;
  return [8000, 16000, 22050, 24000, 44100].includes(rate) ? { rate, mulaw: false } : undefined;
}

export class FakeTts {
  readonly requests: FakeTtsRequest[] = [];
  /** Settings; tests may change them between requests. */
  readonly options: Required<FakeTtsOptions>;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly failures: FakeTtsFailure[] = [];

  private constructor(
    private readonly server: http.Server,
    /** Base URL without a path: ElevenLabs' base, and OpenAI's base is `${url}/v1`. */
    readonly url: string,
    options: FakeTtsOptions,
  ) {
    this.options = {
      audio: options.audio ?? 'tone',
      chunks: options.chunks ?? 5,
      firstChunkDelayMs: options.firstChunkDelayMs ?? 0,
      chunkIntervalMs: options.chunkIntervalMs ?? 10,
      apiKey: options.apiKey ?? 'tts-test-key',
      openAiAudio: options.openAiAudio ?? 'pcm',
    };
  }

  static async start(options: FakeTtsOptions = {}): Promise<FakeTts> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const fake = new FakeTts(server, `http://127.0.0.1:${port}`, options);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void fake.handle(req, res));
    server.on('connection', (socket: Socket) => {
      fake.sockets.add(socket);
      socket.on('close', () => fake.sockets.delete(socket));
    });
    return fake;
  }

  /** Queues failures, taken by the next requests (whose key and body are valid) in order. */
  fail(...failures: FakeTtsFailure[]): void {
    this.failures.push(...failures);
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      // an unreadable body fails validation below
    }
    const voice = /^\/v1\/text-to-speech\/([^/]+)\/stream$/.exec(url.pathname);
    if (req.method === 'POST' && voice) return this.elevenLabs(req, res, url, body);
    if (req.method === 'POST' && url.pathname === '/v1/audio/speech') return this.openAi(req, res, url, body);
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ detail: { status: 'not_found', message: `Unknown path ${req.method} ${url.pathname}` } }));
  }

  private async elevenLabs(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    body: Record<string, unknown>,
  ): Promise<void> {
    const credential = req.headers['xi-api-key'] as string | undefined;
    const request = this.record('elevenlabs', url, credential, body);
    const fail = (status: number, detail: unknown, retryAfterS?: number): void => {
      res.writeHead(status, {
        'content-type': 'application/json',
        ...(retryAfterS !== undefined && { 'retry-after': String(retryAfterS) }),
      });
      res.end(JSON.stringify({ detail }));
    };
    if (credential !== this.options.apiKey) {
      return fail(401, { status: 'invalid_api_key', message: 'Invalid API key' });
    }
    if (typeof body.text !== 'string' || body.text === '') {
      return fail(422, [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }]);
    }
    const format = elevenLabsFormat(url.searchParams.get('output_format'));
    if (!format) {
      return fail(400, { status: 'invalid_output_format', message: 'This output format is not served here.' });
    }
    const failure = this.failures.shift();
    if (failure && 'status' in failure) {
      const status = failure.status === 429 ? 'too_many_concurrent_requests' : 'system_busy';
      return fail(failure.status, { status, message: failure.message ?? 'Scripted failure' }, failure.retryAfterS);
    }
    const pcm = await this.audio(body.text, format.rate);
    const bytes = format.mulaw ? encodeMulaw(pcm) : Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    this.stream(res, request, bytes, failure?.cutAfterChunks);
  }

  private async openAi(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    body: Record<string, unknown>,
  ): Promise<void> {
    const credential = req.headers.authorization;
    const request = this.record('openai', url, credential, body);
    const fail = (
      status: number,
      message: string,
      code: string | null,
      param: string | null = null,
      retryAfterS?: number,
    ): void => {
      res.writeHead(status, {
        'content-type': 'application/json',
        ...(retryAfterS !== undefined && { 'retry-after': String(retryAfterS) }),
      });
      const type = status === 429 ? 'requests' : status >= 500 ? 'server_error' : 'invalid_request_error';
      res.end(JSON.stringify({ error: { message, type, param, code } }));
    };
    if (credential !== `Bearer ${this.options.apiKey}`) {
      return fail(401, 'Incorrect API key provided.', 'invalid_api_key');
    }
    for (const field of ['model', 'input', 'voice'] as const) {
      if (typeof body[field] !== 'string' || body[field] === '') {
        return fail(400, `Missing required parameter: '${field}'.`, 'missing_required_parameter', field);
      }
    }
    if (this.options.openAiAudio === 'wav') {
      const pcm = await this.audio(body.input as string, WAV_RATE);
      // Sizes unknown while streaming: the placeholders a streaming writer puts there.
      const header = wavHeader({ format: WAVE_FORMAT_PCM, sampleRate: WAV_RATE, channels: 1 }, 0xffffffff);
      const bytes = Buffer.concat([header, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength)]);
      return this.stream(res, request, bytes);
    }
    if (body.response_format !== 'pcm') {
      return fail(400, 'This server streams response_format "pcm" only.', null, 'response_format');
    }
    const failure = this.failures.shift();
    if (failure && 'status' in failure) {
      const code = failure.status === 429 ? 'rate_limit_exceeded' : null;
      return fail(failure.status, failure.message ?? 'Scripted failure', code, null, failure.retryAfterS);
    }
    const pcm = await this.audio(body.input as string, OPENAI_RATE);
    this.stream(res, request, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), failure?.cutAfterChunks);
  }

  private record(
    vendor: FakeTtsRequest['vendor'],
    url: URL,
    credential: string | undefined,
    body: Record<string, unknown>,
  ): FakeTtsRequest {
    const request: FakeTtsRequest = {
      vendor,
      path: url.pathname,
      query: url.searchParams,
      credential,
      body,
      chunksSent: 0,
      completed: false,
      disconnectedEarly: false,
    };
    this.requests.push(request);
    return request;
  }

  private async audio(text: string, rate: number): Promise<Int16Array> {
    if (this.options.audio === 'espeak') {
      const chunks: Int16Array[] = [];
      for await (const chunk of new EspeakTts().synthesize({ text, voice: 'en-us', language: 'en-US' })) {
        chunks.push(chunk.pcm);
      }
      return resample(concatPcm(chunks), ESPEAK_SAMPLE_RATE, rate);
    }
    const ms = Math.min(4000, Math.max(300, text.length * 60));
    return tone([440], ms, 8000, rate);
  }

  /**
   * Sends `bytes` in chunks split at odd offsets, headers with the first one, as streaming vendors
   * do; `cutAfterChunks`: the connection breaks after that many chunks instead of ending.
   */
  private stream(res: http.ServerResponse, request: FakeTtsRequest, bytes: Buffer, cutAfterChunks?: number): void {
    const count = Math.max(1, this.options.chunks);
    const bounds = [0];
    for (let i = 1; i < count; i++) bounds.push(Math.min(bytes.length, Math.floor((bytes.length * i) / count) | 1));
    bounds.push(bytes.length);
    res.on('close', () => {
      if (!request.completed) request.disconnectedEarly = true;
    });
    const later = (ms: number, fn: () => void): void => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        fn();
      }, ms);
      this.timers.add(timer);
    };
    const send = (i: number): void => {
      if (res.destroyed) return;
      if (i === 0) res.writeHead(200, { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' });
      res.write(bytes.subarray(bounds[i], bounds[i + 1]));
      request.chunksSent++;
      if (cutAfterChunks !== undefined && request.chunksSent >= cutAfterChunks) {
        later(this.options.chunkIntervalMs, () => res.destroy());
        return;
      }
      if (i + 1 < count) later(this.options.chunkIntervalMs, () => send(i + 1));
      else {
        request.completed = true;
        res.end();
      }
    };
    later(this.options.firstChunkDelayMs, () => send(0));
  }
}
