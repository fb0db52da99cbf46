import { lookup } from 'node:dns/promises';
import net from 'node:net';

/**
 * Which IP addresses Openline refuses to send requests to (CONTRACT.md section 8): anything that
 * is not a public unicast address, so that a user-supplied URL cannot reach the host itself, the
 * private network it sits in, or a cloud metadata service. Parsed by hand (no dependency) so that
 * every textual form of an address (IPv4-mapped, NAT64, 6to4, compressed IPv6) is classified by
 * its bytes, never by its spelling.
 */

interface Range {
  bytes: number[];
  bits: number;
  reason: string;
}

const V4_RANGES: Range[] = [
  v4('0.0.0.0', 8, 'unspecified'),
  v4('10.0.0.0', 8, 'private'),
  v4('100.64.0.0', 10, 'carrier-grade NAT'),
  v4('127.0.0.0', 8, 'loopback'),
  v4('169.254.0.0', 16, 'link-local'),
  v4('172.16.0.0', 12, 'private'),
  v4('192.0.0.0', 24, 'reserved'),
  v4('192.0.2.0', 24, 'reserved (documentation)'),
  v4('192.88.99.0', 24, 'reserved'),
  v4('192.168.0.0', 16, 'private'),
  v4('198.18.0.0', 15, 'reserved (benchmarking)'),
  v4('198.51.100.0', 24, 'reserved (documentation)'),
  v4('203.0.113.0', 24, 'reserved (documentation)'),
  v4('224.0.0.0', 4, 'multicast'),
  // 240/4 is reserved and includes 255.255.255.255 (broadcast).
  v4('240.0.0.0', 4, 'reserved or broadcast'),
];

const V6_RANGES: Range[] = [
  v6('::', 128, 'unspecified'),
  v6('::1', 128, 'loopback'),
  v6('100::', 64, 'reserved (discard)'),
  v6('2001:db8::', 32, 'reserved (documentation)'),
  v6('fc00::', 7, 'private (unique local)'),
  v6('fe80::', 10, 'link-local'),
  v6('fec0::', 10, 'reserved (site-local)'),
  v6('ff00::', 8, 'multicast'),
];

/**
 * IPv6 forms that carry an IPv4 address: the IPv4 address decides. Mapped (::ffff:a.b.c.d),
 * translated (::ffff:0:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48), 6to4
 * (2002:abcd:efgh::). Teredo (2001::/32) hides its address and is refused outright.
 */
function embeddedV4(b: number[]): number[] | undefined {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12);
  // IPv4-translated (::ffff:0:a.b.c.d, RFC 2765).
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return b.slice(12);
  if (zero(0, 12)) return b.slice(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) {
    if (zero(4, 12)) return b.slice(12);
    if (b[4] === 0x00 && b[5] === 0x01) return b.slice(12);
  }
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6);
  return undefined;
}

/** Why `ip` (a literal IPv4 or IPv6 address) may not be contacted, or null when it is public. */
export function blockedReason(ip: string): string | null {
  const address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const version = net.isIP(address.split('%')[0] ?? '');
  if (version === 4) return match(parseV4(address), V4_RANGES);
  if (version !== 6) return 'not an IP address';
  const bytes = parseV6(address.split('%')[0] ?? '');
  // :: and ::1 are themselves in the compatible range: classify them first.
  const own = match(bytes, V6_RANGES);
  if (own) return own;
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] === 0x00 && bytes[3] === 0x00) return 'Teredo tunnel';
  const inner = embeddedV4(bytes);
  if (inner) {
    const reason = match(inner, V4_RANGES);
    return reason ? `${reason} (embedded IPv4)` : null;
  }
  return null;
}

function match(bytes: number[], ranges: Range[]): string | null {
  for (const range of ranges) {
    let bits = range.bits;
    let ok = true;
    for (let i = 0; bits > 0 && ok; i++, bits -= 8) {
      const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
      ok = ((bytes[i] ?? 0) & mask) === ((range.bytes[i] ?? 0) & mask);
    }
    if (ok) return range.reason;
  }
  return null;
}

function parseV4(address: string): number[] {
  return address.split('.').map(Number);
}

/** 16 bytes of an IPv6 address (net.isIP has validated it), including a trailing dotted IPv4 part. */
function parseV6(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const [a, b, c, d] = parseV4(dotted[1]) as [number, number, number, number];
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const words = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  return words.flatMap((w) => [(w >> 8) & 0xff, w & 0xff]);
}

function v4(address: string, bits: number, reason: string): Range {
  return { bytes: parseV4(address), bits, reason };
}

function v6(address: string, bits: number, reason: string): Range {
  return { bytes: parseV6(address), bits, reason };
}

/** An address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

export interface AddressCheck {
  /** OPENLINE_ALLOW_PRIVATE_URLS: every address goes. */
  allowPrivate?: boolean;
  /** Resolves a name to all its addresses (default: the system's resolver; tests map test names). */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Why an address is refused, or null (default: blockedReason). Tests let their loopback server through. */
  blocked?: (address: string) => string | null;
}

/** The system's resolver, every address of a name in the order it gives them. */
export const systemResolve = (hostname: string): Promise<ResolvedAddress[]> =>
  lookup(hostname, { all: true, verbatim: true });

/**
 * The one check of where Openline may connect for a host it was given (a URL's, a SIP trunk's or
 * redirect's): the addresses `host` (a name or a literal address, IPv6 maybe in brackets) resolves
 * to when every one may be contacted, else why not: it did not resolve, or an address is blocked.
 * The caller then connects to an address checked here, never resolving the name again.
 */
export async function checkedAddresses(
  host: string,
  options: AddressCheck = {},
): Promise<{ addresses: ResolvedAddress[] } | { refused: string; kind: 'unresolved' | 'blocked' }> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const literal = net.isIP(bare);
  let addresses: ResolvedAddress[];
  try {
    addresses = literal ? [{ address: bare, family: literal }] : await (options.resolve ?? systemResolve)(bare);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { refused: `${bare} did not resolve${code ? `: ${code}` : ''}`, kind: 'unresolved' };
  }
  if (addresses.length === 0) return { refused: `${bare} did not resolve`, kind: 'unresolved' };
  if (!options.allowPrivate)
    for (const { address } of addresses) {
      const reason = (options.blocked ?? blockedReason)(address);
      if (reason)
        return {
          refused: `${literal ? address : `${bare} resolves to ${address}`}: ${reason} addresses are not allowed`,
          kind: 'blocked',
        };
    }
  return { addresses };
}
