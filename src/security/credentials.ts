import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import type { CarrierCredential } from '../schemas/account.js';

/** The `encrypted_key` header's value; a blank header counts as absent, like a blank API key. */
export function encryptedKeyHeader(request: FastifyRequest): string | undefined {
  const raw = request.headers.encrypted_key;
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  return value ? value : undefined;
}

/**
 * The carrier credentials selected by the `encrypted_key` header (seed section 5): undefined when
 * the header is absent (service-owned numbers), the decrypted credentials when the reference
 * belongs to the caller's account, else a 400. Another account's reference is reported exactly
 * like an unknown one, so references cannot be probed across accounts.
 */
export async function credentialFromHeader(
  request: FastifyRequest,
  services: Pick<Services, 'credentials'>,
): Promise<(CarrierCredential & { encrypted_key: string }) | undefined> {
  const encryptedKey = encryptedKeyHeader(request);
  if (encryptedKey === undefined) return undefined;
  const credential = await services.credentials.resolve(request.account.id, encryptedKey);
  if (!credential) {
    throw new ApiError(
      'UNKNOWN_ENCRYPTED_KEY',
      'Unknown encrypted_key: register carrier credentials with POST /v1/accounts and send the encrypted_key it returns',
    );
  }
  return { ...credential, encrypted_key: encryptedKey };
}
