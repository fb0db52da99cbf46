import type { Services } from '../services.js';
import type { Account } from '../store/accounts.js';

/** The API key of an authorization header, with or without its `Bearer ` prefix. */
export function bearerless(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const trimmed = value.trim();
  return /^bearer\s+/i.test(trimmed) ? trimmed.replace(/^bearer\s+/i, '') : trimmed;
}

/**
 * The account of an API key: from the cache of keys verified moments ago (no promise round trip,
 * so the API's hook stays synchronous on the hot path), else verified against storage.
 */
export function accountOfKey(
  accounts: Pick<Services['accounts'], 'recentlyVerified' | 'authenticate'>,
  key: string,
): Account | undefined | Promise<Account | undefined> {
  return accounts.recentlyVerified(key) ?? accounts.authenticate(key);
}
