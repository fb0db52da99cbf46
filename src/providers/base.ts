/**
 * What every provider (language model, speech to text, text to speech) shares: one error type that
 * says whether trying again could help, which HTTP statuses are worth a retry, a watchdog for
 * streams that stall, and retries with backoff of a stream that failed before it produced
 * anything. Vendor files stay thin: they map their failures to ProviderError and nothing more.
 */
import { ProviderError } from './errors.js';

export { ProviderError };

/** 408, 409, 429, 5xx and no status at all (the connection broke) may succeed later. */
export function retryableStatus(status: number | undefined): boolean {
  return status === undefined || status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * How long a vendor asked us to wait before trying again, in milliseconds from now: OpenAI's
 * `retry-after-ms`, else `Retry-After` as seconds or an HTTP date; undefined when it did not say.
 */
export function retryAfter(headers: { get(name: string): string | null }): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/**
 * A vendor's own words (an error message or body) made safe to show and log: the key we sent is
 * cut out wherever the vendor quoted it, and so is a key it quoted masked (OpenAI's
 * `sk-ab******wxyz`), whose ends are still part of a secret.
 */
export function withoutSecret(text: string, secret: string | undefined): string {
  const unquoted = secret && secret.length >= 4 ? text.split(secret).join('[redacted]') : text;
  return unquoted.replace(/[\w-]*\*{3,}[\w-]*/g, '[redacted]');
}

/**
 * Aborts `signal` once `ms` pass without progress: a vendor that accepts the request and then
 * stalls must not hold an agent's turn forever. It runs only while we wait on the vendor, never
 * while the consumer holds a chunk; its owner pauses it when done.
 */
export class Watchdog {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly ms: number) {
    this.resume();
  }

  get fired(): boolean {
    return this.signal.aborted;
  }

  /** Starts the wait again from now. */
  resume(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.controller.abort(), this.ms);
  }

  pause(): void {
    clearTimeout(this.timer);
  }
}

export interface RetryOptions {
  /** Tries after the first one. */
  retries: number;
  /** Wait before the first retry; each next one waits twice as long. */
  backoffMs: number;
  /** No retry that would start later than this after the first try began (a caller is waiting). */
  withinMs: number;
  /** No retry (and no wait) once this is aborted. */
  signal?: AbortSignal | undefined;
  /** Told before each retry (logs, metrics). */
  onRetry?: (error: ProviderError, attempt: number) => void;
}

/**
 * Iterates `open()`'s stream; when it fails with a retryable ProviderError before its first item,
 * opens it again after a backoff, up to `retries` times. Once an item went out a failure is final:
 * the consumer has used what came (words spoken, audio played) and a second stream would repeat it.
 */
export async function* withRetries<T>(open: () => AsyncIterable<T>, options: RetryOptions): AsyncGenerator<T> {
  const began = performance.now();
  for (let attempt = 0; ; attempt++) {
    let produced = false;
    try {
      for await (const item of open()) {
        produced = true;
        yield item;
      }
      return;
    } catch (error) {
      if (produced || attempt >= options.retries || !(error instanceof ProviderError) || !error.retryable) throw error;
      // The vendor's Retry-After when it gave one, else the backoff.
      const wait = error.retryAfterMs ?? options.backoffMs * 2 ** attempt;
      if (options.signal?.aborted || performance.now() - began + wait > options.withinMs) throw error;
      options.onRetry?.(error, attempt + 1);
      await sleep(wait, options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
}

/** One request (opening a stream, say) under the same rules as withRetries: `attempt()` again while it fails retryably. */
export async function retrying<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  const once = async function* (): AsyncGenerator<T> {
    yield await attempt();
  };
  for await (const value of withRetries(once, options)) return value;
  throw new Error('retrying: the attempt produced nothing');
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
