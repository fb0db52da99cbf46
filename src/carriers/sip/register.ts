import { randomUUID } from 'node:crypto';
import type { SipTrunk } from '../../domain/sip-trunk.js';
import { answerChallenge } from './digest.js';
import { hostPort, type SipEndpoint, type Target } from './endpoint.js';
import { header, newTag, param, type Headers, type SipRequest, type SipResponse } from './message.js';

/** How long a registration is asked for (seconds); the registrar may grant less. */
export const REGISTER_EXPIRES = 3600;

export interface RegistrationOptions {
  /** Seconds asked for. Default REGISTER_EXPIRES. */
  expires?: number;
  /** After a failure, the next attempt waits this long. Default 60 s. */
  retryMs?: number;
  log?: { info(object: object, message: string): void; warn(object: object, message: string): void };
}

/**
 * Registration with a trunk (RFC 3261 section 10) for providers that send calls only to a
 * registered contact: REGISTER with the trunk's user (digest authentication on 401/407), renewed
 * when half of the granted time has passed, retried after a failure, and removed (Expires: 0) on
 * shutdown. Calls then arrive at our Contact, `sip:<user>@<our address>`.
 */
export class SipRegistration {
  private readonly callId = `${randomUUID()}@openline`;
  private readonly tag = newTag();
  private seq = 1;
  private timer: NodeJS.Timeout | undefined;
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
