import dgram from 'node:dgram';
import net from 'node:net';
import tls from 'node:tls';
import {
  cseqOf,
  header,
  newBranch,
  newTag,
  param,
  parseMessage,
  readBadRequest,
  serialize,
  type Headers,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from './message.js';
import { udpLookup } from './lookup.js';
import { SipStreamReader } from './stream.js';

/**
 * SIP's transports (RFC 3261 sections 17-18): UDP, TCP on the same address and port, and TLS
 * when a certificate is configured; client transactions with their retransmissions (UDP only)
 * and timeouts, and server transactions that answer a repeated request with the response already
 * sent. Responses and in-dialog requests go back on the connection a request came on while it is
 * open. Dialogs and calls are the carrier's (src/carriers/sip/carrier.ts).
 */

export type Transport = 'udp' | 'tcp' | 'tls';

export interface Target {
  host: string;
  port: number;
  /** Default udp. */
  transport?: Transport;
  /** The TCP or TLS connection to use while it is open (the one a request came on). */
  connection?: number;
}

export interface EndpointOptions {
  /** Where to listen (OPENLINE_SIP_LISTEN): UDP and TCP on the same address and port. */
  host: string;
  port: number;
  /** What goes into Via and Contact (OPENLINE_SIP_PUBLIC_ADDRESS); default the listening address. */
  publicAddress?: string;
  /**
   * TLS (OPENLINE_SIP_TLS_*): the server's certificate and key (PEM; the TLS port listens only
   * with both), the authorities outbound connections trust (default the system's), the port.
   */
  tls?: { cert?: string; key?: string; ca?: string; port: number };
  /** A TCP or TLS connection with no traffic for this long is closed. Default 5 minutes. */
  idleMs?: number;
  /**
   * T1, the round-trip estimate every SIP timer derives from (RFC 3261 section 17.1.1.1):
   * retransmissions start at T1, T2 is 8 T1, a transaction times out after 64 T1. Default 500 ms;
   * tests shorten it.
   */
  t1Ms?: number;
  log?: { warn(object: object, message: string): void };
}

/**
 * A request arrived: answer it with `respond` (as often as needed: provisional, then final; what
 * comes after the final response is dropped). `transaction.cancelled`: a CANCEL ended the INVITE
 * before its final response (the endpoint answered it 487); `onCancelled`, when the handler sets
 * it, hears of that CANCEL as it comes.
 */
export type RequestHandler = (
  request: SipRequest,
  from: Target,
  respond: Responder,
  transaction: ServerTransaction,
) => void;
export interface ServerTransaction {
  readonly cancelled: boolean;
  onCancelled?: (() => void) | undefined;
}
export type Responder = (status: number, reason: string, extra?: { headers?: Headers; body?: string }) => void;

const DEFAULT_T1_MS = 500;
const DEFAULT_IDLE_MS = 5 * 60_000;

/** The port a transport uses when a URI names none. */
export const defaultPort = (transport: Transport): number => (transport === 'tls' ? 5061 : 5060);

interface ClientTransaction {
  request: SipRequest;
  method: string;
  message: Buffer;
  target: Target;
  onProvisional?: (response: SipResponse) => void;
  resolve(response: SipResponse): void;
  timers: NodeJS.Timeout[];
  settled: boolean;
  provisional: boolean;
  /** A CANCEL was asked for: sent once a provisional response came (RFC 3261 section 9.1). */
  cancelling: 'waiting' | 'sent' | undefined;
}

/** An INVITE server transaction, for the CANCEL that names it (RFC 3261 section 9.2). */
interface InviteServerTransaction extends ServerTransaction {
  /** The To tag of its responses: ours, else the one its final response carried. */
  tag: string;
  final: boolean;
  cancelled: boolean;
  at: number;
  finalAt?: number;
  respond: Responder;
}

interface Connection {
  id: number;
  transport: 'tcp' | 'tls';
  socket: net.Socket;
  key: string;
  reader: SipStreamReader;
  error?: string;
}

const connectionKey = (transport: Transport, host: string, port: number) =>
  `${transport}|${host.replace(/^::ffff:/, '')}|${port}`;

export class SipEndpoint {
  private readonly clients = new Map<string, ClientTransaction>();
  /** Server transactions: the last response to each request, for its retransmissions. */
  private readonly answered = new Map<string, { response: Buffer; target: Target; at: number }>();
  /** INVITE server transactions, by their key: a CANCEL finds its INVITE here. */
  private readonly invites = new Map<string, InviteServerTransaction>();
  private handler: RequestHandler | undefined;
  /**
   * 2xx responses to INVITE waiting for their ACK (RFC 3261 section 13.3.1.4), by Call-ID and
   * CSeq: resent over UDP meanwhile; after 64 T1, onAckTimeout.
   */
  private readonly unacknowledged = new Map<string, NodeJS.Timeout>();
  /** Final non-2xx responses to INVITE, resent over UDP until their ACK (timer G) or 64 T1 (timer H), by transaction. */
  private readonly refusals = new Map<string, NodeJS.Timeout>();
  private readonly connections = new Map<number, Connection>();
  private readonly byKey = new Map<string, Connection>();
  private nextConnection = 1;
  /** Connections a call's dialog lives on: not closed for being idle. */
  private readonly kept = new Map<number, number>();
  private closed = false;

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly tcp: net.Server,
    private readonly tlsServer: tls.Server | undefined,
    private readonly options: EndpointOptions,
  ) {
    socket.on('message', (data, rinfo) => this.onData(data, { host: rinfo.address, port: rinfo.port }));
    socket.on('error', (error) => options.log?.warn({ err: error }, 'SIP socket error'));
    tcp.on('connection', (s) => this.attach(s, 'tcp'));
    tlsServer?.on('secureConnection', (s) => this.attach(s, 'tls'));
    tlsServer?.on('tlsClientError', (error) => options.log?.warn({ err: error }, 'SIP TLS handshake failed'));
  }

  static async listen(options: EndpointOptions): Promise<SipEndpoint> {
    const socket = dgram.createSocket({ type: options.host.includes(':') ? 'udp6' : 'udp4', lookup: udpLookup });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(options.port, options.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    const serverListen = async (server: net.Server, port: number) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, options.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    const tcp = net.createServer();
    const t = options.tls;
    const tlsServer = t?.cert && t.key ? tls.createServer({ cert: t.cert, key: t.key }) : undefined;
    // The endpoint takes connections from the first one on: it exists before the servers listen.
    const endpoint = new SipEndpoint(socket, tcp, tlsServer, options);
    try {
      // TCP on the UDP socket's port (the same when the setting names 0 and the system picked one).
      await serverListen(tcp, socket.address().port);
      if (tlsServer) await serverListen(tlsServer, t!.port);
    } catch (error) {
      socket.close();
      tcp.close();
      tlsServer?.close();
      throw error;
    }
    return endpoint;
  }

  get port(): number {
    return this.socket.address().port;
  }

  /** T1 (RFC 3261 section 17.1.1.1): 500 ms unless the options say otherwise. */
  get t1(): number {
    return this.options.t1Ms ?? DEFAULT_T1_MS;
  }

  /** T2: the longest interval between retransmissions, 8 T1 (4 s). */
  get t2(): number {
    return 8 * this.t1;
  }

  /** Timers B, F and H: 64 T1 (32 s). */
  get transactionTimeoutMs(): number {
    return 64 * this.t1;
  }

  /**
   * Timer C (RFC 3261 section 16.6; 360 T1, 3 minutes): how long an INVITE that heard a
   * provisional response may wait for its final one before it is cancelled.
   */
  get inviteTimeoutMs(): number {
    return 360 * this.t1;
  }

  /** The TLS port, when TLS listens. */
  get tlsPort(): number | undefined {
    const address = this.tlsServer?.address();
    return address && typeof address === 'object' ? address.port : undefined;
  }

  /** The address the far end reaches us at (Via, Contact, SDP). */
  get address(): string {
    const listening = this.socket.address().address;
    return this.options.publicAddress ?? (listening === '0.0.0.0' || listening === '::' ? '127.0.0.1' : listening);
  }

  /** Our host:port for a transport (TLS: its own port, else the SIP port). */
  hostPort(transport: Transport = 'udp'): string {
    return hostPort(this.address, transport === 'tls' ? (this.tlsPort ?? this.options.tls?.port ?? 5061) : this.port);
  }

  /** Our Contact for requests and responses on a transport. */
  contact(transport: Transport = 'udp', user = 'openline'): string {
    return `<sip:${user}@${this.hostPort(transport)}${transport === 'udp' ? '' : `;transport=${transport}`}>`;
  }

  onRequest(handler: RequestHandler): void {
    this.handler = handler;
  }

  /** A Via for a new request from us. */
  via(transport: Transport = 'udp', branch = newBranch()): string {
    return `SIP/2.0/${transport.toUpperCase()} ${this.hostPort(transport)};branch=${branch};rport`;
  }

  /**
   * Sends a request as a client transaction and resolves with its final response (a made-up 408
   * when none came in time, a 503 when its connection failed). `onProvisional` hears the 1xx
   * responses. `timeoutMs`: how long it waits for a final response (timer B / F, 32 s by default;
   * a request that hears a provisional response waits as long). `connection`: the TCP or TLS
   * connection it went on.
   */
  request(
    request: SipRequest,
    target: Target,
    onProvisional?: (response: SipResponse) => void,
    timeoutMs = this.transactionTimeoutMs,
  ): { response: Promise<SipResponse>; branch: string; connection: number | undefined } {
    const branch = param(header(request, 'via'), 'branch') ?? '';
    const message = serialize(request);
    const key = `${branch}|${request.method}`;
    let connection: number | undefined;
    const response = new Promise<SipResponse>((resolve) => {
      const transaction: ClientTransaction = {
        request,
        method: request.method,
        message,
        target,
        ...(onProvisional && { onProvisional }),
        resolve,
        timers: [],
        settled: false,
        provisional: false,
        cancelling: undefined,
      };
      this.clients.set(key, transaction);
      connection = this.send(message, target);
      if (connection !== undefined) transaction.target = { ...target, connection };
      const reliable = (target.transport ?? 'udp') !== 'udp';
      // Timer A / E (UDP only): retransmit at T1, 2 T1, 4 T1, ... (INVITE until a provisional; others capped at T2).
      const retransmit = (interval: number) => {
        transaction.timers.push(
          setTimeout(() => {
            if (transaction.settled) return;
            if (request.method === 'INVITE' && transaction.provisional) return;
            if (request.method !== 'INVITE' && transaction.provisional) interval = this.t2;
            this.send(message, target);
            retransmit(request.method === 'INVITE' ? interval * 2 : Math.min(interval * 2, this.t2));
          }, interval),
        );
      };
      if (!reliable) retransmit(this.t1);
      // Timer B / F, on every transport. An INVITE that rings is bounded by the caller's own ring
      // timeout instead, then by cancelled().
      transaction.timers.push(
        setTimeout(() => {
          if (transaction.settled || (request.method === 'INVITE' && transaction.provisional)) return;
          this.settle(key, madeUpResponse(request, 408, 'Request Timeout'));
        }, timeoutMs),
      );
      // Timer C: an INVITE that rings (or says Trying) for ever, a re-INVITE above all, is
      // cancelled; without a final response 64 T1 after that, it is over with a made-up 408.
      if (request.method === 'INVITE')
        transaction.timers.push(
          setTimeout(() => this.cancelTransaction(key, 408, 'Request Timeout'), this.inviteTimeoutMs),
        );
    });
    return { response, branch, connection };
  }

  /**
   * Cancels the INVITE of `branch` (RFC 3261 section 9.1): the CANCEL goes out on the INVITE's own
   * target and connection once a provisional response came (at once if one did; never if the
   * final response comes first, which the INVITE then resolves with). When no final response
   * comes within 64 T1 of the CANCEL, the transaction is over all the same, with a made-up 487.
   */
  cancel(branch: string): void {
    this.cancelTransaction(`${branch}|INVITE`, 487, 'Request Terminated');
  }

  private cancelTransaction(key: string, status: number, reason: string): void {
    const transaction = this.clients.get(key);
    if (!transaction || transaction.settled || transaction.cancelling === 'sent') return;
    if (!transaction.provisional) {
      transaction.cancelling = 'waiting';
      return;
    }
    transaction.cancelling = 'sent';
    void this.request(cancelFor(transaction.request), transaction.target).response;
    transaction.timers.push(
      setTimeout(
        () => this.settle(key, madeUpResponse(transaction.request, status, reason)),
        this.transactionTimeoutMs,
      ),
    );
  }

  /**
   * Sends a message outside any transaction (an ACK for a 2xx, a response); on TCP or TLS, on the
   * target's connection while it is open, else on one to the same address, else on a new one.
   * Returns the connection used.
   */
  send(message: SipMessage | Buffer, target: Target): number | undefined {
    if (this.closed) return undefined;
    const bytes = Buffer.isBuffer(message) ? message : serialize(message);
    const transport = target.transport ?? 'udp';
    if (transport === 'udp') {
      this.socket.send(bytes, target.port, target.host);
      return undefined;
    }
    const connection = this.connectionTo({ ...target, transport });
    if (!connection.socket.destroyed) connection.socket.write(bytes);
    return connection.id;
  }

  /** Marks a connection as used by a dialog (`true`) or no longer (`false`): kept open while used. */
  keep(connection: number | undefined, used: boolean): void {
    if (connection === undefined) return;
    const count = (this.kept.get(connection) ?? 0) + (used ? 1 : -1);
    if (count > 0) this.kept.set(connection, count);
    else this.kept.delete(connection);
  }

  /** Whether a TCP or TLS connection is still open. */
  isOpen(connection: number | undefined): boolean {
    return connection !== undefined && this.connections.has(connection);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const key of [...this.clients.keys()]) this.settle(key, undefined);
    for (const timer of [...this.unacknowledged.values(), ...this.refusals.values()]) clearTimeout(timer);
    this.socket.close();
    this.tcp.close();
    this.tlsServer?.close();
    // Connections end gracefully (what was written goes out first), then are closed for good.
    for (const connection of this.connections.values()) {
      connection.socket.end();
      setTimeout(() => connection.socket.destroy(), 1000).unref();
    }
  }

  private connectionTo(target: Target & { transport: 'tcp' | 'tls' }): Connection {
    const existing =
      (target.connection !== undefined && this.connections.get(target.connection)) ||
      this.byKey.get(connectionKey(target.transport, target.host, target.port));
    if (existing && existing.transport === target.transport) return existing;
    const t = this.options.tls;
    const socket =
      target.transport === 'tcp'
        ? net.connect({ host: target.host, port: target.port })
        : tls.connect({
            host: target.host,
            port: target.port,
            ...(net.isIP(target.host) === 0 && { servername: target.host }),
            ...(t?.ca && { ca: t.ca }),
            // Our certificate, for trunks that want to see it (mutual TLS).
            ...(t?.cert && t.key && { cert: t.cert, key: t.key }),
          });
    return this.attach(socket, target.transport, connectionKey(target.transport, target.host, target.port));
  }

  /** A connection we opened or accepted: framing, keep-alives, idle close, its transactions failing with it. */
  private attach(socket: net.Socket, transport: 'tcp' | 'tls', key?: string): Connection {
    const id = this.nextConnection++;
    const connection: Connection = {
      id,
      transport,
      socket,
      key: key ?? connectionKey(transport, socket.remoteAddress ?? '', socket.remotePort ?? 0),
      reader: new SipStreamReader(),
    };
    this.connections.set(id, connection);
    this.byKey.set(connection.key, connection);
    const idleMs = this.options.idleMs ?? DEFAULT_IDLE_MS;
    socket.setTimeout(idleMs);
    socket.on('timeout', () => {
      if (this.kept.has(id)) socket.setTimeout(idleMs);
      else socket.destroy();
    });
    socket.on('data', (chunk: Buffer) => {
      const read = connection.reader.push(chunk);
      if (read === 'malformed') {
        this.options.log?.warn({ transport }, 'SIP stream dropped: a message without Content-Length or too large');
        socket.destroy();
        return;
      }
      for (let i = 0; i < read.pings; i++) socket.write('\r\n');
      const from: Target = {
        host: (socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
        port: socket.remotePort ?? 0,
        transport,
        connection: id,
      };
      for (const message of read.messages) this.onData(message, from);
    });
    socket.on('error', (error) => {
      connection.error = error.message;
      this.options.log?.warn({ err: error, transport }, 'SIP connection failed');
    });
    socket.on('close', () => {
      this.connections.delete(id);
      this.kept.delete(id);
      if (this.byKey.get(connection.key) === connection) this.byKey.delete(connection.key);
      // Requests still waiting on this connection will not be answered (RFC 3261 section 8.1.3.1).
      for (const [k, transaction] of this.clients)
        if (transaction.target.connection === id) this.settle(k, undefined, connection.error);
    });
    return connection;
  }

  private settle(key: string, response: SipResponse | undefined, why?: string): void {
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
        reason: why ? `Service Unavailable (${why})` : 'Service Unavailable',
        headers: new Map(),
        body: '',
      });
  }

  private onData(data: Buffer, from: Target): void {
    // Keep-alives (CRLF pings) and anything unreadable are ignored: never an exception.
    if (data.length <= 4) return;
    const message = parseMessage(data);
    if (!message) {
      // Malformed, but answerable: 400, so the sender does not retransmit it for 32 s (an ACK gets nothing).
      const bad = readBadRequest(data);
      if (bad && bad.method !== 'ACK') {
        const response = responseTo(bad, 400, 'Bad Request', undefined, '', from);
        const to = header(response, 'to');
        if (to && param(to, 'tag') === undefined) response.headers.set('to', [`${to};tag=${newTag()}`]);
        this.send(response, from);
      }
      return;
    }
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
      if (transaction.cancelling === 'waiting') this.cancel(branch);
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

  /** Set by the carrier: a 2xx of ours to an INVITE of this Call-ID got no ACK within 64 T1. */
  onAckTimeout: ((callId: string) => void) | undefined;

  /** The dialog of this Call-ID is over: its 2xx responses are no longer resent, nor their ACK awaited. */
  forgetUnacknowledged(callId: string): void {
    for (const [key, timer] of this.unacknowledged)
      if (key.startsWith(`${callId}|`)) {
        clearTimeout(timer);
        this.unacknowledged.delete(key);
      }
  }

  private onIncomingRequest(request: SipRequest, from: Target): void {
    // rport (RFC 3581) and NAT: answer where the request came from, not where its Via says. Over
    // TCP or TLS that is the request's connection; once it has closed, a new one to the address it
    // came from at the Via's port (RFC 3261 section 18.2.2), where the peer listens, not at the
    // closed connection's own port.
    const target =
      from.transport === 'tcp' || from.transport === 'tls' ? { ...from, port: viaPort(request, from.transport) } : from;
    const key = serverTransactionKey(request);
    if (request.method === 'ACK') {
      // The ACK of a 2xx (a transaction of its own), or of a refusal (the INVITE's transaction).
      for (const [timers, k] of [
        [this.unacknowledged, `${header(request, 'call-id')}|${cseqOf(request)?.seq}`],
        [this.refusals, key],
      ] as const) {
        clearTimeout(timers.get(k));
        timers.delete(k);
      }
      this.handler?.(request, from, () => {}, { cancelled: false });
      return;
    }
    const previous = this.answered.get(key);
    if (previous) {
      this.send(previous.response, previous.target);
      return;
    }
    this.forgetOld();
    // A CANCEL answers for the INVITE of the same transaction (same branch and sent-by): its
    // responses carry the INVITE's To tag (section 9.2).
    const cancelled =
      request.method === 'CANCEL' ? this.invites.get(serverTransactionKey(request, 'INVITE')) : undefined;
    // Our tag in To, the same in every response of the transaction: a request outside a dialog has none (section 8.2.6.2).
    const tag = cancelled?.tag ?? newTag();
    let final = false;
    const respond: Responder = (status, reason, extra = {}) => {
      if (final) return;
      final = status >= 200;
      const response = responseTo(request, status, reason, extra.headers, extra.body ?? '', from);
      const to = header(response, 'to') ?? '';
      if (status > 100 && param(to, 'tag') === undefined) response.headers.set('to', [`${to};tag=${tag}`]);
      const invite = request.method === 'INVITE' ? this.invites.get(key) : undefined;
      if (invite && status > 100) {
        invite.tag = param(header(response, 'to'), 'tag') ?? invite.tag;
        invite.final = final;
        if (final) invite.finalAt = Date.now();
      }
      const bytes = serialize(response);
      this.answered.set(key, { response: bytes, target, at: Date.now() });
      this.send(bytes, target);
      // A refusal of an INVITE over UDP is repeated until its ACK (timers G and H, section 17.2.1).
      if (request.method === 'INVITE' && status >= 300 && (from.transport ?? 'udp') === 'udp') {
        let interval = this.t1;
        let waited = 0;
        const resend = () => {
          waited += interval;
          if (waited >= this.transactionTimeoutMs) return this.refusals.delete(key);
          this.send(bytes, target);
          interval = Math.min(interval * 2, this.t2);
          this.refusals.set(key, setTimeout(resend, interval));
        };
        this.refusals.set(key, setTimeout(resend, interval));
      }
      // A reliable transport delivers the 2xx once; over UDP it is repeated until the ACK. No ACK
      // within 64 T1 on any transport: the dialog is not confirmed, the carrier ends it.
      if (request.method === 'INVITE' && status >= 200 && status < 300) {
        const callId = header(request, 'call-id') ?? '';
        const ackKey = `${callId}|${cseqOf(request)?.seq}`;
        const reliable = (from.transport ?? 'udp') !== 'udp';
        let interval = reliable ? this.transactionTimeoutMs : this.t1;
        let waited = 0;
        const resend = () => {
          waited += interval;
          if (waited >= this.transactionTimeoutMs) {
            this.unacknowledged.delete(ackKey);
            this.onAckTimeout?.(callId);
            return;
          }
          this.send(bytes, target);
          interval = Math.min(interval * 2, this.t2, this.transactionTimeoutMs - waited);
          this.unacknowledged.set(ackKey, setTimeout(resend, interval));
        };
        clearTimeout(this.unacknowledged.get(ackKey));
        this.unacknowledged.set(ackKey, setTimeout(resend, interval));
      }
    };
    if (request.method === 'CANCEL') {
      // No INVITE of that transaction: 481. One answered already: 200, and nothing changes. One
      // still pending: 200, and the INVITE ends with 487 (section 9.2).
      if (!cancelled) return respond(481, 'Call/Transaction Does Not Exist');
      respond(200, 'OK');
      if (!cancelled.final) {
        cancelled.cancelled = true;
        cancelled.respond(487, 'Request Terminated');
        cancelled.onCancelled?.();
      }
      return;
    }
    const transaction: InviteServerTransaction = { tag, final: false, cancelled: false, at: Date.now(), respond };
    if (request.method === 'INVITE') this.invites.set(key, transaction);
    if (!this.handler) return respond(503, 'Service Unavailable');
    this.handler(request, from, respond, transaction);
  }

  private forgetOld(): void {
    const cutoff = Date.now() - this.transactionTimeoutMs;
    for (const [key, entry] of this.answered) {
      if (entry.at >= cutoff) break;
      this.answered.delete(key);
    }
    // An INVITE's transaction is over 64 T1 after its final response (RFC 6026); one never
    // answered is forgotten after Timer C.
    for (const [key, entry] of this.invites)
      if ((entry.finalAt ?? Infinity) < cutoff || entry.at < cutoff - this.inviteTimeoutMs) this.invites.delete(key);
  }
}

