/**
 * SIP messages (RFC 3261 section 7): parsing what arrives and writing what we send. The parser
 * takes any bytes and returns a message or undefined: malformed input never throws.
 */

export interface SipRequest {
  kind: 'request';
  method: string;
  uri: string;
  headers: Headers;
  body: string;
}

export interface SipResponse {
  kind: 'response';
  status: number;
  reason: string;
  headers: Headers;
  body: string;
}

export type SipMessage = SipRequest | SipResponse;

/** Header names in lower case, each with its values in order (a comma list stays one value). */
export type Headers = Map<string, string[]>;

/** RFC 3261 section 7.3.3: the compact forms. */
const COMPACT: Record<string, string> = {
  i: 'call-id',
  m: 'contact',
  e: 'content-encoding',
  l: 'content-length',
  c: 'content-type',
  f: 'from',
  s: 'subject',
  k: 'supported',
  t: 'to',
  v: 'via',
  x: 'session-expires',
};

/** The largest message we accept: UDP datagrams are smaller; on TCP and TLS a larger one drops the connection. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
const MAX_HEADERS = 200;

export function parseMessage(data: Buffer | string): SipMessage | undefined {
  if (data.length > MAX_MESSAGE_BYTES) return undefined;
  const text = typeof data === 'string' ? data : data.toString('utf8');
  const split = text.indexOf('\r\n\r\n');
  const head = split < 0 ? text : text.slice(0, split);
  let body = split < 0 ? '' : text.slice(split + 4);
  // Header folding (obsolete, still legal): a line starting with white space continues the last.
  const lines = head.replace(/\r\n[ \t]+/g, ' ').split('\r\n');
  const start = lines.shift()?.trim();
  if (!start) return undefined;
  const headers: Headers = new Map();
  if (lines.length > MAX_HEADERS) return undefined;
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const raw = line.slice(0, colon).trim().toLowerCase();
    if (!/^[a-z0-9!%'*+._`~-]+$/.test(raw)) return undefined;
    const name = COMPACT[raw] ?? raw;
    const value = line.slice(colon + 1).trim();
    // Via, Contact, Route and Record-Route may carry several values separated by commas.
    const values = MULTI.has(name) ? splitList(value) : [value];
    headers.set(name, [...(headers.get(name) ?? []), ...values]);
  }
  const length = headers.get('content-length')?.[0];
  if (length !== undefined) {
    const n = Number(length);
    const bytes = Buffer.from(body, 'utf8');
    // Shorter than it says: cut short on the way (RFC 3261 section 18.3).
    if (!Number.isInteger(n) || n < 0 || bytes.length < n) return undefined;
    body = bytes.subarray(0, n).toString('utf8');
  }
  const response = /^SIP\/2\.0\s+(\d{3})\s*(.*)$/i.exec(start);
  if (response) return { kind: 'response', status: Number(response[1]), reason: response[2] ?? '', headers, body };
  const request = /^([A-Z]+)\s+(\S+)\s+SIP\/2\.0$/i.exec(start);
  if (!request) return undefined;
  const message: SipRequest = { kind: 'request', method: request[1]!.toUpperCase(), uri: request[2]!, headers, body };
  // The headers every request needs (RFC 3261 section 8.1.1).
  for (const name of ['via', 'from', 'to', 'call-id', 'cseq']) if (!message.headers.get(name)?.[0]) return undefined;
  // CSeq: a number below 2**31 and the request's own method (section 8.1.1.5; an ACK that names
  // its INVITE's is let through); anything else is a 400.
  const cseq = cseqOf(message);
  if (!cseq || cseq.seq >= 2 ** 31) return undefined;
  if (cseq.method !== message.method && !(message.method === 'ACK' && cseq.method === 'INVITE')) return undefined;
  return message;
}

const MULTI = new Set(['via', 'contact', 'route', 'record-route']);

/**
 * What a 400 Bad Request needs from a request parseMessage refused (a header line without a
 * colon, a bad Content-Length, a body shorter than it says): its start line and the Via, From,
 * To, Call-ID and CSeq it has; undefined when not even the start line, Via, Call-ID and CSeq can
 * be read.
 */
export function readBadRequest(data: Buffer): SipRequest | undefined {
  if (data.length > MAX_MESSAGE_BYTES) return undefined;
  const text = data.toString('utf8');
  const lines = text
    .split('\r\n\r\n')[0]!
    .replace(/\r\n[ \t]+/g, ' ')
    .split('\r\n');
  const start = /^([A-Z]+)\s+(\S+)\s+SIP\/2\.0$/i.exec(lines.shift()?.trim() ?? '');
  if (!start) return undefined;
  const headers: Headers = new Map();
  for (const line of lines.slice(0, MAX_HEADERS)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const raw = line.slice(0, colon).trim().toLowerCase();
    const name = COMPACT[raw] ?? raw;
    if (!['via', 'from', 'to', 'call-id', 'cseq'].includes(name)) continue;
    const value = line.slice(colon + 1).trim();
    headers.set(name, [...(headers.get(name) ?? []), ...(MULTI.has(name) ? splitList(value) : [value])]);
  }
  for (const name of ['via', 'call-id', 'cseq']) if (!headers.get(name)?.[0]) return undefined;
  return { kind: 'request', method: start[1]!.toUpperCase(), uri: start[2]!, headers, body: '' };
}

