/**
 * ElevenLabs streaming speech over its HTTP API: `POST {base}/v1/text-to-speech/{voice_id}/stream`
 * with `xi-api-key`, raw PCM (or mu-law 8 kHz, the telephone's own format) streamed back in chunks.
 */
import { pcmFromBody } from './pcm-stream.js';
import { Watchdog, retryAfter, retryableStatus, withoutSecret } from '../base.js';
import { TtsError, type PcmChunk, type TtsProvider, type TtsRequest } from './types.js';

/** The raw output formats this provider reads: PCM at a rate, or G.711 mu-law at 8 kHz. */
export const ELEVENLABS_OUTPUT_FORMATS = [
  'pcm_8000',
  'pcm_16000',
  'pcm_22050',
  'pcm_24000',
  'pcm_44100',
  'ulaw_8000',
] as const;
export type ElevenLabsOutputFormat = (typeof ELEVENLABS_OUTPUT_FORMATS)[number];

export interface ElevenLabsOptions {
  /** ELEVENLABS_API_KEY, sent as `xi-api-key`. */
  apiKey: string;
  /** Default https://api.elevenlabs.io. */
  baseUrl?: string;
  /** Default eleven_flash_v2_5, ElevenLabs' lowest-latency multilingual model. */
  model?: string;
  /** Default pcm_16000. */
  outputFormat?: ElevenLabsOutputFormat;
  /** Longest wait for the first audio, and then between two pieces of audio. Default 10000. */
  timeoutMs?: number;
}

/** ElevenLabs errors are `{"detail": {"status", "message"}}`, or a list of validation problems. */
function errorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { detail?: unknown };
    const detail = parsed.detail;
    if (typeof detail === 'string') return detail;
    if (Array.isArray(detail)) {
      return detail.map((d: { msg?: unknown }) => (typeof d?.msg === 'string' ? d.msg : JSON.stringify(d))).join('; ');
    }
    if (detail && typeof detail === 'object') {
      const { message, status } = detail as { message?: unknown; status?: unknown };
      if (typeof message === 'string') return typeof status === 'string' ? `${status}: ${message}` : message;
    }
  } catch {
    // not JSON: the text itself says what went wrong
  }
  return body.slice(0, 300) || 'no message';
}

export class ElevenLabsTts implements TtsProvider {
  readonly name = 'elevenlabs';
  private readonly baseUrl: string;
  private readonly model: string;
  private readonly outputFormat: ElevenLabsOutputFormat;
  private readonly timeoutMs: number;

  constructor(private readonly options: ElevenLabsOptions) {
    // The API's version is part of each path here: a base written with it must not repeat it.
    this.baseUrl = (options.baseUrl ?? 'https://api.elevenlabs.io').replace(/\/+$/, '').replace(/\/v1$/, '');
    this.model = options.model ?? 'eleven_flash_v2_5';
    this.outputFormat = options.outputFormat ?? 'pcm_16000';
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  async *synthesize(request: TtsRequest): AsyncGenerator<PcmChunk> {
    const { signal } = request;
    if (signal?.aborted || request.text.trim() === '') return;
    const url = `${this.baseUrl}/v1/text-to-speech/${encodeURIComponent(request.voice)}/stream?output_format=${this.outputFormat}`;
    const watchdog = new Watchdog(this.timeoutMs);
    try {
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { 'xi-api-key': this.options.apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ text: request.text, model_id: this.model }),
          signal: signal ? AbortSignal.any([signal, watchdog.signal]) : watchdog.signal,
        });
      } catch (error) {
        if (signal?.aborted) return;
        if (watchdog.fired) throw new TtsError('ElevenLabs did not answer in time', true, undefined, { cause: error });
        const message = error instanceof Error ? error.message : String(error);
        throw new TtsError(`Cannot reach ElevenLabs: ${message}`, true, undefined, { cause: error });
      }
      if (!response.ok) {
        const body = await response.text().catch(() => '');
        const hint = response.status === 401 ? ' (check ELEVENLABS_API_KEY)' : '';
        throw new TtsError(
          `ElevenLabs answered ${response.status}${hint}: ${withoutSecret(errorMessage(body), this.options.apiKey)}`,
          retryableStatus(response.status),
          response.status,
          { retryAfterMs: retryAfter(response.headers) },
        );
      }
      if (!response.body) throw new TtsError('ElevenLabs answered without audio', true);
      const [encoding, rate] = this.outputFormat.split('_') as [string, string];
      yield* pcmFromBody(response.body, {
        vendor: 'ElevenLabs',
        sampleRate: Number(rate),
        encoding: encoding === 'ulaw' ? 'mulaw' : 'pcm16',
        signal,
        watchdog,
      });
    } finally {
      watchdog.pause();
    }
  }
}
