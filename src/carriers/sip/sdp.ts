import { parse, write, type SessionDescription } from 'sdp-transform';
import type { RtpCodec } from './rtp.js';

/**
 * SDP offer/answer (RFC 3264) for one audio stream: G.711 (PCMU preferred, PCMA) and RFC 4733
 * telephone-events, 20 ms packets.
 */

const DTMF_PAYLOAD_TYPE = 101;
const STATIC: Record<number, RtpCodec['name']> = { 0: 'PCMU', 8: 'PCMA' };

export interface RemoteMedia {
  address: string;
  port: number;
  codec: RtpCodec;
  /** a=sendonly / inactive from the far end (hold). */
  direction: 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
}

function description(
  local: { address: string; port: number; sessionId: number },
  codecs: { payload: number; codec: string }[],
  dtmf: number | undefined,
): string {
  const ipVersion = local.address.includes(':') ? 6 : 4;
  const rtp = codecs.map((c) => ({ payload: c.payload, codec: c.codec, rate: 8000 }));
  const sdp: SessionDescription = {
    version: 0,
    origin: {
      username: 'openline',
      sessionId: local.sessionId,
      sessionVersion: 1,
      netType: 'IN',
      ipVer: ipVersion,
      address: local.address,
    },
    name: 'Openline',
    connection: { version: ipVersion, ip: local.address },
    timing: { start: 0, stop: 0 },
    media: [
      {
        type: 'audio',
        port: local.port,
        protocol: 'RTP/AVP',
        payloads: [...codecs.map((c) => c.payload), ...(dtmf === undefined ? [] : [dtmf])].join(' '),
        rtp: dtmf === undefined ? rtp : [...rtp, { payload: dtmf, codec: 'telephone-event', rate: 8000 }],
        fmtp: dtmf === undefined ? [] : [{ payload: dtmf, config: '0-16' }],
        ptime: 20,
        direction: 'sendrecv',
      },
    ],
  };
  return write(sdp);
}

/** Our offer: PCMU, PCMA and telephone-event. */
export function offer(local: { address: string; port: number; sessionId: number }): string {
  return description(
    local,
    [
      { payload: 0, codec: 'PCMU' },
      { payload: 8, codec: 'PCMA' },
    ],
    DTMF_PAYLOAD_TYPE,
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
  const audio = sdp.media?.find((m) => m.type === 'audio' && m.port > 0);
  if (!audio) return undefined;
  const address = audio.connection?.ip ?? sdp.connection?.ip;
  if (!address) return undefined;
  const names = new Map<number, string>();
  for (const r of audio.rtp ?? []) names.set(r.payload, r.codec.toUpperCase());
  const payloads = String(audio.payloads ?? '')
    .split(/\s+/)
    .map(Number)
    .filter(Number.isInteger);
  const chosen = payloads.find((p) => STATIC[p] !== undefined || names.get(p) === 'PCMU' || names.get(p) === 'PCMA');
  if (chosen === undefined) return undefined;
  const name = (STATIC[chosen] ?? names.get(chosen)) as RtpCodec['name'];
  const dtmf = payloads.find((p) => names.get(p) === 'TELEPHONE-EVENT');
  const direction = audio.direction ?? sdp.direction ?? 'sendrecv';
  return {
    address,
    port: audio.port,
    codec: { name, payloadType: chosen, ...(dtmf !== undefined && { dtmfPayloadType: dtmf }) },
    direction,
  };
}

/** Our answer to the far end's offer: the codec chosen from its list, its telephone-event type. */
export function answer(local: { address: string; port: number; sessionId: number }, remote: RemoteMedia): string {
  return description(
    local,
    [{ payload: remote.codec.payloadType, codec: remote.codec.name }],
    remote.codec.dtmfPayloadType,
  );
}
