/**
 * What every provider (language model, speech to text, text to speech) throws when it cannot do its
 * work: `retryable` says whether the same request may succeed later (a timeout, 429, 5xx, a dropped
 * connection), `status` is the vendor's HTTP status if there was one.
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, options);
    this.name = new.target.name;
    this.retryAfterMs = options?.retryAfterMs;
  }

  /** How long the vendor asked us to wait before trying again (Retry-After), if it said. */
  readonly retryAfterMs: number | undefined;
}
