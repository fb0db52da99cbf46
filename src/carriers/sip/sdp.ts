import { parse, write, type SessionDescription } from 'sdp-transform';
import type { SrtpMode } from '../../domain/sip-trunk.js';
import { OFFERED_DTMF_PAYLOAD_TYPE, type RtpCodec } from './rtp.js';
import { SRTP_SUITES, SrtpKey, isSrtpSuite, type SrtpKeys, type SrtpSuite } from './srtp.js';

/**
 * SDP offer/answer (RFC 3264) for one audio stream: G.711 (PCMU preferred, PCMA) and RFC 4733
 * telephone-events, 20 ms packets. An answer has the offer's m= lines in their order, the ones
 * we do not take (video, a second audio) rejected with port 0, and the direction that mirrors
 * the offer's (hold). SRTP keys travel as RFC 4568 a=crypto lines (SDES): in RTP/SAVP, or in
 * RTP/AVP as best-effort SRTP (the far end encrypts if it can).
 */

const STATIC: Record<number, RtpCodec['name']> = { 0: 'PCMU', 8: 'PCMA' };

export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';

/** One a=crypto line: its tag, and the key (with its suite) of whoever sends under it. */
export interface Sdes {
  tag: number;
  key: SrtpKey;
}

/** The m= line's protocol and a=crypto lines of an SRTP offer or answer. */
export interface MediaCrypto {
  protocol: 'RTP/SAVP' | 'RTP/AVP';
  crypto: Sdes[];
}

export interface RemoteMedia {
  address: string;
  port: number;
  codec: RtpCodec;
  /**
   * The far end's direction (a=sendonly or inactive: hold); `c=0.0.0.0`, the old way of holding
   * (RFC 3264 section 8.4), counts as not receiving.
   */
  direction: Direction;
  /** The m= lines of its SDP, in order, and which one is the audio we take: an answer mirrors them. */
  streams: { type: string; port: number; protocol: string; payloads: string }[];
  audioIndex: number;
  /** The first a=crypto line of the audio that Openline can use: the far end's SRTP key. */
  crypto?: Sdes;
}

/** Our side of a session: where our RTP listens, and the o= line's session id and version (RFC 3264 section 8). */
export interface LocalSession {
  address: string;
  port: number;
  sessionId: number;
  /** Default 1; one more on each new description of the session. */
  version?: number;
}

/** Whether the far end of `direction` sends us media, and whether it takes ours. */
export const sends = (direction: Direction): boolean => direction === 'sendrecv' || direction === 'sendonly';
export const receives = (direction: Direction): boolean => direction === 'sendrecv' || direction === 'recvonly';

/** The direction of an answer to an offer of `direction`. */
const mirrored: Record<Direction, Direction> = {
  sendrecv: 'sendrecv',
  sendonly: 'recvonly',
  recvonly: 'sendonly',
  inactive: 'inactive',
};

function description(
  local: LocalSession,
  codecs: { payload: number; codec: string }[],
  dtmf: number | undefined,
  options: { direction?: Direction; remote?: RemoteMedia; security?: MediaCrypto } = {},
): string {
  const ipVersion = local.address.includes(':') ? 6 : 4;
  const rtp = codecs.map((c) => ({ payload: c.payload, codec: c.codec, rate: 8000 }));
  const sdp: SessionDescription = {
    version: 0,
    origin: {
      username: 'openline',
      sessionId: local.sessionId,
      sessionVersion: local.version ?? 1,
      netType: 'IN',
      ipVer: ipVersion,
      address: local.address,
    },
    name: 'Openline',
    connection: { version: ipVersion, ip: local.address },
    timing: { start: 0, stop: 0 },
    media: [],
  };
  const security = options.security;
  const audio: SessionDescription['media'][number] = {
    type: 'audio',
    port: local.port,
    protocol: security?.protocol ?? 'RTP/AVP',
    payloads: [...codecs.map((c) => c.payload), ...(dtmf === undefined ? [] : [dtmf])].join(' '),
    rtp: dtmf === undefined ? rtp : [...rtp, { payload: dtmf, codec: 'telephone-event', rate: 8000 }],
    fmtp: dtmf === undefined ? [] : [{ payload: dtmf, config: '0-16' }],
    ptime: 20,
    direction: options.direction ?? 'sendrecv',
    ...(security && {
      crypto: security.crypto.map((c) => ({ id: c.tag, suite: c.key.suite, config: `inline:${c.key.inline}` })),
    }),
  };
  const remote = options.remote;
  sdp.media = remote
    ? remote.streams.map((stream, i) =>
        i === remote.audioIndex
          ? audio
          : { type: stream.type, port: 0, protocol: stream.protocol, payloads: stream.payloads, rtp: [], fmtp: [] },
      )
    : [audio];
  return write(sdp);
}

