import type { Carrier, DialRequest, DialResult } from './types.js';
import type { TwilioCarrier } from './twilio/carrier.js';
import type { SipCarrier } from './sip/carrier.js';

/**
 * Picks each outbound call's carrier: the account's own Twilio credentials (encrypted_key) first,
 * then the server's SIP trunk, then the server's Twilio account, else the sandbox. Sandbox numbers
 * (+1 NPA 555-01XX) always ring on the sandbox unless the call names credentials.
 */
export class CarrierSelector implements Carrier {
  readonly name = 'auto';
  private sip: SipCarrier | undefined;

  constructor(
    private readonly sandbox: Carrier,
    private readonly twilio: TwilioCarrier,
  ) {}

  /** The SIP carrier, once its listener is up (src/services.ts startWorkers). */
  useSip(sip: SipCarrier | undefined): void {
    this.sip = sip;
  }

  private async pick(request: DialRequest): Promise<Carrier> {
    const twilio = await this.twilio.serving(request);
    if (twilio === 'credentials') return this.twilio;
    if (this.sip?.serves(request.to)) return this.sip;
    return twilio === 'server' ? this.twilio : this.sandbox;
  }

  async dial(request: DialRequest): Promise<DialResult> {
    return (await this.pick(request)).dial(request);
  }

  async callerId(request: DialRequest): Promise<string | null> {
    return (await (await this.pick(request)).callerId?.(request)) ?? null;
  }
}
