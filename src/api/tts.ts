/**
 * The hosted API's speech endpoints under /v2, as voice-agent frameworks call them (LiveKit Agents'
 * Bland plugin, pointed at Openline with `base_url`): text spoken by the configured text-to-speech
 * provider, as raw 16-bit little-endian PCM at the rate asked for.
 *
 * - `POST /v2/tts` `{text, voice, audio: {encoding, sample_rate}, controls}`: the audio, streamed as it
 *   is synthesised (`audio/pcm`).
 * - `GET /v2/tts/ws` (websocket, the API key on the upgrade; a wrong one is a 401, not a socket):
 *   `init` (voice, audio format) answered `ready`; then turns, one at a time, each named by its
 *   `context_id`: `speak` sends text as it is written (sentences are spoken as soon as they are
 *   whole), `end_of_turn` says the rest, `cancel` stops it; each turn's audio goes out as binary
 *   messages and ends with `utterance_end` (`complete`, `cancelled` or `failed`). `close` is
 *   answered `done` and ends the session; a minute with no message from the client ends it too
 *   (`idle_timeout`). An account has at most MAX_SESSIONS open (`rate_limited` beyond). Mistakes
 *   are `{"type": "error", "code", "message"}` naming the field.
 *
 * A voice this server lacks speaks in the default voice, as on /v1/speak. `controls`
 * (expressiveness, stability) are accepted and have no effect on the voices here.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { WebSocket } from 'ws';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, StringEnum } from '../schemas/common.js';
import { encodeWav, pcmBytes } from '../media/wav.js';
import { DEFAULT_LANGUAGE } from '../schemas/call.js';
import { DEFAULT_VOICE } from '../domain/voices.js';
import { StreamResampler, concatPcm } from '../media/audio.js';
import { sentenceEnd } from '../media/sentences.js';
import { ApiError } from '../errors.js';
import { errorMessage } from '../domain/records.js';
import { OpenPerAccount } from './open-per-account.js';

const tags = ['Speech'];
export const TTS_SAMPLE_RATES = [8000, 16000, 24000, 44100, 48000] as const;
/** The most text one request, or one turn of a session, says. */
const MAX_TEXT = 5000;
/** Sessions an account may have open at once (in this process). */
export const MAX_SESSIONS = 10;
/** A session with no message from its client for this long is closed. */
const IDLE_MS = 60_000;
/** Audio goes out in pieces of about this long. */
const PIECE_MS = 40;

interface SpeechFormat {
  voice: string;
  sampleRate: number;
}

/**
 * `text` said in `format.voice` by the configured provider, as PCM pieces at `format.sampleRate`
 * (sent() makes each the bytes that go out). Ends early, without error, when `signal` aborts.
 */
async function* spoken(services: Services, text: string, format: SpeechFormat, signal?: AbortSignal) {
  const { tts } = services.speech;
  const voice = services.speech.ttsVoiceFor({ voice: format.voice, language: DEFAULT_LANGUAGE });
  let resampler: StreamResampler | undefined;
  let fromRate = 0;
  const piece = Math.round((format.sampleRate * PIECE_MS) / 1000);
  for await (const chunk of tts.synthesize({ text, voice, language: DEFAULT_LANGUAGE, ...(signal && { signal }) })) {
    if (signal?.aborted) return;
    if (chunk.sampleRate !== fromRate) {
      fromRate = chunk.sampleRate;
      resampler = fromRate === format.sampleRate ? undefined : new StreamResampler(fromRate, format.sampleRate);
    }
    const pcm = resampler ? resampler.push(chunk.pcm) : chunk.pcm;
    for (let at = 0; at < pcm.length; at += piece) yield pcm.subarray(at, at + piece);
  }
}

/** A piece of PCM as it goes out: its little-endian bytes, copied (the socket or stream holds them until sent). */
const sent = (pcm: Int16Array): Buffer => Buffer.from(pcmBytes(pcm));

/** The 503 of a request the text-to-speech provider could not say, naming it and why. */
export function speechFailed(services: Services, error: unknown): ApiError {
  return new ApiError(
    'PROVIDER_UNAVAILABLE',
    `The text-to-speech provider (${services.speech.tts.name}) failed: ${errorMessage(error)}`,
  );
}

/** What is wrong with an audio format and voice, as the hosted API's codes name it; none when right. */
function formatError(audio: unknown, voice: unknown): { code: string; message: string } | undefined {
  if (voice !== undefined && (typeof voice !== 'string' || voice === ''))
    return { code: 'invalid_request', message: 'voice must be a voice id or name' };
  if (audio === undefined) return undefined;
  if (typeof audio !== 'object' || audio === null || Array.isArray(audio))
    return { code: 'invalid_request', message: 'audio must be an object: {encoding, sample_rate}' };
  const {
    encoding,
    sample_rate: rate,
    container,
  } = audio as { encoding?: unknown; sample_rate?: unknown; container?: unknown };
  if (encoding !== undefined && encoding !== 'pcm_s16le')
    return { code: 'unsupported_encoding', message: 'audio.encoding must be pcm_s16le' };
  if (container !== undefined && container !== 'raw')
    return { code: 'invalid_request', message: 'audio.container must be raw: a session sends PCM alone' };
  if (rate !== undefined && !(TTS_SAMPLE_RATES as readonly unknown[]).includes(rate))
    return {
      code: 'unsupported_sample_rate',
      message: `audio.sample_rate must be one of ${TTS_SAMPLE_RATES.join(', ')}`,
    };
  return undefined;
}

