import { randomInt, randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { checkedAddresses } from '../../outbound/addresses.js';
import type { CallRequest } from '../../schemas/call-request.js';
import { normalizePathNumber } from '../../domain/phone.js';
import { isSandboxPersona } from '../../store/inbound.js';
import type { AudioLegFactory, CarrierLogger } from '../audio-legs.js';
import type { Carrier, CallLeg, DialRequest, DialResult, TransferResult } from '../types.js';
import { isTrunkAddress } from './allow.js';
import { answerChallenge } from './digest.js';
import {
  SipEndpoint,
  defaultPort,
  hostPort,
  type Responder,
  type ServerTransaction,
  type Target,
  type Transport,
} from './endpoint.js';
import {
  cseqOf,
  header,
  newBranch,
  newTag,
  param,
  parseUri,
  uriOf,
  userOf,
  type Headers,
  type SipRequest,
  type SipResponse,
} from './message.js';
import { DTMF_EVENTS, RtpSession, type PortRange } from './rtp.js';
import { SdesSession, answer, offer, receives, remoteMedia, type RemoteMedia, type Sdes } from './sdp.js';
import type { SrtpKeys } from './srtp.js';
import {
  MIN_SE,
  SESSION_EXPIRES,
  answerSessionTimer,
  expiryMs,
  minSeOf,
  parseSessionExpires,
  sessionExpiresOf,
  tooBriefHeaders,
} from './timers.js';
import type { SipTrunk } from '../../domain/sip-trunk.js';

/**
 * A number as SIP peers write it in a user part: E.164 with or without `+`, 00 for +, ten US
 * digits, visual separators.
 */
function sipNumber(user: string) {
  return normalizePathNumber(user.replace(/^tel:/i, '').replace(/^00/, '+'));
}

const TRANSPORTS = new Set<string>(['udp', 'tcp', 'tls']);

/** What an inbound INVITE needs from the rest of the service. */
export interface SipInbound {
  /**
   * The call record for an INVITE to `to` from `from`: its id and settings, or the SIP status to
   * refuse it with (404: not one of our numbers; 603: a blocked caller; 503: not taking calls).
   */
  accept(
    to: string,
    from: string,
    sipCallId: string,
    /**
     * Where the INVITE came from. From outside the allow-list (`trusted` false) it is taken only
     * when `to` is a number of an account's own trunk at that address (else 403, whatever the number).
     */
    source: { address: string; trusted: boolean },
  ): Promise<
    | {
        callId: string;
        request: CallRequest;
        /** The user and password of the trunk the call came from (by its address), for its digest challenges. */
        credentials?: () => Promise<Credentials | undefined>;
      }
    | { status: number; reason: string }
  >;
  /** The engine takes the answered call's leg. */
  answer(callId: string, leg: CallLeg): void;
  /** The caller cancelled the INVITE before it was answered: the call on record ends, never connected. */
  cancelled(callId: string): Promise<void>;
}

export interface SipCarrierOptions {
  endpoint: SipEndpoint;
  /** The server-wide trunk (OPENLINE_SIP_TRUNK). */
  trunk?: SipTrunk;
  /** The trunk of the call's own credentials (encrypted_key), when it names one. */
  trunkFor?: (request: DialRequest) => Promise<SipTrunk | undefined>;
  rtpPorts: PortRange;
  /** Where RTP sockets bind (the SIP listening host). */
  rtpHost: string;
  audioLeg: AudioLegFactory;
  inbound?: SipInbound;
  /** The caller id of calls that name no `from`. */
  defaultFrom?: string;
  /**
   * Whose INVITEs are taken for any number (src/carriers/sip/allow.ts); others only for the
   * numbers of an account's own trunk at their address (SipInbound.accept), else 403. Default: anyone.
   */
  allowed?: (address: string) => boolean;
  /** Where the calls' work on the audio they receive runs (RtpSession.open's `defer`): the frame scheduler's defer. */
  deferInbound?: (task: () => void) => void;
  /**
   * OPENLINE_ALLOW_PRIVATE_URLS: a redirect (3xx) and an account's own trunk may lead to loopback,
   * private and link-local addresses, as outbound HTTP may. Otherwise a redirect only to the
   * trunk's own host and public addresses, and an account's trunk only at public addresses (the
   * server-wide OPENLINE_SIP_TRUNK is the operator's and goes anywhere).
   */
  allowPrivateAddresses?: boolean;
  /** RTP silence after which a call is ended (the far end vanished). Default 30 s. */
  rtpTimeoutMs?: number;
  /** The registrations with trunks (register=true), removed when the carrier closes. */
  registrations?: { stop(): Promise<void> }[];
  /** An account's trunks were added or deleted (POST and DELETE /v1/accounts): their registrations follow. */
  accountTrunksChanged?: () => Promise<void>;
  log?: CarrierLogger;
}

/** The methods Openline takes: it sends REFER (transfers) but takes none, so REFER is not among them. */
const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, NOTIFY, UPDATE, PRACK';
const USER_AGENT = 'Openline';
/** The SIP extensions Openline supports (option tags): session timers, reliable provisional responses. */
const SUPPORTED = new Set(['timer', '100rel']);
/** Our Supported header, in the responses that set up a call and in those to OPTIONS. */
const SUPPORTED_HEADER = [...SUPPORTED].join(', ');

/** Final responses that mean the line was busy or the person declined. */
const BUSY = new Set([486, 600, 603]);
/** Final responses that mean nobody answered. */
const NO_ANSWER = new Set([408, 480, 487]);
/** How many times a session refresh answered 491 Request Pending is sent again. */
const MAX_GLARE_RETRIES = 3;
/** How many redirects (3xx) one call follows at most. */
const MAX_REDIRECTS = 5;
/** The redirects followed: 300 Multiple Choices, 301 Moved Permanently, 302 Moved Temporarily. */
const REDIRECTS = new Set([300, 301, 302]);
/** How long the target of a transfer that falls back to a new call may ring. */
const TRANSFER_RING_MS = 30_000;
/**
 * How long a REFER waits for its final response before the transfer falls back to a call of our
 * own, as when it is refused: the person called hears silence meanwhile, so not the 32 s of timer F.
 * A far end that heard the REFER answers it at once (202 or a refusal); silence means it is lost.
 */
const REFER_TIMEOUT_MS = 8000;

/** How an INVITE of ours ended: answered with its dialog, or the DialResult of a call that never was. */
type Placed = { status: 'answered'; dialog: Dialog } | Exclude<DialResult, { status: 'answered' }>;

/** What answers a trunk's digest challenges. */
type Credentials = { username?: string | undefined; password?: string | undefined };

/** A Contact of a redirect to call: its URI, where the INVITE goes, whether that is the trunk's host. */
interface Redirect {
  uri: string;
  target: Target;
  trunkHost: boolean;
  /** The URI and address, to call each once. */
  key: string;
}

/** What a request in a dialog needs (sendInDialog): whose it is, and where and how it goes. */
type Signalling = Pick<
  Dialog,
  'callId' | 'local' | 'remote' | 'remoteTarget' | 'routes' | 'domain' | 'transport' | 'connection' | 'credentials'
> & { localSeq: number };

/**
 * An INVITE of ours whose 2xx is no longer wanted (the call was given up, or another branch of a
 * forked INVITE answered first): where its dialogs' requests go, and the far ends (To tags)
 * already sent BYE.
 */
interface Unwanted {
  domain: string;
  transport: Transport;
  connection: number | undefined;
  credentials: Credentials;
  /** The last CSeq number the INVITE's call used (its PRACKs'): the BYE's comes after. */
  lastSeq: number;
  ended: Set<string>;
}

/** One call's SIP dialog (RFC 3261 section 12): who we talk to and how to reach them. */
class Dialog {
  localSeq = randomInt(1, 10_000);
  ended = false;
  /** Forgotten: out of the carrier's list, its timer stopped, its connection no longer kept. */
  released = false;
  /** The session timer (RFC 4028): the next refresh, or the expiry of a session nobody refreshed. */
  sessionTimer: NodeJS.Timeout | undefined;
  /** The far end takes UPDATE (its Allow): session refreshes use it rather than a re-INVITE. */
  remoteAllowsUpdate = false;
  /** The CSeq of the far end's last request in the dialog (RFC 3261 section 12.2.2); none yet: undefined. */
  remoteSeq: number | undefined;
  /** The Min-SE of the dialog (RFC 4028 section 7.4): our INVITE's, raised by a 422. */
  minSe = MIN_SE;
  /** We made the dialog's Call-ID (a call we placed): how long we wait after a 491 (RFC 3261 section 14.1). */
  ownsCallId = false;
  /** Our 2xx to an INVITE without SDP carried our offer: the answer comes in the ACK. */
  awaitingAnswer = false;
  /** A re-INVITE of ours (a session refresh, with our SDP as its offer) awaits its final response. */
  offering = false;
  /**
   * A call in that is not answered yet, its 180 Ringing sent reliably (RFC 3262): the RSeq and the
   * INVITE's CSeq its PRACK must name, and how the wait for that PRACK ends (`end` with the
   * INVITE's final response: the caller left, or Openline is shutting down).
   */
  early:
    | {
        rseq: number;
        inviteSeq: number;
        acknowledged(): void;
        end(status: number, reason: string): void;
      }
    | undefined;
  /**
   * Called once when the dialog ends: `remote` when the far end ended it (its BYE, its RTP gone),
   * not when we did. A bridge ends with it.
   */
  onEnd: ((remote: boolean) => void) | undefined;
  constructor(
    readonly callId: string,
    readonly localTag: string,
    readonly remoteTag: string,
    readonly local: string,
    readonly remote: string,
    /** The far end's Contact URI: in-dialog requests go there; a target refresh (re-INVITE, UPDATE) moves it. */
    public remoteTarget: string,
    /** Record-Route, in the order our requests carry it as Route. */
    readonly routes: string[],
    readonly rtp: RtpSession,
    /** Where numbers are dialled in this call (the trunk's host:port): REFER targets go there. */
    readonly domain: string,
    /** The transport of the dialog's requests, and the TCP or TLS connection it came on. */
    readonly transport: Transport,
    readonly connection: number | undefined,
    /** Our SDP (offer or answer): a re-INVITE that refreshes the session repeats it. */
    public localSdp: string,
    /** Our o= line's session id and version: one id for the dialog, the version one more on each new description. */
    readonly origin: { sessionId: number; version: number },
    /** The call's SRTP keys (SDES) and what offer and answer settled: every later offer and answer follows it. */
    readonly sdes: SdesSession,
    /**
     * The trunk's user and password (calls we placed; for calls in, those of the trunk the call came
     * from): our requests answer its digest challenges with them.
     */
    readonly credentials?: Credentials | (() => Promise<Credentials | undefined>),
  ) {}
}

/**
 * Calls over a SIP trunk or with a PBX (RFC 3261 over UDP, TCP or TLS): outbound INVITE with
 * digest authentication and early media, CANCEL when nobody answers, busy and failure codes mapped
 * to the seed's states, inbound INVITEs to the account's numbers, BYE both ways, blind transfer by
 * REFER, session timers (RFC 4028), DTMF in by RFC 4733 and SIP INFO; the audio goes through RTP
 * (src/carriers/sip/rtp.ts) into the same audio pipeline as every other carrier.
 */
export class SipCarrier implements Carrier {
  readonly name = 'sip';
  private readonly dialogs = new Map<string, Dialog>();
  /** INVITEs given up (by Call-ID), for a while: a 2xx that still comes is acknowledged and ended with BYE. */
  private readonly unwanted = new Map<string, Unwanted>();

  constructor(private readonly o: SipCarrierOptions) {
    o.endpoint.onRequest((request, from, respond, transaction) => {
      void this.onRequest(request, from, respond, transaction).catch((error: unknown) => {
        o.log?.warn({ err: error }, 'SIP request failed');
        respond(500, 'Server Internal Error');
      });
    });
    // A 2xx to our INVITE that came again (its ACK was lost): ACK again. One of a dialog we do not
    // want (a call given up, another branch of a forked INVITE): ACK and BYE.
    o.endpoint.onRepeated2xx = (response) => {
      const callId = header(response, 'call-id') ?? '';
      const dialog = this.dialogs.get(callId);
      const seq = cseqOf(response)?.seq;
      if (seq === undefined) return;
      if (dialog && dialog.remoteTag === (param(header(response, 'to'), 'tag') ?? ''))
        return void this.sendInDialog(dialog, 'ACK', { seq });
      const unwanted =
        this.unwanted.get(callId) ??
        (dialog &&
          this.giveUp(callId, {
            domain: dialog.domain,
            transport: dialog.transport,
            connection: dialog.connection,
            credentials: typeof dialog.credentials === 'object' ? dialog.credentials : {},
            lastSeq: dialog.localSeq,
          }));
      if (unwanted) this.endUnwanted(response, unwanted);
    };
    // Our 2xx was never acknowledged: the far end does not have the call; it ends (RFC 3261 section 13.3.1.4).
    o.endpoint.onAckTimeout = (callId) => {
      const dialog = this.dialogs.get(callId);
      if (dialog) this.lost(dialog, 'SIP: our 200 OK was never acknowledged (no ACK): hanging up');
    };
  }

  /**
   * The far end's media in its SDP (remoteMedia), when Openline can use it: at an address our RTP
   * sockets can send to. A socket bound to an IPv4 address cannot reach an IPv6 one, nor one bound
   * to an IPv6 address (but `::`, which takes both) an IPv4 one: such an offer gets 488 rather than
   * a call that stays silent. A hold address (0.0.0.0, ::) and a host name always do.
   */
  private mediaOf(sdp: string): RemoteMedia | undefined {
    const media = remoteMedia(sdp);
    if (!media || media.address === '0.0.0.0' || media.address === '::') return media;
    const host = this.o.rtpHost;
    const ipv6Socket = host.includes(':');
    const family = isIP(media.address);
    if (family === 6 && !ipv6Socket) return undefined;
    if (family === 4 && ipv6Socket && host !== '::') return undefined;
    return media;
  }

  /** Whether calls to this number go out on the trunk (any number but the sandbox's own). */
  serves(to: string): boolean {
    return this.o.trunk !== undefined && !isSandboxPersona(to);
  }

  async callerId(request: DialRequest): Promise<string | null> {
    return request.from ?? this.o.defaultFrom ?? null;
  }

  async dial(request: DialRequest): Promise<DialResult> {
    const settings = request.request;
    if (!settings) return { status: 'failed', reason: 'a SIP call needs its settings' };
    const placed = await this.invite(request);
    if (placed.status !== 'answered') return placed;
    return { status: 'answered', leg: this.leg(placed.dialog, settings, request.callId) };
  }

  /**
   * An outbound INVITE through the call's trunk (the account's own, else OPENLINE_SIP_TRUNK) until
   * it is answered or fails: the calls of dial() and the second call of a transfer that REFER could not make.
   */
  private async invite(request: DialRequest): Promise<Placed> {
    const own = await this.o.trunkFor?.(request);
    const trunk = own ?? this.o.trunk;
    if (!trunk) return { status: 'failed', reason: 'no SIP trunk is configured (OPENLINE_SIP_TRUNK)' };
    let target: Target = { host: trunk.host, port: trunk.port, transport: trunk.transport };
    if (own) {
      // An account's own trunk is the account's to set, not the operator's: it may reach public
      // addresses only (unless OPENLINE_ALLOW_PRIVATE_URLS), as every URL an account gives.
      const checked = await checkedAddresses(own.host, { allowPrivate: this.o.allowPrivateAddresses });
      if ('refused' in checked)
        return { status: 'failed', reason: `the account's SIP trunk was not called: ${checked.refused}` };
      if (own.transport !== 'tls') target = { ...target, host: checked.addresses[0]!.address };
    }
    const rtp = await this.openRtp();
    const endpoint = this.o.endpoint;
    const domain = hostPort(trunk.host, trunk.port);
    const callerId = request.from ?? this.o.defaultFrom ?? trunk.username ?? 'openline';
    const callId = `${randomUUID()}@openline`;
    await request.placed?.({ carrier: 'sip', carrierCallId: callId });
    const localTag = newTag();
    let uri = `sip:${request.to}@${domain}`;
    /** Where a redirect sent the call (its Contact's URI and address), else the trunk. */
    let redirected: Redirect | undefined;
    const alternatives: Redirect[] = [];
    const tried = new Set<string>([`${uri}|${target.transport}|${target.host}|${target.port}`]);
    const local = `<sip:${callerId}@${domain}>;tag=${localTag}`;
    const remote = `<sip:${request.to}@${domain}>`;
    const origin = { sessionId: randomInt(1, 2 ** 31), version: 1 };
    const sdes = new SdesSession(trunk.srtp);
    const sdp = offer({ address: endpoint.address, port: rtp.port, ...origin }, sdes.offer());
    let seq = 1;
    /** The last CSeq number used in the call: the INVITE's, or its PRACKs' after it. */
    let lastSeq = seq;
    let sessionExpires = SESSION_EXPIRES;
    let minSe = MIN_SE;
    let authorization: { name: string; value: string } | undefined;
    const invite = (): SipRequest => {
      const headers: Headers = new Map([
        ['via', [endpoint.via(target.transport)]],
        ['max-forwards', ['70']],
        ['from', [local]],
        ['to', [remote]],
        ['call-id', [callId]],
        ['cseq', [`${seq} INVITE`]],
        ['contact', [endpoint.contact(target.transport)]],
        ['allow', [ALLOW]],
        ['supported', ['timer, 100rel']],
        ['session-expires', [String(sessionExpires)]],
        ['min-se', [String(minSe)]],
        ['user-agent', [USER_AGENT]],
        ['content-type', ['application/sdp']],
      ]);
      if (request.from) headers.set('p-asserted-identity', [`<sip:${request.from}@${domain}>`]);
      if (authorization) headers.set(authorization.name, [authorization.value]);
      return { kind: 'request', method: 'INVITE', uri, headers, body: sdp };
    };
    // Early media (a 183 or 180 with SDP): its RTP is taken from then on, heard by nobody until the answer.
    let early: RemoteMedia | undefined;
    /** The RSeq of the last reliable provisional response of each early dialog (To tag). */
    const rseqs = new Map<string, number>();
    /** The early dialogs PRACKs went in: their CSeq numbers (a challenged PRACK takes two) come before the call's next. */
    const acknowledged: Signalling[] = [];
    const usedSeq = () => Math.max(lastSeq, ...acknowledged.map((d) => d.localSeq));
    const onProvisional = (response: SipResponse) => {
      const rseq = reliableRSeq(response);
      const tag = param(header(response, 'to'), 'tag') ?? '';
      const last = rseqs.get(tag);
      if (rseq !== undefined && (last === undefined || rseq === last + 1)) {
        // A reliable provisional response (RFC 3262): PRACK in its early dialog, once (a
        // retransmission or one out of order is not acknowledged again).
        rseqs.set(tag, rseq);
        const dialog: Signalling = {
          callId,
          local,
          remote: header(response, 'to') ?? remote,
          remoteTarget: uriOf(header(response, 'contact')) ?? uri,
          routes: [...(response.headers.get('record-route') ?? [])].reverse(),
          domain,
          transport: target.transport ?? 'udp',
          connection: sent.connection,
          credentials: redirected?.trunkHost === false ? {} : trunk,
          localSeq: usedSeq(),
        };
        acknowledged.push(dialog);
        void this.sendInDialog(dialog, 'PRACK', { headers: new Map([['rack', [`${rseq} ${seq} INVITE`]]]) });
      }
      const media = response.body ? this.mediaOf(response.body) : undefined;
      const keyed = media && sdes.answered(media);
      if (!media || !keyed || keyed === 'refused') return;
      early = media;
      connectMedia(rtp, media, { early: true, srtp: keyed.keys });
    };

    let sent = endpoint.request(invite(), target, onProvisional);
    let cancelled: 'timeout' | 'stopped' | undefined;
    const cancel = (why: 'timeout' | 'stopped') => {
      if (cancelled) return;
      cancelled = why;
      // Once the INVITE heard a provisional response; a far end that never answers the INVITE
      // after the CANCEL (no 487) does not hold the call: 64 T1 at most.
      endpoint.cancel(sent.branch);
    };
    const ring = setTimeout(() => cancel('timeout'), request.ringTimeoutMs);
    const onAbort = () => cancel('stopped');
    request.signal.addEventListener('abort', onAbort);

    const unwanted = () =>
      this.giveUp(callId, {
        domain,
        transport: target.transport ?? 'udp',
        connection: sent.connection,
        credentials: redirected?.trunkHost === false ? {} : trunk,
        lastSeq: usedSeq(),
      });
    try {
      let response = await sent.response;
      let challenged = false;
      let briefed = false;
      let redirects = 0;
      /** Why a redirect was not followed, for the call's error. */
      let unfollowed: string | undefined;
      for (;;) {
        if (cancelled) break;
        // One answer to a digest challenge (401 from a registrar-like trunk, 407 from a proxy);
        // the trunk's credentials go to the trunk's own host only, never where a redirect led.
        if ((response.status === 401 || response.status === 407) && !challenged) {
          challenged = true;
          authorization = answerChallenge(response, redirected?.trunkHost === false ? undefined : trunk, {
            method: 'INVITE',
            uri,
          });
          if (!authorization) {
            rtp.close();
            unwanted();
            return {
              status: 'failed',
              reason:
                redirected?.trunkHost === false
                  ? `SIP ${response.status}: where the trunk redirected the call wants credentials`
                  : `SIP ${response.status}: the trunk wants credentials (user:password@ in OPENLINE_SIP_TRUNK)`,
            };
          }
        } else if (REDIRECTS.has(response.status) || (alternatives.length > 0 && !BUSY.has(response.status))) {
          // A redirect (RFC 3261 section 8.1.3.4): its Contacts, best q first, ahead of those of an
          // earlier one; a Contact that fails gives way to the next. A few hops, allowed addresses only.
          if (REDIRECTS.has(response.status)) {
            const found = await this.redirects(response, trunk);
            unfollowed = found.refused;
            alternatives.unshift(...found.allowed.filter((r) => !tried.has(r.key)));
          }
          const next = alternatives.shift();
          if (!next || redirects >= MAX_REDIRECTS) {
            if (next) unfollowed = `more than ${MAX_REDIRECTS} redirects`;
            break;
          }
          redirects++;
          tried.add(next.key);
          redirected = next;
          uri = next.uri;
          target = next.target;
          // A new target: its own challenge, if any, is answered afresh.
          authorization = undefined;
          challenged = false;
          if (cancelled) break;
        } else if (response.status === 422 && !briefed && (minSeOf(response) ?? 0) > minSe) {
          // 422 Session Interval Too Small: ask again with the far end's minimum as our interval
          // (when ours is smaller) and our Min-SE (RFC 4028 section 7.4).
          briefed = true;
          minSe = minSeOf(response)!;
          sessionExpires = Math.max(sessionExpires, minSe);
        } else break;
        seq = lastSeq = usedSeq() + 1;
        sent = endpoint.request(invite(), target, onProvisional);
        response = await sent.response;
      }
      if (response.status >= 200 && response.status < 300 && cancelled) {
        // Answered as we gave up (the 200 crossed the CANCEL): the far end holds a call nobody wants.
        rtp.close();
        this.endUnwanted(response, unwanted());
        return { status: 'no-answer' };
      }
      if (response.status >= 200 && response.status < 300)
        return this.connected(uri, response, rtp, {
          credentials: redirected?.trunkHost === false ? {} : trunk,
          domain,
          minSe,
          callId,
          localTag,
          local,
          seq,
          lastSeq: usedSeq(),
          target,
          connection: sent.connection,
          sdp,
          origin,
          sdes,
          early,
        });
      rtp.close();
      // A 2xx may still come (after a made-up 408 or 487 above all): it gets ACK and BYE.
      unwanted();
      if (cancelled || NO_ANSWER.has(response.status)) return { status: 'no-answer' };
      if (BUSY.has(response.status)) return { status: 'busy' };
      const status = `SIP ${response.status} ${response.reason}`.trim();
      if (REDIRECTS.has(response.status))
        return { status: 'failed', reason: `${status}: redirect not followed (${unfollowed ?? 'no Contact to call'})` };
      return { status: 'failed', reason: status };
    } finally {
      clearTimeout(ring);
      request.signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * The Contacts of a redirect that a call may follow, best q first: sip: and sips: URIs at the
   * trunk's own host, else at public addresses only (unless OPENLINE_ALLOW_PRIVATE_URLS), as for
   * every outbound request of Openline; and why others were refused.
   */
  private async redirects(
    response: SipResponse,
    trunk: SipTrunk,
  ): Promise<{ allowed: Redirect[]; refused: string | undefined }> {
    const contacts = (response.headers.get('contact') ?? [])
      .map((value) => ({ uri: uriOf(value) ?? '', q: Number(param(value, 'q') ?? 1) }))
      .sort((a, b) => (Number.isNaN(b.q) ? 0 : b.q) - (Number.isNaN(a.q) ? 0 : a.q));
    const allowed: Redirect[] = [];
    let refused: string | undefined;
    for (const contact of contacts) {
      const parsed = parseUri(contact.uri);
      if (!parsed || !/^sips?:/i.test(contact.uri)) {
        refused = 'a Contact that is not a SIP URI';
        continue;
      }
      const named = parsed.params.transport?.toLowerCase();
      const transport: Transport = /^sips:/i.test(contact.uri)
        ? 'tls'
        : named && TRANSPORTS.has(named)
          ? (named as Transport)
          : 'udp';
      const port = parsed.port ?? defaultPort(transport);
      const trunkHost =
        parsed.host.toLowerCase() === trunk.host.toLowerCase() || (await isTrunkAddress(trunk.host, parsed.host));
      let host = parsed.host;
      if (!trunkHost) {
        const checked = await checkedAddresses(host, { allowPrivate: this.o.allowPrivateAddresses });
        if ('refused' in checked) {
          refused = checked.refused;
          continue;
        }
        // To the address just checked (TLS: to the name, which its certificate must match).
        if (transport !== 'tls') host = checked.addresses[0]!.address;
      }
      const uri = contact.uri.split('?')[0]!;
      allowed.push({
        uri,
        target: { host, port, transport },
        trunkHost,
        key: `${uri}|${transport}|${host}|${port}`,
      });
    }
    return { allowed, refused };
  }

  /**
   * Remembers an INVITE of ours as given up (for as long as Timer C, 3 minutes): a 2xx that comes
   * for it is acknowledged and ended (endUnwanted).
   */
  private giveUp(callId: string, call: Omit<Unwanted, 'ended'>): Unwanted {
    const known = this.unwanted.get(callId);
    if (known) return known;
    const unwanted = { ...call, ended: new Set<string>() };
    this.unwanted.set(callId, unwanted);
    setTimeout(() => this.unwanted.delete(callId), this.o.endpoint.inviteTimeoutMs).unref();
    return unwanted;
  }

  /**
   * A 2xx to an INVITE Openline no longer wants: the dialog it set up is acknowledged (each time
   * the 2xx comes) and ended at once with BYE (once), so that the far end holds no call nobody is
   * on (RFC 3261 sections 13.2.2.4 and 15).
   */
  private endUnwanted(response: SipResponse, unwanted: Unwanted): void {
    const seq = cseqOf(response)?.seq;
    const remoteTag = param(header(response, 'to'), 'tag') ?? '';
    if (seq === undefined) return;
    const dialog: Signalling = {
      callId: header(response, 'call-id') ?? '',
      local: header(response, 'from') ?? '',
      remote: header(response, 'to') ?? '',
      remoteTarget: uriOf(header(response, 'contact')) ?? `sip:${unwanted.domain}`,
      routes: [...(response.headers.get('record-route') ?? [])].reverse(),
      domain: unwanted.domain,
      transport: unwanted.transport,
      connection: unwanted.connection,
      credentials: unwanted.credentials,
      localSeq: Math.max(seq, unwanted.lastSeq),
    };
    void this.sendInDialog(dialog, 'ACK', { seq });
    if (unwanted.ended.has(remoteTag)) return;
    unwanted.ended.add(remoteTag);
    this.o.log?.info({ sip_call_id: dialog.callId }, 'SIP: a 200 OK came for a call given up: ACK and BYE');
    void this.sendInDialog(dialog, 'BYE');
  }

  /** The INVITE was answered: ACK, media (the answer's SDP, else the early media's), the session timer. */
  private connected(
    uri: string,
    response: SipResponse,
    rtp: RtpSession,
    call: {
      credentials: Credentials;
      /** The trunk's host:port: numbers are dialled there (REFER). */
      domain: string;
      minSe: number;
      callId: string;
      localTag: string;
      local: string;
      /** The INVITE's CSeq number (its ACK's), and the last one used (its PRACKs'). */
      seq: number;
      lastSeq: number;
      target: Target;
      connection: number | undefined;
      sdp: string;
      origin: { sessionId: number; version: number };
      sdes: SdesSession;
      early: RemoteMedia | undefined;
    },
  ): Placed {
    const domain = call.domain;
    const remoteTarget = uriOf(header(response, 'contact')) ?? uri;
    const routes = [...(response.headers.get('record-route') ?? [])].reverse();
    const dialog = new Dialog(
      call.callId,
      call.localTag,
      param(header(response, 'to'), 'tag') ?? '',
      call.local,
      header(response, 'to') ?? '',
      remoteTarget,
      routes,
      rtp,
      domain,
      call.target.transport ?? 'udp',
      call.connection,
      call.sdp,
      call.origin,
      call.sdes,
      call.credentials,
    );
    dialog.localSeq = call.lastSeq;
    dialog.ownsCallId = true;
    dialog.minSe = call.minSe;
    dialog.remoteAllowsUpdate = allowsUpdate(response.headers);
    this.dialogs.set(call.callId, dialog);
    this.o.endpoint.keep(dialog.connection, true);
    this.sendInDialog(dialog, 'ACK', { seq: call.seq });
    const media = (response.body ? this.mediaOf(response.body) : undefined) ?? call.early;
    if (!media) {
      void this.bye(dialog);
      return {
        status: 'failed',
        reason:
          'the answer carried no audio we can use (SDP without PCMU or PCMA, or at an address of the other IP version)',
      };
    }
    const keyed = call.sdes.answered(media);
    if (keyed === 'refused') {
      void this.bye(dialog);
      return { status: 'failed', reason: SRTP_REFUSED };
    }
    connectMedia(rtp, media, { srtp: keyed.keys });
    this.watchMedia(dialog);
    this.armSessionTimer(dialog, sessionExpiresOf(response), true);
    return { status: 'answered', dialog };
  }

  /**
   * Arms the dialog's session timer from a Session-Expires value of a transaction we were the
   * client of (`weAreUac`) or the server of: refresh at half the interval when we are the
   * refresher, else end the call when the interval is about to run out unrefreshed. No value: no
   * timer.
   */
  private armSessionTimer(dialog: Dialog, value: string | undefined, weAreUac: boolean): void {
    clearTimeout(dialog.sessionTimer);
    dialog.sessionTimer = undefined;
    const expires = parseSessionExpires(value);
    if (!expires || dialog.ended) return;
    const weRefresh = (expires.refresher ?? 'uac') === 'uac' ? weAreUac : !weAreUac;
    dialog.sessionTimer = weRefresh
      ? setTimeout(() => void this.refreshSession(dialog, expires.interval), expires.interval * 500)
      : setTimeout(() => this.sessionExpired(dialog), expiryMs(expires.interval));
  }

  /** Refreshes the session as its refresher: UPDATE when the far end takes it, else a re-INVITE with our SDP. */
  private async refreshSession(dialog: Dialog, interval: number, glare = 0, briefed = false): Promise<void> {
    if (dialog.ended) return;
    const method = dialog.remoteAllowsUpdate ? 'UPDATE' : 'INVITE';
    const seq = dialog.localSeq + 1;
    dialog.offering = method === 'INVITE';
    const response = await this.sendInDialog(dialog, method, {
      headers: new Map([
        ['session-expires', [`${interval};refresher=uac`]],
        // Never above the interval (the far end may have chosen one under our Min-SE).
        ['min-se', [String(Math.min(dialog.minSe, interval))]],
        ['supported', ['timer']],
      ]),
      ...(method === 'INVITE' && { body: dialog.localSdp }),
    }).finally(() => (dialog.offering = false));
    if (dialog.ended) return;
    if (response && response.status >= 200 && response.status < 300) {
      // The CSeq of the INVITE answered (a challenged one was sent again with the next).
      if (method === 'INVITE') this.sendInDialog(dialog, 'ACK', { seq: cseqOf(response)?.seq ?? seq });
      // The answer to the refresh's offer (our SDP again): its address, and its SRTP key, may be new.
      const media = method === 'INVITE' && response.body ? this.mediaOf(response.body) : undefined;
      if (media && !this.answeredBy(dialog, media)) return this.lost(dialog, `SIP: ${SRTP_REFUSED}: hanging up`);
      retarget(dialog, response);
      if (allowsUpdate(response.headers)) dialog.remoteAllowsUpdate = true;
      // A 2xx without Session-Expires turns the timer off (RFC 4028 section 7.4).
      return this.armSessionTimer(dialog, sessionExpiresOf(response), true);
    }
    // The dialog is gone at the far end, or nobody answers (a re-INVITE cancelled after Timer C
    // ends with 487 or 408): the session is over.
    if (!response || [408, 481, 487].includes(response.status)) return this.sessionExpired(dialog);
    const asked = minSeOf(response);
    if (response.status === 422 && !briefed && asked !== undefined && asked > interval) {
      // Too brief for the far end now: the refresh again at once, with its minimum (RFC 4028 section 7.4).
      dialog.minSe = Math.max(dialog.minSe, asked);
      return this.refreshSession(dialog, asked, glare, true);
    }
    if (response.status === 491 && glare < MAX_GLARE_RETRIES) {
      // Glare: the far end's own re-INVITE or UPDATE crossed ours. Ours goes again after a random
      // wait (RFC 3261 section 14.1): 2.1 to 4 s when we made the Call-ID, else up to 2 s, in 10 ms steps.
      const wait = (dialog.ownsCallId ? randomInt(210, 401) : randomInt(0, 201)) * 10;
      dialog.sessionTimer = setTimeout(() => void this.refreshSession(dialog, interval, glare + 1, briefed), wait);
      return;
    }
    // Refused otherwise (500, 491 again and again): the session runs out unless the far end refreshes it.
    this.armSessionTimer(dialog, `${interval};refresher=uas`, true);
  }

  /** Nobody refreshed the session in time: the call ends (BYE), as when its RTP stops. */
  private sessionExpired(dialog: Dialog): void {
    this.lost(dialog, 'SIP session expired without a refresh (RFC 4028): hanging up');
  }

  /** The far end is gone by the signalling (`why`, a static message for the log): the call ends with BYE, as when its RTP stops. */
  private lost(dialog: Dialog, why: string): void {
    if (dialog.ended) return;
    this.o.log?.info({ sip_call_id: dialog.callId }, why);
    dialog.rtp.stop('network');
    void this.bye(dialog);
  }

  /** The dialog is over: out of the list, its timer stopped, its connection no longer kept for it. */
  private release(dialog: Dialog): void {
    if (dialog.released) return;
    dialog.released = true;
    this.dialogs.delete(dialog.callId);
    clearTimeout(dialog.sessionTimer);
    this.o.endpoint.forgetUnacknowledged(dialog.callId);
    this.o.endpoint.keep(dialog.connection, false);
  }

  /** The dialog's media stopped (BYE from the far end, or its RTP went silent): the dialog is over. */
  private watchMedia(dialog: Dialog): void {
    dialog.rtp.on((event) => {
      if (event.type === 'stop') {
        this.release(dialog);
        // RTP went silent: the far end is gone without a BYE; say goodbye for the record.
        if (event.reason === 'network') void this.bye(dialog, true);
      }
    });
  }

  /** The dialog ended (`remote`: by the far end): once, its bridge (if any) hears of it. */
  private ended(dialog: Dialog, remote: boolean): void {
    if (dialog.ended) return;
    dialog.ended = true;
    const onEnd = dialog.onEnd;
    dialog.onEnd = undefined;
    onEnd?.(remote);
  }

  private leg(dialog: Dialog, request: CallRequest, callId: string): CallLeg {
    return this.o.audioLeg(dialog.rtp, request, callId, {
      transfer: (to) => this.transfer(dialog, to, request, callId),
      hangup: () => this.bye(dialog),
    });
  }

  /** An account's trunks were added or deleted: the registrations of those that ask for one follow. */
  async accountTrunksChanged(): Promise<void> {
    await this.o.accountTrunksChanged?.();
  }

  private openRtp(): Promise<RtpSession> {
    return RtpSession.open(this.o.rtpHost, this.o.rtpPorts, {
      timeoutMs: this.o.rtpTimeoutMs ?? 30_000,
      ...(this.o.deferInbound && { defer: this.o.deferInbound }),
    });
  }

  /** Stops listening (shutdown): calls still up are ended with BYE first, registrations removed. */
  async close(): Promise<void> {
    const byes = Promise.all([...this.dialogs.values()].map((dialog) => this.bye(dialog)));
    await Promise.race([byes, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    await Promise.all((this.o.registrations ?? []).map((r) => r.stop()));
    this.o.endpoint.close();
  }

  /** Ends the call from our side (`gone`: the far end's RTP went silent first): BYE, and the media closes. */
  private async bye(dialog: Dialog, gone = false): Promise<void> {
    // Not answered yet (waiting for a PRACK): no BYE, the INVITE is refused (shutdown).
    if (dialog.early) return dialog.early.end(503, 'Service Unavailable');
    if (dialog.ended) return;
    this.ended(dialog, gone);
    this.dialogs.delete(dialog.callId);
    clearTimeout(dialog.sessionTimer);
    this.o.endpoint.forgetUnacknowledged(dialog.callId);
    dialog.rtp.close();
    await this.sendInDialog(dialog, 'BYE');
    this.release(dialog);
  }

  /**
   * Blind transfer: REFER; when the far end refuses it (or does not answer), a call of our own to
   * `to` through the trunk, bridged with this one once answered.
   */
  private async transfer(dialog: Dialog, to: string, request: CallRequest, callId: string): Promise<TransferResult> {
    const referred = await this.refer(dialog, to);
    if (referred.ok || dialog.ended) return referred;
    this.o.log?.info(
      { sip_call_id: dialog.callId, reason: referred.reason },
      'REFER refused or unanswered: calling the transfer target to bridge the call',
    );
    return this.bridgeTo(dialog, to, request, callId);
  }

  /**
   * The transfer's fallback: an INVITE to `to` (the same INVITE client and trunk as outbound
   * calls), and once answered the two calls' RTP relayed to each other (src/carriers/sip/rtp.ts
   * bridge): the agent neither hears nor speaks from then on. Resolves when the bridge ends, with
   * who ended it (the person called: USER; the transfer target: ASSISTANT), the other leg getting
   * BYE; or, when the target is busy, does not answer or fails, with the failure, the person called
   * still talking with the agent (`resumed`).
   */
  private async bridgeTo(dialog: Dialog, to: string, request: CallRequest, callId: string): Promise<TransferResult> {
    const stop = new AbortController();
    // The person called hangs up while the target rings: the ringing stops (CANCEL).
    dialog.onEnd = () => stop.abort();
    const placed = await this.invite({
      callId,
      to,
      from: request.from,
      ringTimeoutMs: TRANSFER_RING_MS,
      signal: stop.signal,
      request,
    });
    dialog.onEnd = undefined;
    if (placed.status !== 'answered') {
      const why =
        placed.status === 'failed' ? placed.reason : placed.status === 'busy' ? 'the line was busy' : 'nobody answered';
      if (dialog.ended) return { ok: false, reason: 'the caller hung up' };
      // The person called is still on the line with the agent, who tells them and goes on.
      return { ok: false, reason: `REFER refused, and calling ${to}: ${why}`, resumed: true };
    }
    const target = placed.dialog;
    if (dialog.ended) {
      await this.bye(target);
      return { ok: false, reason: 'the caller hung up' };
    }
    dialog.rtp.bridge(target.rtp);
    return new Promise<TransferResult>((resolve) => {
      dialog.onEnd = (remote) => {
        target.onEnd = undefined;
        void this.bye(target);
        resolve({ ok: true, endedBy: remote ? 'USER' : 'ASSISTANT' });
      };
      target.onEnd = () => {
        dialog.onEnd = undefined;
        void this.bye(dialog);
        resolve({ ok: true, endedBy: 'ASSISTANT' });
      };
    });
  }

  /** Blind transfer (RFC 3515): the far end calls `to`; we leave once it accepted. */
  private async refer(dialog: Dialog, to: string): Promise<TransferResult> {
    const domain = dialog.domain;
    const response = await this.sendInDialog(dialog, 'REFER', {
      headers: new Map([
        ['refer-to', [`<sip:${to}@${domain}>`]],
        ['referred-by', [`<sip:openline@${this.o.endpoint.hostPort(dialog.transport)}>`]],
      ]),
      timeoutMs: REFER_TIMEOUT_MS,
    });
    if (!response || response.status >= 300)
      return {
        ok: false,
        reason: response ? `the far end refused the transfer (SIP ${response.status})` : 'no answer to the transfer',
      };
    await this.bye(dialog);
    return { ok: true };
  }

  /**
   * A request inside the dialog (ACK, BYE, REFER, and the session refreshes UPDATE and
   * re-INVITE): to the far end's Contact, through its Record-Route, on the dialog's connection
   * while it is open (TCP, TLS). Resolves with the final response (ACK has none).
   */
  private async sendInDialog(
    dialog: Signalling,
    method: 'ACK' | 'BYE' | 'REFER' | 'UPDATE' | 'INVITE' | 'PRACK',
    options: { seq?: number; headers?: Headers; body?: string; timeoutMs?: number } = {},
  ): Promise<SipResponse | undefined> {
    const seq = options.seq ?? ++dialog.localSeq;
    // Loose routing: the first Route (else the Contact) says where the request goes next.
    const next = parseUri(uriOf(dialog.routes[0]) ?? dialog.remoteTarget);
    const named = next?.params.transport?.toLowerCase();
    const transport: Transport = named && TRANSPORTS.has(named) ? (named as Transport) : dialog.transport;
    const fallback = parseUri(`sip:${dialog.domain}`);
    const target: Target = {
      host: next?.host ?? fallback?.host ?? dialog.domain,
      port: next?.port ?? (next ? defaultPort(transport) : (fallback?.port ?? defaultPort(transport))),
      transport,
      ...(transport === dialog.transport && dialog.connection !== undefined && { connection: dialog.connection }),
    };
    const headers: Headers = new Map([
      ['via', [this.o.endpoint.via(transport, newBranch())]],
      ['max-forwards', ['70']],
      ['from', [dialog.local]],
      ['to', [dialog.remote]],
      ['call-id', [dialog.callId]],
      ['cseq', [`${seq} ${method}`]],
      ['contact', [this.o.endpoint.contact(transport)]],
      ['user-agent', [USER_AGENT]],
    ]);
    if (dialog.routes.length > 0) headers.set('route', dialog.routes);
    for (const [name, values] of options.headers ?? []) headers.set(name, values);
    const body = options.body ?? '';
    if (body) headers.set('content-type', ['application/sdp']);
    const message: SipRequest = { kind: 'request', method, uri: dialog.remoteTarget, headers, body };
    if (method === 'ACK') {
      this.o.endpoint.send(message, target);
      return undefined;
    }
    const response = await this.o.endpoint.request(message, target, undefined, options.timeoutMs).response;
    // A trunk that challenges requests in the dialog too: asked once more, with our credentials,
    // as a new request (a new CSeq and branch; RFC 3261 section 22.2).
    const challenged = response.status === 401 || response.status === 407;
    const credentials =
      typeof dialog.credentials === 'function'
        ? challenged
          ? await dialog.credentials().catch(() => undefined)
          : undefined
        : dialog.credentials;
    const authorization = answerChallenge(response, credentials, { method, uri: dialog.remoteTarget });
    if (!authorization) return response;
    headers.set('cseq', [`${++dialog.localSeq} ${method}`]);
    headers.set('via', [this.o.endpoint.via(transport, newBranch())]);
    headers.set(authorization.name, [authorization.value]);
    return this.o.endpoint.request(message, target, undefined, options.timeoutMs).response;
  }

  private async onRequest(
    request: SipRequest,
    from: Target,
    respond: Responder,
    transaction: ServerTransaction,
  ): Promise<void> {
    const callId = header(request, 'call-id') ?? '';
    const known = this.dialogs.get(callId);
    const toTag = param(header(request, 'to'), 'tag');
    // A request of a dialog: its Call-ID, our tag (To) and the far end's (From) name it (RFC 3261 section 12.2.2).
    const dialog =
      known && toTag === known.localTag && (param(header(request, 'from'), 'tag') ?? '') === known.remoteTag
        ? known
        : undefined;
    if (request.method === 'ACK') {
      if (dialog?.awaitingAnswer) this.answerInAck(dialog, request);
      return;
    }
    // Extensions the request requires and Openline does not have (100rel, ...): 420 (RFC 3261 section 8.2.2.3).
    const unsupported = optionTags(request.headers, 'require').filter((name) => !SUPPORTED.has(name.toLowerCase()));
    if (unsupported.length > 0)
      return respond(420, 'Bad Extension', { headers: new Map([['unsupported', [unsupported.join(', ')]]]) });
    if (toTag !== undefined) {
      // A request for a dialog that is over (a refresh crossing our BYE) or never was: never a new call.
      if (!dialog) return respond(481, 'Call/Transaction Does Not Exist');
      const seq = cseqOf(request)?.seq ?? 0;
      if (dialog.remoteSeq !== undefined && seq < dialog.remoteSeq) return respond(500, 'Server Internal Error');
      dialog.remoteSeq = seq;
    } else if (known && request.method === 'INVITE') {
      // A second INVITE of a call we have, not in its dialog: the same request come another way (section 8.2.2.2).
      return respond(482, 'Loop Detected');
    }
    // Before the answer, an offer of the caller's is still unanswered: a re-INVITE, or an UPDATE with
    // a new offer, waits (RFC 3261 section 14.2, RFC 3311 section 5.2).
    const offer = request.method === 'INVITE' || (request.method === 'UPDATE' && request.body !== '');
    if (dialog?.early && offer)
      return respond(500, 'Server Internal Error', { headers: new Map([['retry-after', ['1']]]) });
    // One that crosses our own re-INVITE (glare): 491, the far end tries again after a random wait
    // (RFC 3261 section 14.2, RFC 3311 section 5.2).
    if (dialog?.offering && offer) return respond(491, 'Request Pending');
    switch (request.method) {
      case 'OPTIONS':
        return respond(200, 'OK', {
          headers: new Map([
            ['allow', [ALLOW]],
            ['accept', ['application/sdp']],
            ['supported', [SUPPORTED_HEADER]],
          ]),
        });
      case 'BYE':
        if (!dialog) return respond(481, 'Call/Transaction Does Not Exist');
        respond(200, 'OK');
        // The caller leaves before the answer: the INVITE gets 487 (RFC 3261 section 15.1.2).
        if (dialog.early) return dialog.early.end(487, 'Request Terminated');
        this.ended(dialog, true);
        this.release(dialog);
        dialog.rtp.stop('remote');
        return;
      case 'INFO': {
        if (!dialog) return respond(481, 'Call/Transaction Does Not Exist');
        const key = infoKey(header(request, 'content-type') ?? '', request.body);
        if (key) dialog.rtp.dtmf(key);
        return respond(200, 'OK');
      }
      case 'NOTIFY':
        return respond(dialog ? 200 : 481, dialog ? 'OK' : 'Call/Transaction Does Not Exist');
      case 'PRACK': {
        // RFC 3262 section 3: the PRACK of our reliable 180 (its RSeq, and the INVITE's CSeq) gets
        // 200 and lets the answer go; any other gets 481.
        const early = dialog?.early;
        const rack = /^\s*(\d{1,10})\s+(\d{1,10})\s+INVITE\s*$/i.exec(header(request, 'rack') ?? '');
        if (!early || !rack || Number(rack[1]) !== early.rseq || Number(rack[2]) !== early.inviteSeq)
          return respond(481, 'Call/Transaction Does Not Exist');
        respond(200, 'OK');
        return early.acknowledged();
      }
      case 'UPDATE': {
        // A session refresh (RFC 4028 with RFC 3311), with or without an offer; an offer is
        // answered in the 200 as a re-INVITE's is, one we cannot take gets 488.
        if (!dialog) return respond(481, 'Call/Transaction Does Not Exist');
        const timer = answerSessionTimer(request);
        if (timer.tooBrief) return respond(422, 'Session Interval Too Small', { headers: tooBriefHeaders() });
        const media = request.body ? this.mediaOf(request.body) : undefined;
        const keyed = media && dialog.sdes.answer(media);
        if ((request.body && !media) || keyed === 'refused') return respond(488, 'Not Acceptable Here');
        let body = '';
        if (media) {
          body = this.describe(dialog, media, keyed?.crypto);
          dialog.localSdp = body;
          connectMedia(dialog.rtp, media, { srtp: keyed?.keys });
        }
        retarget(dialog, request);
        respond(200, 'OK', {
          headers: new Map([['contact', [this.o.endpoint.contact(dialog.transport)]], ...timer.headers]),
          body,
        });
        return this.armSessionTimer(dialog, timer.value, false);
      }
      case 'INVITE':
        if (dialog) return this.reinvite(request, dialog, respond);
        return this.inviteIn(request, from, respond, transaction);
      default:
        return respond(405, 'Method Not Allowed', { headers: new Map([['allow', [ALLOW]]]) });
    }
  }

  /**
   * A re-INVITE (hold, a new media address, a session refresh): answered per RFC 3264, the media
   * following the new address and direction; one without SDP gets our offer, its answer comes in
   * the ACK; an offer we cannot take gets 488 and the session stays as it was.
   */
  private reinvite(request: SipRequest, dialog: Dialog, respond: Responder): void {
    const timer = answerSessionTimer(request);
    if (timer.tooBrief) return respond(422, 'Session Interval Too Small', { headers: tooBriefHeaders() });
    const media = request.body ? this.mediaOf(request.body) : undefined;
    const keyed = media && dialog.sdes.answer(media);
    // An offer we cannot take, or one in the clear on an SRTP call: 488, and the session stays as it was.
    if ((request.body && !media) || keyed === 'refused') return respond(488, 'Not Acceptable Here');
    const body = this.describe(dialog, media, keyed?.crypto);
    dialog.localSdp = body;
    dialog.awaitingAnswer = !media;
    retarget(dialog, request);
    if (media) connectMedia(dialog.rtp, media, { srtp: keyed?.keys });
    respond(200, 'OK', {
      headers: new Map([['contact', [this.o.endpoint.contact(dialog.transport)]], ...timer.headers]),
      body,
    });
    this.armSessionTimer(dialog, timer.value, false);
  }

  /**
   * Our SDP for a 2xx: the answer to `media` (with our a=crypto line `crypto` when SRTP), else an
   * offer; the same as the dialog's last when nothing changed, else a new version of the session
   * (RFC 3264 section 8).
   */
  private describe(dialog: Dialog, media: RemoteMedia | undefined, crypto: Sdes | undefined): string {
    const origin = dialog.origin;
    const local = { address: this.o.endpoint.address, port: dialog.rtp.port, ...origin };
    const build = () => (media ? answer(local, media, crypto) : offer(local, dialog.sdes.offer()));
    const same = build();
    if (same === dialog.localSdp) return same;
    local.version = ++origin.version;
    return build();
  }

  /** The ACK of a 2xx that carried our offer: its SDP is the answer; none we can use ends the call (BYE). */
  private answerInAck(dialog: Dialog, ack: SipRequest): void {
    dialog.awaitingAnswer = false;
    const media = ack.body ? this.mediaOf(ack.body) : undefined;
    if (!media) return this.lost(dialog, 'SIP: the ACK carried no answer we can use: hanging up');
    if (!this.answeredBy(dialog, media)) this.lost(dialog, `SIP: ${SRTP_REFUSED}: hanging up`);
  }

  /** The far end's answer to an offer of ours in a dialog: connected, unless its SRTP does not fit (false). */
  private answeredBy(dialog: Dialog, media: RemoteMedia): boolean {
    const keyed = dialog.sdes.answered(media);
    if (keyed === 'refused') return false;
    connectMedia(dialog.rtp, media, { srtp: keyed.keys });
    return true;
  }

  /**
   * RFC 3262 as the answerer: 180 Ringing sent reliably (Require: 100rel, an RSeq) in the call's
   * early dialog, again at T1, 2 T1, 4 T1, ... over UDP until its PRACK. Resolves when the PRACK
   * came, or with the INVITE's final response when the caller left (CANCEL: the endpoint already
   * answered 487; BYE in the early dialog: 487) or no PRACK came within 64 T1 (500, section 3).
   */
  private ringReliably(
    dialog: Dialog,
    inviteSeq: number,
    respond: Responder,
    transaction: ServerTransaction,
    headers: [string, string[]][],
  ): Promise<'acknowledged' | { status: number; reason: string }> {
    const endpoint = this.o.endpoint;
    const rseq = randomInt(1, 2 ** 31);
    const ringing = new Map([...headers, ['require', ['100rel']], ['rseq', [String(rseq)]]]);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (outcome: 'acknowledged' | { status: number; reason: string }) => {
        clearTimeout(timer);
        dialog.early = undefined;
        transaction.onCancelled = undefined;
        resolve(outcome);
      };
      dialog.early = {
        rseq,
        inviteSeq,
        acknowledged: () => done('acknowledged'),
        end: (status, reason) => done({ status, reason }),
      };
      transaction.onCancelled = () => done({ status: 487, reason: 'Request Terminated' });
      respond(180, 'Ringing', { headers: ringing });
      // Over TCP and TLS the transport delivers it: nothing is resent, the wait is as long.
      const resend = dialog.transport === 'udp';
      let interval = resend ? endpoint.t1 : endpoint.transactionTimeoutMs;
      let waited = 0;
      const tick = () => {
        waited += interval;
        if (waited >= endpoint.transactionTimeoutMs) return done({ status: 500, reason: 'Server Internal Error' });
        respond(180, 'Ringing', { headers: ringing });
        interval = Math.min(interval * 2, endpoint.transactionTimeoutMs - waited);
        timer = setTimeout(tick, interval);
      };
      timer = setTimeout(tick, interval);
    });
  }

  /** A call in: to one of the account's numbers, with audio we speak. */
  private async inviteIn(
    request: SipRequest,
    from: Target,
    respond: Responder,
    transaction: ServerTransaction,
  ): Promise<void> {
    respond(100, 'Trying');
    const inbound = this.o.inbound;
    // The number called: the request URI's user, else To's (a call to our registered Contact).
    const to = [userOf(request.uri), userOf(uriOf(header(request, 'to')))]
      .map((user) => (user ? sipNumber(user) : undefined))
      .find((n) => n?.ok);
    const trusted = !this.o.allowed || this.o.allowed(from.host);
    // Which numbers exist is nobody's business outside the allow-list: 403 before 404.
    if (!trusted && (!inbound || !to?.ok)) return respond(403, 'Forbidden');
    if (!inbound) return respond(503, 'Service Unavailable');
    if (!to?.ok) return respond(404, 'Not Found');
    const fromUser = userOf(uriOf(header(request, 'from'))) ?? '';
    // No SDP (a delayed offer): our offer goes in the 200, the answer comes in the ACK.
    const media = request.body ? this.mediaOf(request.body) : undefined;
    if (request.body && !media) return respond(488, 'Not Acceptable Here');
    // SRTP when the offer has a key we can use (RTP/SAVP, or best-effort RTP/AVP), else plain RTP.
    const sdes = new SdesSession();
    const keyed = media ? sdes.answer(media) : undefined;
    if (keyed === 'refused') return respond(488, 'Not Acceptable Here');
    const timer = answerSessionTimer(request);
    if (timer.tooBrief) return respond(422, 'Session Interval Too Small', { headers: tooBriefHeaders() });
    const caller = sipNumber(fromUser);
    // CANCEL (the endpoint answered it, and the INVITE with 487) before the call exists: none is made.
    if (transaction.cancelled) return;
    const accepted = await inbound.accept(
      to.e164,
      caller.ok ? caller.e164 : fromUser,
      header(request, 'call-id') ?? '',
      { address: from.host, trusted },
    );
    if ('status' in accepted) return respond(accepted.status, accepted.reason);
    if (transaction.cancelled) return inbound.cancelled(accepted.callId);
    const rtp = await this.openRtp();
    if (transaction.cancelled) {
      rtp.close();
      return inbound.cancelled(accepted.callId);
    }
    const localTag = newTag();
    const toHeader = `${header(request, 'to')};tag=${localTag}`;
    const transport = from.transport ?? 'udp';
    const origin = { sessionId: randomInt(1, 2 ** 31), version: 1 };
    const local = { address: this.o.endpoint.address, port: rtp.port, ...origin };
    const sdp = media ? answer(local, media, keyed?.crypto) : offer(local);
    const dialog = new Dialog(
      header(request, 'call-id') ?? '',
      localTag,
      param(header(request, 'from'), 'tag') ?? '',
      toHeader,
      header(request, 'from') ?? '',
      uriOf(header(request, 'contact')) ?? `sip:${fromUser}@${hostPort(from.host, from.port)}`,
      [...(request.headers.get('record-route') ?? [])],
      rtp,
      parseUri(request.uri)?.host ?? hostPort(from.host, from.port),
      transport,
      from.connection,
      sdp,
      origin,
      sdes,
      accepted.credentials,
    );
    dialog.remoteAllowsUpdate = allowsUpdate(request.headers);
    dialog.remoteSeq = cseqOf(request)?.seq;
    dialog.awaitingAnswer = !media;
    this.dialogs.set(dialog.callId, dialog);
    this.o.endpoint.keep(dialog.connection, true);
    // The headers of the responses that set up the dialog (the 180 and the 200).
    const dialogHeaders: [string, string[]][] = [
      ['to', [toHeader]],
      ['contact', [this.o.endpoint.contact(transport)]],
      ['allow', [ALLOW]],
      ['supported', [SUPPORTED_HEADER]],
      ['user-agent', [USER_AGENT]],
      ...(request.headers.get('record-route')
        ? [['record-route', request.headers.get('record-route')!] as [string, string[]]]
        : []),
    ];
    // A caller that requires 100rel hears a reliable 180 first; one that sent no offer does not,
    // since a reliable 180 would have to carry ours (RFC 3262 section 5): it gets the 200 at once.
    if (media && optionTags(request.headers, 'require').some((tag) => tag.toLowerCase() === '100rel')) {
      const rung = await this.ringReliably(dialog, cseqOf(request)?.seq ?? 0, respond, transaction, dialogHeaders);
      if (rung !== 'acknowledged') {
        this.release(dialog);
        rtp.close();
        respond(rung.status, rung.reason);
        return inbound.cancelled(accepted.callId);
      }
    }
    if (media) connectMedia(rtp, media, { srtp: keyed?.keys });
    this.watchMedia(dialog);
    const leg = this.leg(dialog, accepted.request, accepted.callId);
    respond(200, 'OK', { headers: new Map([...dialogHeaders, ...timer.headers]), body: sdp });
    this.armSessionTimer(dialog, timer.value, false);
    inbound.answer(accepted.callId, leg);
  }
}

/**
 * Sends to and takes from the media an SDP describes; nothing is sent while the far end holds the
 * call, and the RTP timeout waits while it holds or sends nothing (a=sendonly, recvonly, inactive):
 * a holder may send music or nothing at all (RFC 3264 section 8.4).
 */
function connectMedia(
  rtp: RtpSession,
  media: RemoteMedia,
  options: { early?: boolean; srtp?: SrtpKeys | undefined } = {},
): void {
  rtp.connect({ address: media.address, port: media.port }, media.codec, {
    ...options,
    send: receives(media.direction),
    expectMedia: media.direction === 'sendrecv',
  });
}

/** Why a call ends whose far end answered without the SRTP key it needed (or with one never offered). */
const SRTP_REFUSED = 'the answer did not take our SRTP offer (no a=crypto key of its own for one of ours)';

/**
 * The RSeq of a reliable provisional response (RFC 3262: `Require: 100rel` and an RSeq from 1 to
 * 2**31 - 1), else undefined.
 */
function reliableRSeq(response: SipResponse): number | undefined {
  if (response.status <= 100 || response.status >= 200) return undefined;
  const required = (response.headers.get('require') ?? []).join(',');
  if (!/(^|[\s,])100rel([\s,]|$)/i.test(required)) return undefined;
  const rseq = Number(header(response, 'rseq'));
  return Number.isInteger(rseq) && rseq >= 1 && rseq < 2 ** 31 ? rseq : undefined;
}

/** The option tags of a Require or Supported header, as written. */
function optionTags(headers: Headers, name: 'require' | 'supported'): string[] {
  return (headers.get(name) ?? [])
    .flatMap((value) => value.split(','))
    .map((tag) => tag.trim())
    .filter(Boolean);
}

/**
 * The key of a SIP INFO: application/dtmf-relay (`Signal=5`), or application/dtmf (the key
 * alone); the key as itself (`*`, `#`, `A`) or as its RFC 4733 event code (`Signal=11` is #, as
 * some gateways write it, and as Asterisk and FreeSWITCH read it). Anything else (16, a flash): none.
 */
function infoKey(contentType: string, body: string): string | undefined {
  const bare = /^\s*application\/dtmf\s*(;|$)/i.test(contentType);
  const value = (bare ? /^\s*(\S+)\s*$/ : /signal\s*=\s*([^\s;]+)/i).exec(body)?.[1];
  if (value === undefined) return undefined;
  if (/^\d{1,2}$/.test(value)) return DTMF_EVENTS[Number(value)];
  return /^[*#A-D]$/i.test(value) ? value.toUpperCase() : undefined;
}

/**
 * A target refresh (RFC 3261 section 12.2, RFC 3311): a re-INVITE or UPDATE taken, or the 2xx to
 * one of ours, moves the dialog's remote target to its Contact, when it has one.
 */
function retarget(dialog: Dialog, message: SipRequest | SipResponse): void {
  const contact = uriOf(header(message, 'contact'));
  if (contact && /^sips?:/i.test(contact)) dialog.remoteTarget = contact;
}

/** Whether an Allow header lists UPDATE. */
function allowsUpdate(headers: Headers): boolean {
  return /(^|[\s,])UPDATE([\s,]|$)/i.test((headers.get('allow') ?? []).join(','));
}
