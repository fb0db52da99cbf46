import dgram from 'node:dgram';
import {
  cseqOf,
  header,
  newBranch,
  param,
  parseMessage,
  serialize,
  type Headers,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from './message.js';

/**
 * SIP over UDP (RFC 3261 sections 17-18): the socket, client transactions with their
 * retransmissions and timeouts, and server transactions that answer a repeated request with the
 * response already sent. Dialogs and calls are the carrier's (src/carriers/sip/carrier.ts).
 */

export interface Target {
  host: string;
  port: number;
}

export interface EndpointOptions {
  /** Where to listen (OPENLINE_SIP_LISTEN). */
  host: string;
  port: number;
  /** What goes into Via and Contact (OPENLINE_SIP_PUBLIC_ADDRESS); default the listening address. */
  publicAddress?: string;
  log?: { warn(object: object, message: string): void };
}

/** A request arrived: answer it with `respond` (as often as needed: provisional, then final). */
export type RequestHandler = (request: SipRequest, from: Target, respond: Responder) => void;
export type Responder = (status: number, reason: string, extra?: { headers?: Headers; body?: string }) => void;

const T1 = 500;
const T2 = 4000;
/** Timer B / F: a transaction that hears nothing for this long has timed out. */
const TRANSACTION_TIMEOUT_MS = 64 * T1;

interface ClientTransaction {
  method: string;
  message: Buffer;
  target: Target;
  onProvisional?: (response: SipResponse) => void;
  resolve(response: SipResponse): void;
  timers: NodeJS.Timeout[];
  settled: boolean;
  provisional: boolean;
}

export class SipEndpoint {
  private readonly clients = new Map<string, ClientTransaction>();
  /** Server transactions: the last response to each request, for its retransmissions. */
  private readonly answered = new Map<string, { response: Buffer; target: Target; at: number }>();
  private handler: RequestHandler | undefined;
  /** 2xx responses to INVITE, resent until their ACK arrives (RFC 3261 section 13.3.1.4). */
  private readonly unacknowledged = new Map<string, NodeJS.Timeout>();
  private closed = false;

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly options: EndpointOptions,
  ) {
    socket.on('message', (data, rinfo) => this.onDatagram(data, { host: rinfo.address, port: rinfo.port }));
    socket.on('error', (error) => options.log?.warn({ err: error }, 'SIP socket error'));
  }

  static async listen(options: EndpointOptions): Promise<SipEndpoint> {
    const socket = dgram.createSocket(options.host.includes(':') ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(options.port, options.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return new SipEndpoint(socket, options);
  }

  get port(): number {
    return this.socket.address().port;
  }

  /** The address the far end reaches us at (Via, Contact, SDP). */
  get address(): string {
    const listening = this.socket.address().address;
    return this.options.publicAddress ?? (listening === '0.0.0.0' || listening === '::' ? '127.0.0.1' : listening);
  }

  get contact(): string {
    return `<sip:openline@${hostPort(this.address, this.port)}>`;
  }

  onRequest(handler: RequestHandler): void {
    this.handler = handler;
  }

  /** A Via for a new request from us. */
  via(branch = newBranch()): string {
    return `SIP/2.0/UDP ${hostPort(this.address, this.port)};branch=${branch};rport`;
  }

  /**
   * Sends a request as a client transaction and resolves with its final response (a made-up 408
   * when none came in time). `onProvisional` hears the 1xx responses.
   */
  request(
    request: SipRequest,
    target: Target,
    onProvisional?: (response: SipResponse) => void,
  ): { response: Promise<SipResponse>; branch: string } {
    const branch = param(header(request, 'via'), 'branch') ?? '';
    const message = serialize(request);
    const response = new Promise<SipResponse>((resolve) => {
      const transaction: ClientTransaction = {
        method: request.method,
        message,
        target,
        ...(onProvisional && { onProvisional }),
        resolve,
        timers: [],
        settled: false,
        provisional: false,
      };
      this.clients.set(`${branch}|${request.method}`, transaction);
      this.send(message, target);
      // Timer A / E: retransmit at T1, 2 T1, 4 T1, ... (INVITE until a provisional; others capped at T2).
      const retransmit = (interval: number) => {
        transaction.timers.push(
          setTimeout(() => {
            if (transaction.settled) return;
            if (request.method === 'INVITE' && transaction.provisional) return;
            if (request.method !== 'INVITE' && transaction.provisional) interval = T2;
            this.send(message, target);
            retransmit(request.method === 'INVITE' ? interval * 2 : Math.min(interval * 2, T2));
          }, interval),
        );
      };
      retransmit(T1);
      // Timer B / F. An INVITE that rings is bounded by the caller's own ring timeout instead.
      transaction.timers.push(
        setTimeout(() => {
          if (transaction.settled || (request.method === 'INVITE' && transaction.provisional)) return;
          this.settle(`${branch}|${request.method}`, timeoutResponse(request));
        }, TRANSACTION_TIMEOUT_MS),
      );
    });
    return { response, branch };
  }

  /** Sends a message outside any transaction (an ACK for a 2xx, a response). */
  send(message: SipMessage | Buffer, target: Target): void {
    if (this.closed) return;
    this.socket.send(Buffer.isBuffer(message) ? message : serialize(message), target.port, target.host);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const key of [...this.clients.keys()]) this.settle(key, undefined);
    for (const timer of this.unacknowledged.values()) clearInterval(timer);
    this.socket.close();
  }

  private settle(key: string, response: SipResponse | undefined): void {
    const transaction = this.clients.get(key);
    if (!transaction || transaction.settled) return;
    transaction.settled = true;
    for (const timer of transaction.timers) clearTimeout(timer);
    this.clients.delete(key);
    if (response) transaction.resolve(response);
    else
      transaction.resolve({
        kind: 'response',
        status: 503,
        reason: 'Service Unavailable',
        headers: new Map(),
        body: '',
      });
  }

  private onDatagram(data: Buffer, from: Target): void {
    // Keep-alives (CRLF pings) and anything unreadable are ignored: never an exception.
    if (data.length <= 4) return;
    const message = parseMessage(data);
    if (!message) return;
    if (message.kind === 'response') return this.onResponse(message, from);
    this.onIncomingRequest(message, from);
  }

  private onResponse(response: SipResponse, from: Target): void {
    const branch = param(header(response, 'via'), 'branch');
    const cseq = cseqOf(response);
    if (!branch || !cseq) return;
    const key = `${branch}|${cseq.method}`;
    const transaction = this.clients.get(key);
    if (!transaction) {
      // A 2xx to an INVITE repeated after we acknowledged it: acknowledge it again.
      if (cseq.method === 'INVITE' && response.status >= 200 && response.status < 300)
        this.onRepeated2xx?.(response, from);
      return;
    }
    if (response.status < 200) {
      transaction.provisional = true;
      transaction.onProvisional?.(response);
      return;
    }
    // A non-2xx final answer to an INVITE is acknowledged by the transaction itself (section 17.1.1.3).
    if (transaction.method === 'INVITE' && response.status >= 300)
      this.send(ackFor(transaction.message, response), transaction.target);
    this.settle(key, response);
  }

  /** Set by the carrier: acknowledges a repeated 2xx of a dialog it knows. */
  onRepeated2xx: ((response: SipResponse, from: Target) => void) | undefined;

  private onIncomingRequest(request: SipRequest, from: Target): void {
    const branch = param(header(request, 'via'), 'branch') ?? '';
    // rport (RFC 3581) and NAT: answer where the request came from, not where its Via says.
    const target = from;
    if (request.method === 'ACK') {
      const key = `${header(request, 'call-id')}|${cseqOf(request)?.seq}`;
      const timer = this.unacknowledged.get(key);
      if (timer) {
        clearInterval(timer);
        this.unacknowledged.delete(key);
      }
      this.handler?.(request, from, () => {});
      return;
    }
    const key = `${branch}|${request.method}`;
    const previous = this.answered.get(key);
    if (previous) {
      this.send(previous.response, previous.target);
      return;
    }
    this.forgetOld();
    const respond: Responder = (status, reason, extra = {}) => {
      const response = responseTo(request, status, reason, extra.headers, extra.body ?? '', from);
      const bytes = serialize(response);
      this.answered.set(key, { response: bytes, target, at: Date.now() });
      this.send(bytes, target);
      if (request.method === 'INVITE' && status >= 200 && status < 300) {
        const ackKey = `${header(request, 'call-id')}|${cseqOf(request)?.seq}`;
        let interval = T1;
        let waited = 0;
        const resend = () => {
          waited += interval;
          if (waited > TRANSACTION_TIMEOUT_MS) {
            clearTimeout(this.unacknowledged.get(ackKey));
            this.unacknowledged.delete(ackKey);
            return;
          }
          this.send(bytes, target);
          interval = Math.min(interval * 2, T2);
          this.unacknowledged.set(ackKey, setTimeout(resend, interval));
        };
        this.unacknowledged.set(ackKey, setTimeout(resend, interval));
      }
    };
    if (!this.handler) return respond(503, 'Service Unavailable');
    this.handler(request, from, respond);
  }

  private forgetOld(): void {
    const cutoff = Date.now() - TRANSACTION_TIMEOUT_MS;
    for (const [key, entry] of this.answered) {
      if (entry.at >= cutoff) break;
      this.answered.delete(key);
    }
  }
}

export const hostPort = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** A response with the request's Via, From, To (a tag added by the caller), Call-ID and CSeq. */
export function responseTo(
  request: SipRequest,
  status: number,
  reason: string,
  extra: Headers | undefined,
  body: string,
  from?: Target,
): SipResponse {
  const headers: Headers = new Map();
  const vias = [...(request.headers.get('via') ?? [])];
  if (from && vias[0]) {
    // RFC 3581: record where the request really came from.
    let top = vias[0].replace(/;rport(?=;|$)/, `;rport=${from.port}`);
    if (!/;received=/.test(top)) top += `;received=${from.host}`;
    vias[0] = top;
  }
  headers.set('via', vias);
  for (const name of ['from', 'to', 'call-id', 'cseq']) headers.set(name, [header(request, name) ?? '']);
  for (const [name, values] of extra ?? []) headers.set(name, values);
  if (body) headers.set('content-type', headers.get('content-type') ?? ['application/sdp']);
  return { kind: 'response', status, reason, headers, body };
}

/** The ACK of a non-2xx final response: same branch, the response's To (section 17.1.1.3). */
function ackFor(inviteBytes: Buffer, response: SipResponse): SipRequest {
  const invite = parseMessage(inviteBytes) as SipRequest;
  const headers: Headers = new Map();
  headers.set('via', [invite.headers.get('via')![0]!]);
  headers.set('max-forwards', ['70']);
  for (const name of ['from', 'call-id']) headers.set(name, [header(invite, name)!]);
  headers.set('to', [header(response, 'to') ?? header(invite, 'to')!]);
  headers.set('cseq', [`${cseqOf(invite)!.seq} ACK`]);
  const route = invite.headers.get('route');
  if (route) headers.set('route', route);
  return { kind: 'request', method: 'ACK', uri: invite.uri, headers, body: '' };
}

function timeoutResponse(request: SipRequest): SipResponse {
  const headers: Headers = new Map();
  for (const name of ['via', 'from', 'to', 'call-id', 'cseq']) headers.set(name, [header(request, name) ?? '']);
  return { kind: 'response', status: 408, reason: 'Request Timeout', headers, body: '' };
}