function formatOf(audio: unknown, voice: unknown): SpeechFormat {
  const rate = (audio as { sample_rate?: number } | undefined)?.sample_rate;
  return { voice: typeof voice === 'string' ? voice : DEFAULT_VOICE, sampleRate: rate ?? 48000 };
}

const Controls = Type.Object(
  {
    expressiveness: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    stability: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  },
  { description: 'Accepted; no effect on the voices here' },
);
const AudioFormat = Type.Object({
  encoding: Type.Optional(Type.Literal('pcm_s16le')),
  container: Type.Optional(
    StringEnum(['raw', 'wav'] as const, { description: 'raw (default): PCM alone, streamed; wav: one WAV file' }),
  ),
  sample_rate: Type.Optional(
    Type.Union(
      TTS_SAMPLE_RATES.map((r) => Type.Literal(r)),
      { description: 'Hz; default 48000' },
    ),
  ),
});

/** One websocket session: its format once initialised, and the turn under way. */
class TtsSession {
  private format: SpeechFormat | undefined;
  private turn:
    { id: string; text: string; said: number; ended: boolean; started: boolean; abort: AbortController } | undefined;
  /** The turn's sentences, said one after the other. */
  private speaking: Promise<void> = Promise.resolve();
  private idle: NodeJS.Timeout | undefined;
  readonly id = randomUUID();

  constructor(
    private readonly socket: WebSocket,
    private readonly services: Services,
  ) {
    this.touch();
    socket.on('message', (data, binary) => this.onMessage(binary ? null : data.toString()));
    socket.on('close', () => {
      clearTimeout(this.idle);
      this.turn?.abort.abort();
    });
  }

  private touch(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      this.turn?.abort.abort();
      this.error('idle_timeout', 'no message from the client for 60 s: the session is closed');
      this.socket.close(1000, 'idle');
    }, IDLE_MS);
  }

  private send(message: Record<string, unknown>): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(message));
  }

  private error(code: string, message: string, contextId?: string): void {
    this.send({ type: 'error', code, message, ...(contextId !== undefined && { context_id: contextId }) });
  }

  private onMessage(text: string | null): void {
    this.touch();
    let message: Record<string, unknown>;
    try {
      message = text === null ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      return this.error('invalid_message', 'a message must be JSON text');
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message))
      return this.error('invalid_message', 'a message must be a JSON object with a type');
    const type = message.type;
    if (type === 'init') return this.init(message);
    if (type === 'close') {
      this.turn?.abort.abort();
      // `done` once nothing more will be sent, then the socket closes.
      this.send({ type: 'done', session_id: this.id });
      return this.socket.close(1000, 'done');
    }
    if (!this.format) return this.error('init_required', 'send init (voice, audio) first');
    const contextId = message.context_id;
    if (typeof contextId !== 'string' || contextId === '' || contextId.length > 200)
      return this.error('invalid_message', 'context_id must be a string naming the turn');
    if (type === 'speak') return this.speak(contextId, message.text);
    if (type === 'end_of_turn') return this.endTurn(contextId);
    if (type === 'cancel') return this.cancel(contextId);
    return this.error('invalid_message', 'type must be init, speak, end_of_turn, cancel or close');
  }

  private init(message: Record<string, unknown>): void {
    if (this.format) return this.error('already_initialized', 'this session was initialised already');
    const wrong = formatError(message.audio, message.voice);
    if (wrong) return this.error(wrong.code, wrong.message);
    this.format = formatOf(message.audio, message.voice);
    this.send({ type: 'ready', session_id: this.id, encoding: 'pcm_s16le', sample_rate: this.format.sampleRate });
  }

  private speak(contextId: string, text: unknown): void {
    if (typeof text !== 'string') return this.error('invalid_message', 'text must be a string', contextId);
    if (this.turn && this.turn.id !== contextId)
      return this.error('invalid_request', `a turn (${this.turn.id}) is under way: end or cancel it first`, contextId);
    if (this.turn?.ended) return this.error('invalid_request', 'this turn has ended', contextId);
    this.turn ??= { id: contextId, text: '', said: 0, ended: false, started: false, abort: new AbortController() };
    if (this.turn.text.length + text.length > MAX_TEXT)
      return this.error('context_overflow', `a turn says at most ${MAX_TEXT} characters`, contextId);
    this.turn.text += text;
    this.sayWhole(false);
  }

  private endTurn(contextId: string): void {
    const turn = this.turn;
    if (!turn || turn.id !== contextId) {
      // Nothing was said in it: it ends at once.
      if (!turn) this.send({ type: 'utterance_end', context_id: contextId, reason: 'complete' });
      else this.error('invalid_request', `context_id is not the turn under way (${turn.id})`, contextId);
      return;
    }
    turn.ended = true;
    this.sayWhole(true);
    this.speaking = this.speaking.then(() => {
      if (this.turn !== turn) return;
      this.turn = undefined;
      this.send({ type: 'utterance_end', context_id: contextId, reason: 'complete' });
    });
  }

  private cancel(contextId: string): void {
    const turn = this.turn;
    if (turn?.id === contextId) {
      turn.abort.abort();
      this.turn = undefined;
      this.speaking = Promise.resolve();
    }
    this.send({ type: 'utterance_end', context_id: contextId, reason: 'cancelled' });
  }

  /** Says the turn's whole sentences not said yet (and, at its end, the rest). */
  private sayWhole(all: boolean): void {
    const turn = this.turn!;
    for (;;) {
      const rest = turn.text.slice(turn.said);
      let end = sentenceEnd(rest);
      if (end <= 0 && all) end = rest.length;
      if (end <= 0) return;
      turn.said += end;
      const sentence = rest.slice(0, end).trim();
      if (sentence) this.say(turn, sentence);
      if (all && turn.said >= turn.text.length) return;
    }
  }

  private say(turn: NonNullable<TtsSession['turn']>, sentence: string): void {
    const format = this.format!;
    this.speaking = this.speaking.then(async () => {
      if (turn.abort.signal.aborted) return;
      if (!turn.started) this.send({ type: 'utterance_start', context_id: turn.id });
      turn.started = true;
      try {
        for await (const piece of spoken(this.services, sentence, format, turn.abort.signal)) {
          if (turn.abort.signal.aborted || this.socket.readyState !== this.socket.OPEN) return;
          this.socket.send(sent(piece));
        }
      } catch (error) {
        if (turn.abort.signal.aborted) return;
        // The turn fails: the error, then its end, and nothing more of it.
        this.error('synthesis_failed', `the text-to-speech provider failed: ${errorMessage(error)}`, turn.id);
        turn.abort.abort();
        if (this.turn === turn) this.turn = undefined;
        this.send({ type: 'utterance_end', context_id: turn.id, reason: 'failed' });
      }
    });
  }
}

