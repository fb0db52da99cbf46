/**
 * OpenAI speech (`POST /v1/audio/speech`) through the official SDK, as raw PCM so that audio can be
 * played while the rest is synthesised. Any OpenAI-compatible speech server works by base URL.
 */
import OpenAI from 'openai';
import { pcmFromBody } from './pcm-stream.js';
import { Watchdog } from '../base.js';
import { fromOpenAiSdk } from '../openai-errors.js';
import { TtsError, type PcmChunk, type TtsProvider, type TtsRequest } from './types.js';

/** `response_format: "pcm"` is 24 kHz 16-bit little-endian mono without a header. */
export const OPENAI_PCM_SAMPLE_RATE = 24000;

export interface OpenAiTtsOptions {
  /** OPENAI_API_KEY; local compatible servers accept any key, and the SDK insists on one. */
  apiKey: string | undefined;
  /** An OpenAI-compatible endpoint ending in /v1; undefined = api.openai.com. */
  baseUrl: string | undefined;
  /** Speech model, e.g. gpt-4o-mini-tts or tts-1. */
  model: string;
  /** Longest wait for the first audio, and then between two pieces of audio. Default 10000. */
  timeoutMs?: number;
  /** Retries by the SDK itself. Default 0: the TTS cache retries what failed before any audio (src/providers/base.ts). */
  maxRetries?: number;
}

/** Maps what the SDK throws to a TtsError that keeps whether a retry could help; `apiKey` is never quoted. */
function toTtsError(error: unknown, apiKey: string | undefined): TtsError {
  return fromOpenAiSdk(error, TtsError, { vendor: 'OpenAI speech', keyHint: 'check OPENAI_API_KEY', apiKey });
}

export class OpenAiTts implements TtsProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly timeoutMs: number;

  constructor(private readonly options: OpenAiTtsOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.client = new OpenAI({
      apiKey: options.apiKey ?? 'unused',
      ...(options.baseUrl ? { baseURL: options.baseUrl } : {}),
      timeout: this.timeoutMs,
      maxRetries: options.maxRetries ?? 0,
    });
  }

  async *synthesize(request: TtsRequest): AsyncGenerator<PcmChunk> {
    const { signal } = request;
    if (signal?.aborted || request.text.trim() === '') return;
    // The SDK's timeout ends at the response headers; the watchdog also covers a body that stalls.
    const watchdog = new Watchdog(this.timeoutMs);
    try {
      let response: Response;
      try {
        response = await this.client.audio.speech.create(
          { model: this.options.model, input: request.text, voice: request.voice, response_format: 'pcm' },
          { signal: signal ? AbortSignal.any([signal, watchdog.signal]) : watchdog.signal },
        );
      } catch (error) {
        if (signal?.aborted) return;
        if (watchdog.fired)
          throw new TtsError('OpenAI speech did not answer in time', true, undefined, { cause: error });
        throw toTtsError(error, this.options.apiKey);
      }
      if (!response.body) throw new TtsError('OpenAI speech answered without audio', true);
      yield* pcmFromBody(response.body, {
        vendor: 'OpenAI speech',
        sampleRate: OPENAI_PCM_SAMPLE_RATE,
        encoding: 'pcm16',
        signal,
        watchdog,
        wavAllowed: true,
      });
    } finally {
      watchdog.pause();
    }
  }
}
