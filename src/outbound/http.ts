import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { checkedAddresses, systemResolve, type ResolvedAddress } from './addresses.js';

export type { ResolvedAddress };

/**
 * The one HTTP client for every request Openline makes to a URL a user gave it (end-of-call
 * webhooks, streamed events; later custom tools and dynamic_data): CONTRACT.md section 8.
 *
 * The address rules are applied AFTER DNS resolution: the name is resolved here, every address
 * it resolves to is checked (one blocked address refuses the request, so a name cannot mix a
 * public and a private answer), and the connection is made to the checked address through the
 * socket's `lookup` hook, so that a second DNS answer (DNS rebinding) cannot differ from the
 * checked one. Redirects are followed by hand and every target is checked the same way.
 */

export type OutboundErrorReason =
  'blocked_address' | 'timeout' | 'too_large' | 'connection' | 'invalid_url' | 'too_many_redirects';

/** A request that did not produce a response. The message names the host at most, never a path, query or header (they may hold secrets). */
export class OutboundError extends Error {
  constructor(
    readonly reason: OutboundErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

/** Resolves a host name to all its addresses (tests inject one that maps test names). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface OutboundClientOptions {
  /** OPENLINE_ALLOW_PRIVATE_URLS: private addresses and http:// allowed (local development, tests). */
  allowPrivate: boolean;
  resolve?: Resolver;
  /** Default 10 s. */
  timeoutMs?: number;
  /** Default 1 MiB. */
  maxBytes?: number;
  /** Why an address is refused, or null (default: blockedReason). Tests let their loopback server through. */
  blocked?: (address: string) => string | null;
}

export interface OutboundRequest {
  method?: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole exchange, DNS and redirects included (real milliseconds). */
  timeoutMs?: number;
  /** Response body limit; reading stops beyond it. */
  maxBytes?: number;
  /** Only https:// (custom tools, as the seed says), unless private URLs are allowed. Webhooks may use http://. */
  httpsOnly?: boolean;
  /** Default 5. */
  maxRedirects?: number;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  durationMs: number;
  /** The URL that answered (after redirects). */
  url: string;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_BYTES = 1024 * 1024;
const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers that must not follow a redirect to another origin. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

export class OutboundClient {
  private readonly resolve: Resolver;

  constructor(private readonly options: OutboundClientOptions) {
    this.resolve = options.resolve ?? systemResolve;
  }

  async request(request: OutboundRequest): Promise<OutboundResponse> {
    const started = performance.now();
    const timeoutMs = request.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const maxBytes = request.maxBytes ?? this.options.maxBytes ?? DEFAULT_MAX_BYTES;
    const maxRedirects = request.maxRedirects ?? MAX_REDIRECTS;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let url = this.parse(request.url, request.httpsOnly === true);
    let method = (request.method ?? 'GET').toUpperCase();
    let body = request.body;
    const headers: Record<string, string> = { ...request.headers };
    try {
      for (let hop = 0; ; hop++) {
        const target = await this.check(url, controller.signal);
        const response = await this.send(url, target, method, headers, body, maxBytes, controller.signal);
        const location = response.headers.location;
        if (!REDIRECTS.has(response.status) || !location) {
          return { ...response, durationMs: Math.round(performance.now() - started), url: url.toString() };
        }
        if (hop >= maxRedirects) {
          throw new OutboundError('too_many_redirects', `more than ${maxRedirects} redirects from ${url.host}`);
        }
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new OutboundError('invalid_url', `${url.host} redirected to an invalid URL`);
        }
        next = this.parse(next.toString(), request.httpsOnly === true);
        // 303, and 301/302 after a POST (what browsers do), continue as a GET without a body.
        if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
          delete headers['content-type'];
          delete headers['Content-Type'];
        }
        if (next.origin !== url.origin) {
          for (const name of Object.keys(headers)) {
            if (CREDENTIAL_HEADERS.includes(name.toLowerCase())) delete headers[name];
          }
        }
        url = next;
      }
    } catch (error) {
      if (error instanceof OutboundError) throw error;
      if (controller.signal.aborted)
        throw new OutboundError('timeout', `no response from ${url.host} within ${timeoutMs} ms`);
      const code = (error as NodeJS.ErrnoException).code;
      throw new OutboundError('connection', `connection to ${url.host} failed${code ? `: ${code}` : ''}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private parse(text: string, httpsOnly: boolean): URL {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new OutboundError('invalid_url', 'not a valid URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new OutboundError('invalid_url', `${url.protocol} URLs are not allowed`);
    }
    if (url.protocol === 'http:' && httpsOnly && !this.options.allowPrivate) {
      throw new OutboundError('invalid_url', `https:// is required (${url.host})`);
    }
    return url;
  }

  /** Resolves the URL's host and checks every address (checkedAddresses); returns the one to connect to. */
  private async check(url: URL, signal: AbortSignal): Promise<ResolvedAddress> {
    const checked = await checkedAddresses(url.hostname, {
      allowPrivate: this.options.allowPrivate,
      resolve: (host) => abortable(this.resolve(host), signal),
      ...(this.options.blocked && { blocked: this.options.blocked }),
    });
    if (signal.aborted) throw new Error('aborted');
    if ('refused' in checked)
      throw new OutboundError(checked.kind === 'blocked' ? 'blocked_address' : 'connection', checked.refused);
    return checked.addresses[0]!;
  }

  private send(
    url: URL,
    target: ResolvedAddress,
    method: string,
    headers: Record<string, string>,
    body: string | Buffer | undefined,
    maxBytes: number,
    signal: AbortSignal,
  ): Promise<Omit<OutboundResponse, 'durationMs' | 'url'>> {
    // Connect to the address just checked, whatever the resolver would answer now.
    const lookup: net.LookupFunction = (_host, options, callback) => {
      if (options.all) callback(null, [target]);
      else callback(null, target.address, target.family);
    };
    const transport = url.protocol === 'https:' ? https : http;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    return new Promise((resolve, reject) => {
      const req = transport.request(
        {
          protocol: url.protocol,
          hostname: host,
          port: url.port || undefined,
          path: `${url.pathname}${url.search}`,
          method,
          headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup,
          signal,
          // No pooled sockets: every request connects to the address it checked.
          agent: false,
          ...(url.username ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const responseHeaders: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          if (REDIRECTS.has(status) && responseHeaders.location) {
            res.resume();
            resolve({ status, headers: responseHeaders, body: '' });
            return;
          }
          const declared = Number(responseHeaders['content-length']);
          if (Number.isFinite(declared) && declared > maxBytes) {
            req.destroy();
            reject(new OutboundError('too_large', `response of ${url.host} exceeds ${maxBytes} bytes`));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) {
              // Stop reading at once: the rest is never downloaded.
              req.destroy();
              reject(new OutboundError('too_large', `response of ${url.host} exceeds ${maxBytes} bytes`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () =>
            resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
          res.on('aborted', () => reject(new Error('response aborted')));
        },
      );
      req.on('error', reject);
      if (body !== undefined) req.write(body);
      req.end();
    });
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
