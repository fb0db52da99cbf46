import { createHash, randomBytes } from 'node:crypto';

/**
 * HTTP digest authentication as SIP uses it (RFC 3261 section 22, RFC 2617; MD5 and SHA-256 of
 * RFC 8760): the Authorization or Proxy-Authorization value answering a 401 or 407 challenge.
 */
export interface Challenge {
  realm: string;
  nonce: string;
  opaque?: string;
  algorithm: 'MD5' | 'SHA-256';
  qop?: 'auth';
}

/** Reads a WWW-Authenticate / Proxy-Authenticate value; undefined when it is not a digest we can answer. */
export function parseChallenge(value: string | undefined): Challenge | undefined {
  if (!value || !/^digest\s/i.test(value)) return undefined;
  const fields: Record<string, string> = {};
  for (const match of value.slice(6).matchAll(/([a-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/gi))
    fields[match[1]!.toLowerCase()] = match[2] ?? match[3] ?? '';
  if (fields.realm === undefined || !fields.nonce) return undefined;
  const algorithm = (fields.algorithm ?? 'MD5').toUpperCase();
  if (algorithm !== 'MD5' && algorithm !== 'SHA-256') return undefined;
  const qops = (fields.qop ?? '').split(',').map((q) => q.trim().toLowerCase());
  if (fields.qop !== undefined && !qops.includes('auth')) return undefined;
  return {
    realm: fields.realm,
    nonce: fields.nonce,
    ...(fields.opaque !== undefined && { opaque: fields.opaque }),
    algorithm,
    ...(qops.includes('auth') && { qop: 'auth' as const }),
  };
}

/**
 * The header that answers a 401 (Authorization) or 407 (Proxy-Authorization) digest challenge
 * with `credentials`, for a new request of `method` to `uri`; undefined when the response is not
 * such a challenge, not a digest we can answer, or there are no credentials.
 */
export function answerChallenge(
  response: { status: number; headers: Map<string, string[]> },
  credentials: { username?: string | undefined; password?: string | undefined } | undefined,
  request: { method: string; uri: string },
): { name: string; value: string } | undefined {
  if (response.status !== 401 && response.status !== 407) return undefined;
  const proxy = response.status === 407;
  // Several challenges (RFC 8760: SHA-512-256, SHA-256, MD5, most preferred first): the first we can answer.
  const challenge = (response.headers.get(proxy ? 'proxy-authenticate' : 'www-authenticate') ?? [])
    .map(parseChallenge)
    .find((c) => c !== undefined);
  const { username, password } = credentials ?? {};
  if (!challenge || username === undefined || password === undefined) return undefined;
  return {
    name: proxy ? 'proxy-authorization' : 'authorization',
    value: digestAuthorization(challenge, { username, password }, request),
  };
}

export function digestAuthorization(
  challenge: Challenge,
  credentials: { username: string; password: string },
  request: { method: string; uri: string },
  nc = 1,
): string {
  const hash = (text: string) =>
    createHash(challenge.algorithm === 'MD5' ? 'md5' : 'sha256')
      .update(text)
      .digest('hex');
  const ha1 = hash(`${credentials.username}:${challenge.realm}:${credentials.password}`);
  const ha2 = hash(`${request.method}:${request.uri}`);
  const count = nc.toString(16).padStart(8, '0');
  const cnonce = randomBytes(8).toString('hex');
  const response = challenge.qop
    ? hash(`${ha1}:${challenge.nonce}:${count}:${cnonce}:auth:${ha2}`)
    : hash(`${ha1}:${challenge.nonce}:${ha2}`);
  const parts = [
    `username="${credentials.username}"`,
    `realm="${challenge.realm}"`,
    `nonce="${challenge.nonce}"`,
    `uri="${request.uri}"`,
    `response="${response}"`,
    `algorithm=${challenge.algorithm}`,
    ...(challenge.qop ? [`qop=auth`, `nc=${count}`, `cnonce="${cnonce}"`] : []),
    ...(challenge.opaque !== undefined ? [`opaque="${challenge.opaque}"`] : []),
  ];
  return `Digest ${parts.join(', ')}`;
}