/** Our offer: PCMU, PCMA and telephone-event, and the keys of `security` when it asks for SRTP. */
export function offer(local: LocalSession, security?: MediaCrypto): string {
  return description(
    local,
    [
      { payload: 0, codec: 'PCMU' },
      { payload: 8, codec: 'PCMA' },
    ],
    OFFERED_DTMF_PAYLOAD_TYPE,
    { ...(security && { security }) },
  );
}

/** What the far end's SDP says: where to send, which codec (the first of its list we speak). */
export function remoteMedia(text: string): RemoteMedia | undefined {
  let sdp: SessionDescription;
  try {
    sdp = parse(text);
  } catch {
    return undefined;
  }
  const media = sdp.media ?? [];
  // RTP, or SRTP keyed in the SDP (RTP/SAVP with an a=crypto line we can use); an answer keeps
  // the offer's protocol. The first such audio stream is the one taken.
  let crypto: Sdes | undefined;
  const audioIndex = media.findIndex((m) => {
    if (m.type !== 'audio' || !(m.port > 0)) return false;
    crypto = (m.crypto ?? []).map(parseCrypto).find((c) => c !== undefined);
    const protocol = String(m.protocol).toUpperCase();
    return protocol === 'RTP/AVP' || (protocol === 'RTP/SAVP' && crypto !== undefined);
  });
  const audio = media[audioIndex];
  // A port RTP cannot have (m=audio 70000) is no offer we can take.
  if (!audio || !Number.isInteger(audio.port) || audio.port > 65535) return undefined;
  const address = audio.connection?.ip ?? sdp.connection?.ip;
  if (!address) return undefined;
  const names = new Map<number, string>();
  // Telephone-events at another clock than G.711's 8000 Hz (telephone-event/48000, offered beside Opus) are not ours.
  for (const r of audio.rtp ?? [])
    names.set(r.payload, r.codec.toUpperCase() === 'TELEPHONE-EVENT' && r.rate !== 8000 ? '' : r.codec.toUpperCase());
  const payloads = String(audio.payloads ?? '')
    .split(/\s+/)
    .map(Number)
    .filter(Number.isInteger);
  const chosen = payloads.find((p) => STATIC[p] !== undefined || names.get(p) === 'PCMU' || names.get(p) === 'PCMA');
  if (chosen === undefined) return undefined;
  const name = (STATIC[chosen] ?? names.get(chosen)) as RtpCodec['name'];
  const dtmf = payloads.find((p) => names.get(p) === 'TELEPHONE-EVENT');
  let direction: Direction = audio.direction ?? sdp.direction ?? 'sendrecv';
  if (address === '0.0.0.0' || address === '::') direction = sends(direction) ? 'sendonly' : 'inactive';
  return {
    address,
    port: audio.port,
    codec: { name, payloadType: chosen, ...(dtmf !== undefined && { dtmfPayloadType: dtmf }) },
    direction,
    streams: media.map((m) => ({
      type: m.type,
      port: m.port,
      protocol: m.protocol,
      payloads: String(m.payloads ?? ''),
    })),
    audioIndex,
    ...(crypto && { crypto }),
  };
}

/** Session parameters of a=crypto that change nothing for us (RFC 4568 section 6.3): others make a line unusable. */
const HARMLESS_SESSION_PARAMS = /^(WSH=\d+|UNENCRYPTED_SRTCP)$/i;

/**
 * An a=crypto line Openline can use: a suite of ours, one inline key of 30 bytes, any lifetime,
 * an MKI of 1 to 128 bytes; undefined otherwise (RFC 4568: a line with a parameter we do not
 * know is not usable).
 */
function parseCrypto(line: { id: number; suite: string; config: string; sessionConfig?: string }): Sdes | undefined {
  if (!isSrtpSuite(line.suite)) return undefined;
  if (line.sessionConfig !== undefined && !HARMLESS_SESSION_PARAMS.test(line.sessionConfig)) return undefined;
  const match = /^inline:([A-Za-z0-9+/]{40})(?:\|((?:2\^)?\d+))?(?:\|(\d+):(\d+))?$/.exec(line.config);
  if (!match) return undefined;
  let mki: Buffer | undefined;
  if (match[3] !== undefined) {
    const length = Number(match[4]);
    if (length < 1 || length > 128) return undefined;
    mki = Buffer.alloc(length);
    // The MKI's value, big-endian in its length (RFC 4568 section 6.1); values past 2^48 are not seen.
    let value = Number(match[3]);
    for (let i = length - 1; i >= 0 && value > 0; i--, value = Math.floor(value / 256)) mki[i] = value % 256;
  }
  return { tag: line.id, key: new SrtpKey(line.suite, Buffer.from(match[1]!, 'base64'), mki) };
}

