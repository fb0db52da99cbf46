import { randomUUID } from 'node:crypto';
import type { SipTrunk } from '../../domain/sip-trunk.js';
import { answerChallenge } from './digest.js';
import { hostPort, type SipEndpoint, type Target } from './endpoint.js';
import { header, newTag, param, type Headers, type SipRequest, type SipResponse } from './message.js';

/** How long a registration is asked for (seconds); the registrar may grant less. */
export const REGISTER_EXPIRES = 3600;
/**
 * Keep-alives while registered (RFC 5626 section 4.4.1): over UDP often enough for the shortest
 * NAT bindings (about 30 s); over TCP and TLS, below the 120 s a registrar's flow timer allows.
 */
export const KEEPALIVE_MS = { udp: 25_000, stream: 90_000 };
/** The keep-alive: a double CRLF, which a SIP server ignores over UDP and answers with one CRLF on a connection. */
const PING = Buffer.from('\r\n\r\n');

export interface RegistrationOptions {
  /** Seconds asked for. Default REGISTER_EXPIRES. */
  expires?: number;
  /** After a failure, the next attempt waits this long. Default 60 s. */
  retryMs?: number;
  /** Between keep-alives while registered. Default KEEPALIVE_MS for the trunk's transport. */
  keepAliveMs?: number;
  log?: { info(object: object, message: string): void; warn(object: object, message: string): void };
}

/**
 * Registration with a trunk (RFC 3261 section 10) for providers that send calls only to a
 * registered contact: REGISTER with the trunk's user (digest authentication on 401/407), renewed
 * when half of the granted time has passed, retried after a failure, and removed (Expires: 0) on
 * shutdown. Calls then arrive at our Contact, `sip:<user>@<our address>`.
 *
 * Behind NAT the registrar reaches us through the binding our REGISTER opened, which a router
 * forgets after a minute or two of silence: while registered, a keep-alive goes from our SIP port
 * to the registrar every 25 s over UDP, every 90 s on the registration's TCP or TLS connection
 * (with up to a fifth less at random, so many registrations do not beat together). When that
 * connection is gone (the registrar or a router closed it), Openline registers again at once, on a
 * new one, rather than staying unreachable until the next renewal.
 */
export class SipRegistration {
  private readonly callId = `${randomUUID()}@openline`;
  private readonly tag = newTag();
  private seq = 1;
  private timer: NodeJS.Timeout | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private stopped = false;
  private connection: number | undefined;
  /** The seconds granted by the last successful REGISTER; undefined while not registered. */
  registeredFor: number | undefined;

  constructor(
    private readonly endpoint: SipEndpoint,
    private readonly trunk: SipTrunk & { username: string },
    private readonly options: RegistrationOptions = {},
  ) {}

  start(): void {
    void this.register();
  }

  /** Removes the registration (Expires: 0), waiting at most two seconds for the registrar. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.keepAlive);
    if (this.registeredFor !== undefined) {
      this.registeredFor = undefined;
      await Promise.race([this.send(0), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    }
    this.endpoint.keep(this.connection, false);
  }

  private get target(): Target {
    return { host: this.trunk.host, port: this.trunk.port, transport: this.trunk.transport };
  }

  private async register(): Promise<void> {
    if (this.stopped) return;
    const asked = this.options.expires ?? REGISTER_EXPIRES;
    let response = await this.send(asked);
    // 423 Interval Too Brief: the registrar's minimum (RFC 3261 section 10.2.8).
    const minimum = Number(header(response, 'min-expires'));
    if (response.status === 423 && Number.isInteger(minimum) && minimum > asked && !this.stopped)
      response = await this.send(minimum);
    if (this.stopped) return;
    let next: number;
    if (response.status >= 200 && response.status < 300) {
      const granted = this.granted(response) ?? asked;
      if (this.registeredFor === undefined)
        this.options.log?.info({ expires: granted }, 'SIP registered with the trunk');
      this.registeredFor = granted;
      next = Math.max(1, granted / 2) * 1000;
      this.scheduleKeepAlive();
    } else {
      this.registeredFor = undefined;
      this.options.log?.warn(
        { status: response.status, reason: response.reason },
        'SIP registration with the trunk failed (OPENLINE_SIP_TRUNK register=true)',
      );
      next = this.options.retryMs ?? 60_000;
    }
    this.timer = setTimeout(() => void this.register(), next);
    this.timer.unref();
  }

  /**
   * The next keep-alive. A TCP or TLS registration whose connection closed registers again instead
   * (the registrar would send calls to a connection that is no more).
   */
  private scheduleKeepAlive(): void {
    clearTimeout(this.keepAlive);
    const stream = this.trunk.transport !== 'udp';
    const every = this.options.keepAliveMs ?? (stream ? KEEPALIVE_MS.stream : KEEPALIVE_MS.udp);
    this.keepAlive = setTimeout(
      () => {
        if (this.stopped || this.registeredFor === undefined) return;
        if (stream && !this.endpoint.isOpen(this.connection)) {
          this.options.log?.info(
            { transport: this.trunk.transport },
            'SIP registration connection closed: registering again',
          );
          clearTimeout(this.timer);
          void this.register();
          return;
        }
        this.endpoint.send(PING, {
          ...this.target,
          ...(this.connection !== undefined && { connection: this.connection }),
        });
        this.scheduleKeepAlive();
      },
      every * (0.8 + 0.2 * Math.random()),
    );
    this.keepAlive.unref();
  }

  /** The expiry the registrar granted our contact: its Contact's expires, else Expires. */
  private granted(response: SipResponse): number | undefined {
    const ours = this.endpoint.hostPort(this.trunk.transport);
    const contacts = response.headers.get('contact') ?? [];
    const contact = contacts.find((c) => c.includes(ours)) ?? contacts[0];
    const value = Number(param(contact, 'expires') ?? header(response, 'expires'));
    return Number.isFinite(value) && value > 0 ? value : undefined;
  }

  /** One REGISTER, answering one digest challenge. */
  private async send(expires: number): Promise<SipResponse> {
    const domain = hostPort(this.trunk.host, this.trunk.port);
    const uri = `sip:${domain}`;
    const aor = `<sip:${this.trunk.username}@${domain}>`;
    const request = (authorization?: { name: string; value: string }): SipRequest => {
      const headers: Headers = new Map([
        ['via', [this.endpoint.via(this.trunk.transport)]],
        ['max-forwards', ['70']],
        ['from', [`${aor};tag=${this.tag}`]],
        ['to', [aor]],
        ['call-id', [this.callId]],
        ['cseq', [`${this.seq++} REGISTER`]],
        ['contact', [this.endpoint.contact(this.trunk.transport, this.trunk.username)]],
        ['expires', [String(expires)]],
        ['user-agent', ['Openline']],
      ]);
      if (authorization) headers.set(authorization.name, [authorization.value]);
      return { kind: 'request', method: 'REGISTER', uri, headers, body: '' };
    };
    const sent = this.endpoint.request(request(), this.target);
    this.remember(sent.connection);
    let response = await sent.response;
    const authorization = answerChallenge(response, this.trunk, { method: 'REGISTER', uri });
    if (authorization) {
      const retry = this.endpoint.request(request(authorization), this.target);
      this.remember(retry.connection);
      response = await retry.response;
    }
    return response;
  }

  /** Over TCP or TLS the registrar sends calls on our connection: it stays open while registered. */
  private remember(connection: number | undefined): void {
    if (connection === this.connection) return;
    this.endpoint.keep(this.connection, false);
    this.endpoint.keep(connection, true);
    this.connection = connection;
  }
}
