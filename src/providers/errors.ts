/**
 * What every speech provider throws when it cannot do its work: `retryable` says whether the same
 * request may succeed later (a timeout, 429, 5xx, a dropped connection), `status` is the vendor's
 * HTTP status if there was one.
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}
