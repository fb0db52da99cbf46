/**
 * What the official `openai` SDK throws, as a ProviderError of the caller's kind that keeps whether
 * a retry could help: one mapping for the language model and OpenAI speech.
 */
import OpenAI from 'openai';
import { retryAfter, retryableStatus, withoutSecret, type ProviderError } from './base.js';
import { errorMessage } from '../domain/records.js';

type ErrorKind<E extends ProviderError> = new (
  message: string,
  retryable: boolean,
  status?: number,
  options?: { cause?: unknown; retryAfterMs?: number },
) => E;

/**
 * `vendor` names the service in messages ("OpenAI speech", "the language model"); `keyHint` is
 * added to a 401 ("check OPENAI_API_KEY"). `timedOut`: our own deadline fired. `apiKey`, the key
 * sent, never appears in the message, even where the vendor quoted it.
 */
export function fromOpenAiSdk<E extends ProviderError>(
  error: unknown,
  kind: ErrorKind<E>,
  options: { vendor: string; keyHint?: string; timedOut?: boolean; apiKey?: string | undefined },
): E {
  const { vendor } = options;
  const Vendor = vendor.charAt(0).toUpperCase() + vendor.slice(1);
  if (options.timedOut || error instanceof OpenAI.APIConnectionTimeoutError)
    return new kind(`${Vendor} did not answer in time`, true, undefined, { cause: error });
  if (error instanceof kind) return error;
  if (error instanceof OpenAI.APIUserAbortError)
    return new kind('The request was cancelled', false, undefined, { cause: error });
  if (error instanceof OpenAI.APIConnectionError)
    return new kind(`Cannot reach ${vendor}: ${error.message}`, true, undefined, { cause: error });
  if (error instanceof OpenAI.APIError) {
    const status = error.status;
    const hint = status === 401 && options.keyHint ? ` (${options.keyHint})` : '';
    const retryAfterMs = error.headers ? retryAfter(error.headers) : undefined;
    // The SDK's message is the status, then the vendor's words.
    const words = withoutSecret(error.message.replace(new RegExp(`^${status} `), ''), options.apiKey);
    // No `cause`: the SDK's error keeps the vendor's words as they came, and logs print causes.
    return new kind(`${Vendor} answered ${status ?? 'an error'}${hint}: ${words}`, retryableStatus(status), status, {
      ...(retryAfterMs !== undefined && { retryAfterMs }),
    });
  }
  const message = withoutSecret(errorMessage(error), options.apiKey);
  return new kind(`${Vendor} failed: ${message}`, false, undefined, { cause: error });
}