/**
 * Our answer to the far end's offer: the codec chosen from its list, its telephone-event type,
 * the direction that mirrors its own, its other m= lines rejected (port 0).
 */
export function answer(local: LocalSession, remote: RemoteMedia, crypto?: Sdes): string {
  const protocol = protocolOf(remote);
  return description(
    local,
    [{ payload: remote.codec.payloadType, codec: remote.codec.name }],
    remote.codec.dtmfPayloadType,
    { direction: mirrored[remote.direction], remote, ...(crypto && { security: { protocol, crypto: [crypto] } }) },
  );
}

/** The protocol of the audio stream taken: an answer says the same. */
const protocolOf = (remote: RemoteMedia): MediaCrypto['protocol'] =>
  remote.streams[remote.audioIndex]!.protocol.toUpperCase() === 'RTP/SAVP' ? 'RTP/SAVP' : 'RTP/AVP';

/**
 * A call's SDES keying (RFC 4568): our keys, one per suite, made for the call and kept through
 * every offer and answer; and what offer and answer settled: SRTP under one a=crypto line, or plain
 * RTP. Once SRTP, an offer or answer without a key is refused rather than heard in the clear.
 */
export class SdesSession {
  private readonly own = new Map<SrtpSuite, SrtpKey>();
  /** The a=crypto tags of our offers so far, and their suites: an answer names one of them. */
  private readonly offered = new Map<number, SrtpSuite>();
  /** The line and protocol SRTP runs under; null: plain RTP; undefined: nothing settled yet. */
  private settled: { tag: number; suite: SrtpSuite; protocol: MediaCrypto['protocol'] } | null | undefined;

  constructor(private readonly mode?: SrtpMode) {}

  /** Whether the call's media is SRTP. */
  get secure(): boolean {
    return Boolean(this.settled);
  }

  /** What our offer carries: what was settled, else what the call's mode asks for; undefined: plain RTP. */
  offer(): MediaCrypto | undefined {
    const settled = this.settled;
    let security: MediaCrypto | undefined;
    if (settled)
      security = { protocol: settled.protocol, crypto: [{ tag: settled.tag, key: this.key(settled.suite) }] };
    else if (settled === undefined && this.mode)
      security = {
        protocol: this.mode === 'mandatory' ? 'RTP/SAVP' : 'RTP/AVP',
        crypto: SRTP_SUITES.map((suite, i) => ({ tag: i + 1, key: this.key(suite) })),
      };
    for (const line of security?.crypto ?? []) this.offered.set(line.tag, line.key.suite);
    return security;
  }

  /**
   * The far end's offer: our a=crypto line for the answer (its tag and suite, our key) and the
   * keys both ways; none for a plain offer; 'refused' for a plain offer once the call is SRTP.
   */
  answer(remote: RemoteMedia): { crypto?: Sdes; keys?: SrtpKeys } | 'refused' {
    if (!remote.crypto) {
      if (this.settled) return 'refused';
      this.settled = null;
      return {};
    }
    const { tag, key } = remote.crypto;
    this.settled = { tag, suite: key.suite, protocol: protocolOf(remote) };
    const ours = this.key(key.suite);
    return { crypto: { tag, key: ours }, keys: { send: ours, receive: key } };
  }

  /**
   * The far end's answer to an offer of ours: the keys both ways; none for plain RTP where our
   * offers allowed it; 'refused' for an answer without a key when the call must be SRTP
   * (`mandatory`, or SRTP already), or with a key on a line we never offered.
   */
  answered(remote: RemoteMedia): { keys?: SrtpKeys } | 'refused' {
    // Plain offers of ours: a key in the answer changes nothing (nobody would use ours).
    if (this.offered.size === 0) {
      this.settled = null;
      return {};
    }
    if (!remote.crypto) {
      if (this.mode === 'mandatory' || this.settled) return 'refused';
      this.settled = null;
      return {};
    }
    const { tag, key } = remote.crypto;
    if (this.offered.get(tag) !== key.suite) return 'refused';
    this.settled = { tag, suite: key.suite, protocol: protocolOf(remote) };
    const ours = this.key(key.suite);
    return { keys: { send: ours, receive: key } };
  }

  private key(suite: SrtpSuite): SrtpKey {
    let key = this.own.get(suite);
    if (!key) this.own.set(suite, (key = SrtpKey.random(suite)));
    return key;
  }
}