/** Splits a header value at commas outside quotes and angle brackets. */
function splitList(value: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let current = '';
  for (const ch of value) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === '<') depth++;
    else if (!quoted && ch === '>') depth = Math.max(0, depth - 1);
    if (ch === ',' && !quoted && depth === 0) {
      if (current.trim()) parts.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

/** Canonical capitalisation for the headers we write. */
const NAMES: Record<string, string> = {
  'call-id': 'Call-ID',
  cseq: 'CSeq',
  'www-authenticate': 'WWW-Authenticate',
  'proxy-authenticate': 'Proxy-Authenticate',
  'proxy-authorization': 'Proxy-Authorization',
  'p-asserted-identity': 'P-Asserted-Identity',
  'max-forwards': 'Max-Forwards',
  'content-type': 'Content-Type',
  'content-length': 'Content-Length',
  'record-route': 'Record-Route',
  'user-agent': 'User-Agent',
  'min-se': 'Min-SE',
  rseq: 'RSeq',
  rack: 'RAck',
};
const headerName = (name: string) =>
  NAMES[name] ?? name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

export function serialize(message: SipMessage): Buffer {
  const start =
    message.kind === 'request'
      ? `${message.method} ${message.uri} SIP/2.0`
      : `SIP/2.0 ${message.status} ${message.reason}`;
  const lines = [start];
  for (const [name, values] of message.headers) {
    if (name === 'content-length') continue;
    for (const value of values) lines.push(`${headerName(name)}: ${value}`);
  }
  const body = Buffer.from(message.body, 'utf8');
  lines.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), body]);
}

export function header(message: SipMessage, name: string): string | undefined {
  return message.headers.get(name)?.[0];
}

/** A header's parameter (`;tag=abc`, `;branch=z9hG4bK...`), outside the URI's angle brackets. */
export function param(value: string | undefined, name: string): string | undefined {
  if (!value) return undefined;
  const outside = value.includes('>') ? value.slice(value.lastIndexOf('>') + 1) : value;
  const match = new RegExp(`;\\s*${name}=([^;,\\s]+)`, 'i').exec(outside);
  return match?.[1];
}

/** The URI in a name-addr (`"Ann" <sip:ann@host>;tag=1`) or addr-spec header value. */
export function uriOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const angled = /<([^>]*)>/.exec(value);
  if (angled) return angled[1];
  return value.split(';')[0]?.trim();
}

export interface SipUri {
  user: string | undefined;
  host: string;
  port: number | undefined;
  params: Record<string, string>;
}

/**
 * `sip:user@host:port;transport=udp` (the password part is not used in URIs we read). A user part
 * may carry parameters of its own (`sip:+14155550123;npdi;rn=+14155550000@host`, RFC 4694): the
 * user is what comes before them.
 */
export function parseUri(uri: string | undefined): SipUri | undefined {
  if (!uri) return undefined;
  const match = /^sips?:(?:([^@?]*)@)?([^;?:@]+|\[[^\]]+\])(?::(\d+))?([^?]*)/i.exec(uri.trim());
  if (!match) return undefined;
  const params: Record<string, string> = {};
  for (const part of (match[4] ?? '').split(';').slice(1)) {
    const [name, value = ''] = part.split('=');
    if (name) params[name.toLowerCase()] = value;
  }
  return {
    user: match[1] ? decodeURIComponent(match[1].split(/[;:]/)[0]!) : undefined,
    host: match[2]!.replace(/^\[|\]$/g, ''),
    port: match[3] ? Number(match[3]) : undefined,
    params,
  };
}

/** The user of a SIP URI, or the number of a tel: URI (`tel:+14155550123;phone-context=...`, RFC 3966). */
export function userOf(uri: string | undefined): string | undefined {
  const tel = /^tel:([^;?]+)/i.exec(uri?.trim() ?? '');
  return tel ? decodeURIComponent(tel[1]!) : parseUri(uri)?.user;
}

/** The CSeq number and method. */
export function cseqOf(message: SipMessage): { seq: number; method: string } | undefined {
  const match = /^(\d{1,10})\s+([A-Z]+)$/i.exec(header(message, 'cseq') ?? '');
  return match ? { seq: Number(match[1]), method: match[2]!.toUpperCase() } : undefined;
}

export const newBranch = (): string => `z9hG4bK${crypto.randomUUID().replace(/-/g, '')}`;
export const newTag = (): string => crypto.randomUUID().replace(/-/g, '').slice(0, 16);
