// The SDK's webhook signatures alone: its index loads its whole REST client.
import { getExpectedTwilioSignature, validateRequest } from 'twilio/lib/webhooks/webhooks.js';

/** Form parameters of a webhook, as Twilio signed them (repeated keys keep every value). */
export type TwilioParams = Record<string, string | string[]>;

/**
 * The URL Twilio called, as it signed it: the public URL Openline is configured with (Twilio
 * reaches us through it, whatever proxy sits in front, and whatever path the proxy strips) plus
 * the path and query of the request. Every URL Openline gives Twilio is built with this too.
 */
export function signedUrl(publicUrl: string, requestUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}${requestUrl}`;
}

/**
 * Whether `signature` (the X-Twilio-Signature header) is Twilio's HMAC-SHA1 of `url` and the
 * sorted POST parameters under `authToken`. The SDK also accepts the URL with and without an
 * explicit port, as Twilio may have signed either.
 */
export function isValidTwilioSignature(
  authToken: string,
  signature: string | undefined,
  url: string,
  params: TwilioParams,
): boolean {
  if (!signature) return false;
  try {
    return validateRequest(authToken, signature, url, params);
  } catch {
    return false;
  }
}

/** The X-Twilio-Signature Twilio would send for this request (the emulator signs with it). */
export function twilioSignature(authToken: string, url: string, params: TwilioParams): string {
  return getExpectedTwilioSignature(authToken, url, params);
}
