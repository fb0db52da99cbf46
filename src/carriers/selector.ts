import type { Carrier, DialRequest, DialResult } from './types.js';
import type { CarrierCredential } from '../schemas/account.js';
import type { TwilioCarrier } from './twilio/carrier.js';
import type { SipCarrier } from './sip/carrier.js';

/** A call on the account's own SIP trunk while SIP is off (OPENLINE_SIP_LISTEN=off, or its port taken). */
const SIP_OFF: Carrier = {
  name: 'sip',
  dial: async () => ({ status: 'failed', reason: 'SIP is off on this server (OPENLINE_SIP_LISTEN)' }),
};

/**
 * Picks each outbound call's carrier: the account's own credentials (encrypted_key: Twilio or a
 * SIP trunk) first, then the server's SIP trunk, then the server's Twilio account, else the sandbox. Sandbox numbers
 * (+1 NPA 555-01XX) always ring on the sandbox unless the call names credentials.
 */
export class CarrierSelector implements Carrier {
  readonly name = 'auto';
  private sip: SipCarrier | undefined;

  constructor(
    private readonly sandbox: Carrier,
    private readonly twilio: TwilioCarrier,
    /** The carrier credentials the call named with encrypted_key, if any. */
    private readonly credentialOf: (request: DialRequest) => Promise<CarrierCredential | undefined>,
  ) {}

  /** The SIP carrier, once its listener is up (src/services.ts startWorkers). */
  useSip(sip: SipCarrier | undefined): void {
    this.sip = sip;
  }

  private async pick(request: DialRequest): Promise<Carrier> {
    const own = await this.credentialOf(request);
    if (own?.provider === 'twilio') return this.twilio;
    if (own?.provider === 'sip') return this.sip ?? SIP_OFF;
    if (this.sip?.serves(request.to)) return this.sip;
    return this.twilio.servesWithServerAccount(request.to) ? this.twilio : this.sandbox;
  }

  async dial(request: DialRequest): Promise<DialResult> {
    return (await this.pick(request)).dial(request);
  }

  async callerId(request: DialRequest): Promise<string | null> {
    return (await (await this.pick(request)).callerId?.(request)) ?? null;
  }
}
