import fs from 'node:fs';
import os from 'node:os';
import type { Services } from '../../services.js';
import { createConnectedCall } from '../../calls/inbound.js';
import { requestOf } from '../../store/calls.js';
import type { AudioLegFactory, CarrierLogger } from '../audio-legs.js';
import { sourceGuard } from './allow.js';
import { SipCarrier } from './carrier.js';
import { SipEndpoint } from './endpoint.js';
import { SipRegistration } from './register.js';
import { parseTrunk, type SipTrunk } from '../../domain/sip-trunk.js';
import type { CarrierCredential } from '../../schemas/account.js';
import type { DialRequest } from '../types.js';

/** An account's trunk from its stored credentials: the URI, with the separate user and password over its own. */
function accountTrunk(credential: Extract<CarrierCredential, { provider: 'sip' }>): SipTrunk | undefined {
  const trunk = parseTrunk(credential.trunk);
  if (typeof trunk === 'string') return undefined;
  return {
    ...trunk,
    ...(credential.username !== undefined && { username: credential.username }),
    ...(credential.password !== undefined && { password: credential.password }),
    // Registration is the server-wide trunk's (OPENLINE_SIP_TRUNK); an account's trunk takes calls by address.
    register: false,
  };
}

/**
 * The address peers reach us at when none is configured: the listening address when it names one,
 * else this machine's first non-internal IPv4 address (loopback on a machine with none).
 */
export function defaultPublicAddress(listenHost: string): string {
  if (listenHost !== '0.0.0.0' && listenHost !== '::') return listenHost;
  for (const addresses of Object.values(os.networkInterfaces()))
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.1';
}

/**
 * Starts SIP (docs/sip.md) when OPENLINE_SIP_LISTEN is not `off`: the listener (UDP and TCP, TLS
 * with a certificate), the carrier that places calls on OPENLINE_SIP_TRUNK, the registration with
 * that trunk when it asks for one, and inbound INVITEs to the accounts' numbers. A port that
 * cannot be bound leaves SIP off with a warning; the API and the other carriers run on.
 */
export async function startSip(
  services: Services,
  audioLeg: AudioLegFactory,
  credentialOf: (request: DialRequest) => Promise<CarrierCredential | undefined>,
  log?: CarrierLogger,
): Promise<SipCarrier | undefined> {
  const sip = services.config.sip;
  if (!sip.listen) return undefined;
  let endpoint: SipEndpoint;
  try {
    const read = (file: string | undefined) => (file ? fs.readFileSync(file, 'utf8') : undefined);
    const cert = read(sip.tls.certFile);
    const key = read(sip.tls.keyFile);
    const ca = read(sip.tls.caFile);
    endpoint = await SipEndpoint.listen({
      host: sip.listen.host,
      port: sip.listen.port,
      publicAddress: sip.publicAddress ?? defaultPublicAddress(sip.listen.host),
      tls: { port: sip.tls.port, ...(cert && { cert }), ...(key && { key }), ...(ca && { ca }) },
      ...(log && { log }),
    });
  } catch (error) {
    log?.warn(
      { err: error, listen: `${sip.listen.host}:${sip.listen.port}`, tls_port: sip.tls.port },
      'SIP is off: the SIP ports could not be opened (OPENLINE_SIP_LISTEN, OPENLINE_SIP_TLS_*)',
    );
    return undefined;
  }
  const trunk = sip.trunk;
  const registration =
    trunk?.register && trunk.username !== undefined
      ? new SipRegistration(endpoint, { ...trunk, username: trunk.username }, { ...(log && { log }) })
      : undefined;
  const allowed = await sourceGuard(sip.allow, sip.trunk?.host);
  const carrier = new SipCarrier({
    endpoint,
    ...(registration && { registration }),
    ...(sip.trunk && { trunk: sip.trunk }),
    // A call that names the account's own trunk (encrypted_key with "provider": "sip") goes there.
    trunkFor: async (request) => {
      const own = await credentialOf(request);
      return own?.provider === 'sip' ? accountTrunk(own) : undefined;
    },
    rtpPorts: sip.rtpPorts,
    rtpHost: sip.listen.host,
    audioLeg,
    allowed,
    ...(services.config.twilioPhoneNumber && { defaultFrom: services.config.twilioPhoneNumber }),
    ...(log && { log }),
    inbound: {
      async accept(to, from, sipCallId) {
        if (services.draining) return { status: 503, reason: 'Service Unavailable' };
        const holder = await services.inbound.findHolder(to);
        if (!holder) return { status: 404, reason: 'Not Found' };
        if (await services.blocked.get(holder.accountId, from)) return { status: 603, reason: 'Decline' };
        const row = await createConnectedCall(services, holder.accountId, holder.number, from, 'inbound', {
          carrier: 'sip',
          carrierCallId: sipCallId,
        });
        return { callId: row.id, request: requestOf(row) };
      },
      answer(callId, leg) {
        void services.engine.answer(callId, leg);
      },
    },
  });
  registration?.start();
  return carrier;
}
