import crypto from 'node:crypto';

/**
 * Webhook signatures (CONTRACT.md section 8). Every webhook carries two independent signatures
 * over the exact bytes of its body:
 *
 * - `X-Webhook-Signature`: hex HMAC-SHA256 of the body, keyed with the account's webhook secret as
 *   text (the whole string, `whsec_` prefix included): the hosted service's convention.
 * - Standard Webhooks (https://www.standardwebhooks.com): `webhook-id` (stable per message, the
 *   same on every retry), `webhook-timestamp` (unix seconds of this attempt) and
 *   `webhook-signature` = `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`. As that
 *   spec says, the key is the secret's bytes after `whsec_`, base64-decoded (Openline's secrets
 *   are `whsec_` + base64 of 24 random bytes), so the official Standard Webhooks libraries verify
 *   it unchanged. A secret without the prefix is used as its UTF-8 bytes.
 */

export function signatureKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret);
}

export function webhookHeaders(
  secret: string,
  message: { id: string; timestamp: number; body: string },
): Record<string, string> {
  const { id, timestamp, body } = message;
  const standard = crypto
    .createHmac('sha256', signatureKey(secret))
    .update(`${id}.${timestamp}.${body}`)
    .digest('base64');
  return {
    'content-type': 'application/json',
    'x-webhook-signature': crypto.createHmac('sha256', secret).update(body).digest('hex'),
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${standard}`,
  };
}

/**
 * What a receiver does (copy the logic): checks both signatures of a webhook against the raw
 * body (before any JSON parsing) in constant time, and refuses a timestamp more than
 * `toleranceSeconds` from now (replays). Header names are matched case-insensitively.
 */
export function verifyWebhook(
  headers: Record<string, string | string[] | undefined>,
  body: string,
  secret: string,
  options: { toleranceSeconds?: number; now?: Date } = {},
): boolean {
  const header = (name: string): string | undefined => {
    const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
    return Array.isArray(found) ? found[0] : found;
  };
  const hex = header('x-webhook-signature');
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!hex || !id || !timestamp || !signatures) return false;
  const seconds = Number(timestamp);
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (!Number.isInteger(seconds) || Math.abs(now - seconds) > (options.toleranceSeconds ?? 300)) return false;
  const expectedHex = crypto.createHmac('sha256', secret).update(body).digest('hex');
  if (!same(hex, expectedHex)) return false;
  const expected = crypto
    .createHmac('sha256', signatureKey(secret))
    .update(`${id}.${timestamp}.${body}`)
    .digest('base64');
  // The header may list several space-separated signatures (during a secret rotation): one must match.
  return signatures.split(' ').some((item) => item.startsWith('v1,') && same(item.slice(3), expected));
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}