/** POST /v2/tts and the /v2/tts/ws session (the /v2 scope: the API key is checked before either). */
export async function ttsV2(app: Api, services: Services): Promise<void> {
  app.post(
    '/tts',
    {
      schema: {
        tags,
        summary: 'Speak text as raw PCM (v2)',
        description:
          'The text spoken by the configured text-to-speech provider, streamed as it is synthesised: 16-bit ' +
          'little-endian mono PCM (`audio/pcm`) at `audio.sample_rate` (default 48000). A voice this server ' +
          'lacks speaks in the default voice. The websocket `/v2/tts/ws` streams text in and audio out turn by turn.',
        body: Type.Object({
          text: Type.String({ minLength: 1, maxLength: MAX_TEXT }),
          voice: Type.Optional(Type.String({ minLength: 1 })),
          audio: Type.Optional(AudioFormat),
          controls: Type.Optional(Controls),
          auto_formatting: Type.Optional(Type.Boolean({ description: 'Accepted; numbers are read as written' })),
        }),
        response: {
          200: Type.Unsafe<Readable | Buffer>({
            type: 'string',
            format: 'binary',
            description: 'audio/pcm: 16-bit little-endian mono',
          }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const format = formatOf(request.body.audio, request.body.voice);
      const pieces = spoken(services, request.body.text, format);
      reply.header('x-request-id', request.id).header('x-sample-rate', String(format.sampleRate));
      // The first piece before the answer: a provider that cannot speak is a 503, not an empty 200.
      let first: IteratorResult<Int16Array>;
      try {
        first = await pieces.next();
      } catch (error) {
        throw speechFailed(services, error);
      }
      if (request.body.audio?.container === 'wav') {
        const all: Int16Array[] = first.done ? [] : [first.value];
        try {
          for await (const piece of pieces) all.push(piece);
        } catch (error) {
          throw speechFailed(services, error);
        }
        return reply.type('audio/wav').send(encodeWav(concatPcm(all), { sampleRate: format.sampleRate }));
      }
      async function* all() {
        if (!first.done) yield sent(first.value);
        try {
          for await (const piece of pieces) yield sent(piece);
        } catch (error) {
          request.log.warn({ err: error }, 'text to speech failed mid-stream');
        }
      }
      return reply.type('audio/pcm').send(Readable.from(all()));
    },
  );

  // Sessions open per account: each may keep the voice busy, so an account has a few at once.
  const sessions = new OpenPerAccount(MAX_SESSIONS);
  app.get('/tts/ws', { schema: { hide: true }, websocket: true }, (socket: WebSocket, request) => {
    const release = sessions.take(request.account.id);
    if (!release) {
      socket.send(
        JSON.stringify({
          type: 'error',
          code: 'rate_limited',
          message: `an account has at most ${MAX_SESSIONS} sessions open at once: close one first`,
        }),
      );
      return socket.close(1013, 'too many sessions');
    }
    socket.on('close', release);
    new TtsSession(socket, services);
  });
}
