import { parse, write, type SessionDescription } from 'sdp-transform';
import { OFFERED_DTMF_PAYLOAD_TYPE, type RtpCodec } from './rtp.js';

/**
 * SDP offer/answer (RFC 3264) for one audio stream: G.711 (PCMU preferred, PCMA) and RFC 4733
 * telephone-events, 20 ms packets. An answer has the offer's m= lines in their order, the ones
 * we do not take (video, a second audio) rejected with port 0, and the direction that mirrors
 * the offer's (hold).
 */

const STATIC: Record<number, RtpCodec['name']> = { 0: 'PCMU', 8: 'PCMA' };

export type Direction = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';

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
  options: { direction?: Direction; remote?: RemoteMedia } = {},
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
  const audio: SessionDescription['media'][number] = {
    type: 'audio',
    port: local.port,
    protocol: 'RTP/AVP',
    payloads: [...codecs.map((c) => c.payload), ...(dtmf === undefined ? [] : [dtmf])].join(' '),
    rtp: dtmf === undefined ? rtp : [...rtp, { payload: dtmf, codec: 'telephone-event', rate: 8000 }],
    fmtp: dtmf === undefined ? [] : [{ payload: dtmf, config: '0-16' }],
    ptime: 20,
    direction: options.direction ?? 'sendrecv',
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

/** Our offer: PCMU, PCMA and telephone-event. */
export function offer(local: LocalSession): string {
  return description(
    local,
    [
      { payload: 0, codec: 'PCMU' },
      { payload: 8, codec: 'PCMA' },
    ],
    OFFERED_DTMF_PAYLOAD_TYPE,
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
  // Plain RTP only: an answer must keep the offer's protocol, and SRTP (RTP/SAVP) is not ours.
  const audioIndex = media.findIndex(
    (m) => m.type === 'audio' && m.port > 0 && String(m.protocol).toUpperCase() === 'RTP/AVP',
  );
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
  };
}

/**
 * Our answer to the far end's offer: the codec chosen from its list, its telephone-event type,
 * the direction that mirrors its own, its other m= lines rejected (port 0).
 */
export function answer(local: LocalSession, remote: RemoteMedia): string {
  return description(
    local,
    [{ payload: remote.codec.payloadType, codec: remote.codec.name }],
    remote.codec.dtmfPayloadType,
    { direction: mirrored[remote.direction], remote },
  );
}