/**
 * The server transaction a request belongs to (RFC 3261 section 17.2.3): its branch, sent-by and
 * method; a request whose branch lacks RFC 3261's magic cookie (RFC 2543) is known by its Call-ID,
 * From tag, CSeq number and top Via. An ACK goes with its INVITE.
 */
function serverTransactionKey(
  request: SipRequest,
  method = request.method === 'ACK' ? 'INVITE' : request.method,
): string {
  const via = header(request, 'via') ?? '';
  const branch = param(via, 'branch');
  const sentBy = /^SIP\s*\/\s*2\.0\s*\/\s*\S+\s+([^;\s]+)/i.exec(via)?.[1]?.toLowerCase() ?? '';
  if (branch?.startsWith('z9hG4bK')) return `${branch}|${sentBy}|${method}`;
  const from = param(header(request, 'from'), 'tag') ?? '';
  return `2543|${header(request, 'call-id')}|${from}|${cseqOf(request)?.seq}|${via}|${method}`;
}

/** The port of the top Via's sent-by (`SIP/2.0/TCP host:port`), else the transport's default. */
function viaPort(request: SipRequest, transport: Transport): number {
  const sentBy = /^SIP\s*\/\s*2\.0\s*\/\s*\S+\s+([^;\s]+)/i.exec(header(request, 'via') ?? '')?.[1] ?? '';
  const port = Number(/:(\d{1,5})$/.exec(sentBy)?.[1]);
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : defaultPort(transport);
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

/** The CANCEL of an INVITE (RFC 3261 section 9.1): its request URI, top Via, From, To, Call-ID, CSeq number and Route. */
export function cancelFor(invite: SipRequest): SipRequest {
  const headers: Headers = new Map();
  headers.set('via', [invite.headers.get('via')![0]!]);
  headers.set('max-forwards', ['70']);
  for (const name of ['from', 'to', 'call-id']) headers.set(name, [header(invite, name) ?? '']);
  headers.set('cseq', [`${cseqOf(invite)!.seq} CANCEL`]);
  const route = invite.headers.get('route');
  if (route) headers.set('route', route);
  return { kind: 'request', method: 'CANCEL', uri: invite.uri, headers, body: '' };
}

/** The final response a transaction gives itself when none came (timeout, cancelled). */
function madeUpResponse(request: SipRequest, status: number, reason: string): SipResponse {
  const headers: Headers = new Map();
  for (const name of ['via', 'from', 'to', 'call-id', 'cseq']) headers.set(name, [header(request, name) ?? '']);
  return { kind: 'response', status, reason, headers, body: '' };
}
