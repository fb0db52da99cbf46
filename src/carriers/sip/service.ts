import fs from 'node:fs';
import os from 'node:os';
import type { Services } from '../../services.js';
import { createConnectedCall } from '../../calls/inbound.js';
import type { AudioLegFactory, CarrierLogger } from '../audio-legs.js';
import { isTrunkAddress, sourceGuard } from './allow.js';
import { SipCarrier } from './carrier.js';
import { SipEndpoint } from './endpoint.js';
import { SipRegistration } from './register.js';
import { checkedAddresses } from '../../outbound/addresses.js';
import { parseTrunk, type SipTrunk } from '../../domain/sip-trunk.js';
import type { CarrierCredential } from '../../schemas/account.js';
import type { DialRequest } from '../types.js';

/** An account's trunk from its stored credentials: the URI, with the separate user and password over its own. */
function accountTrunk(credential: CarrierCredential | undefined): SipTrunk | undefined {
  if (credential?.provider !== 'sip') return undefined;
  const trunk = parseTrunk(credential.trunk);
  if (typeof trunk === 'string') return undefined;
  return {
    ...trunk,
    ...(credential.username !== undefined && { username: credential.username }),
    ...(credential.password !== undefined && { password: credential.password }),
  };
}

/** How often the registrations of accounts' trunks are checked against the stored trunks (other processes add some). */
const ACCOUNT_TRUNKS_SYNC_MS = 60_000;

/**
 * The registrations of the accounts' own trunks that ask for one (`;register=true` in the trunk
 * URI), one SipRegistration per stored trunk, as the server-wide trunk's: started for every such
 * trunk when SIP starts, when one is added, and within a minute when another process added it;
 * removed (Expires: 0) when the trunk is deleted and on shutdown.
 */
class AccountRegistrations {
  private readonly running = new Map<string, SipRegistration>();
  private readonly timer: NodeJS.Timeout;
  private syncing: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly endpoint: SipEndpoint,
    private readonly services: Services,
    private readonly log: CarrierLogger | undefined,
  ) {
    this.timer = setInterval(() => void this.sync(), ACCOUNT_TRUNKS_SYNC_MS);
    this.timer.unref();
  }

  /** Brings the registrations in line with the stored trunks (one sync at a time). */
  sync(): Promise<void> {
    this.syncing = this.syncing
      .then(() => this.syncOnce())
      .catch((error: unknown) => {
        this.log?.warn({ err: error }, "SIP: the accounts' trunks could not be read for registration");
      });
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    if (this.stopped) return;
    const { credentials } = this.services;
    const wanted = new Map<string, SipTrunk & { username: string }>();
    for (const { account_id, id } of await credentials.references('sip')) {
      const trunk = accountTrunk(await credentials.resolve(account_id, id).catch(() => undefined));
      if (!trunk?.register || trunk.username === undefined) continue;
      // As its calls: an account's trunk is registered with at public addresses only.
      const checked = await checkedAddresses(trunk.host, { allowPrivate: this.services.config.allowPrivateUrls });
      if ('refused' in checked) {
        this.log?.warn({ account_id, reason: checked.refused }, "SIP: an account's trunk is not registered with");
        continue;
      }
      wanted.set(id, { ...trunk, username: trunk.username });
    }
    for (const [id, registration] of this.running)
      if (!wanted.has(id)) {
        this.running.delete(id);
        await registration.stop();
      }
    for (const [id, trunk] of wanted)
      if (!this.running.has(id) && !this.stopped) {
        const registration = new SipRegistration(this.endpoint, trunk, { ...(this.log && { log: this.log }) });
        this.running.set(id, registration);
        registration.start();
      }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.syncing;
    await Promise.all([...this.running.values()].map((r) => r.stop()));
    this.running.clear();
  }
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
      ...(sip.t1Ms !== undefined && { t1Ms: sip.t1Ms }),
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
  const accountRegistrations = new AccountRegistrations(endpoint, services, log);
  const carrier = new SipCarrier({
    endpoint,
    registrations: [...(registration ? [registration] : []), accountRegistrations],
    accountTrunksChanged: () => accountRegistrations.sync(),
    ...(sip.trunk && { trunk: sip.trunk }),
    // A call that names the account's own trunk (encrypted_key with "provider": "sip") goes there.
    trunkFor: async (request) => accountTrunk(await credentialOf(request)),
    rtpPorts: sip.rtpPorts,
    ...(sip.rtpTimeoutMs !== undefined && { rtpTimeoutMs: sip.rtpTimeoutMs }),
    rtpHost: sip.listen.host,
    // Between the 20 ms grid's slots: a burst of calls' packets never makes their frames late.
    deferInbound: (task) => services.frames.defer(task),
    audioLeg,
    allowed,
    allowPrivateAddresses: services.config.allowPrivateUrls,
    ...(services.config.twilioPhoneNumber && { defaultFrom: services.config.twilioPhoneNumber }),
    ...(log && { log }),
    inbound: {
      async accept(to, from, sipCallId, source) {
        if (services.draining) return { status: 503, reason: 'Service Unavailable' };
        const holder = await services.inbound.findHolder(to);
        const ownTrunk = async () =>
          holder?.credentialId
            ? accountTrunk(await services.credentials.resolve(holder.accountId, holder.credentialId))
            : undefined;
        const at = async (trunk: SipTrunk | undefined) =>
          trunk !== undefined && (await isTrunkAddress(trunk.host, source.address)) ? trunk : undefined;
        // From outside the allow-list: only to a number of the account's own trunk, from that trunk.
        if (!source.trusted && !(await at(await ownTrunk()))) return { status: 403, reason: 'Forbidden' };
        if (!holder) return { status: 404, reason: 'Not Found' };
        // The trunk the call came from (by its address) answers for the requests Openline sends in
        // it (a challenged BYE): looked up when a challenge comes.
        const credentials = async () => {
          const trunk = (await at(await ownTrunk())) ?? (await at(sip.trunk));
          return trunk && { username: trunk.username, password: trunk.password };
        };
        if (await services.blocked.get(holder.accountId, from)) return { status: 603, reason: 'Decline' };
        const row = await createConnectedCall(services, holder.accountId, holder.number, from, 'inbound', {
          carrier: 'sip',
          carrierCallId: sipCallId,
        });
        return { callId: row.id, request: row.request, credentials };
      },
      answer(callId, leg) {
        void services.engine.answer(callId, leg);
      },
      async cancelled(callId) {
        // As a call that was never answered: it lasted and cost nothing.
        await services.calls.transition(callId, ['queued'], {
          queue_status: 'complete',
          status: 'completed',
          completed: true,
          call_length: 0,
          corrected_duration: 0,
          price: 0,
          call_ended_by: 'USER',
          ended_at: services.clock.now().toISOString(),
        });
      },
    },
  });
  registration?.start();
  await accountRegistrations.sync();
  return carrier;
}
