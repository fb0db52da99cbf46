import dgram from 'node:dgram';
import { header, parseMessage, type SipMessage, type SipRequest } from '../../src/carriers/sip/message.js';
import { until } from './sipp-run.js';

/**
 * A SIP peer speaking raw SIP from a UDP socket on loopback, for what sipp cannot say (a CANCEL
 * left unanswered, a BYE with the wrong tags, a malformed request): what it received, as text and
 * parsed, and a writer.
 */
export interface UdpPeer {
  port: number;
  /** Every message received, in order (those that parse). */
  inbox: SipMessage[];
  /** Every datagram received, as text. */
  raw: string[];
  send(text: string, port: number): void;
  /** Waits for the first message `match` takes that `taken` did not take yet, and takes it. */
  next(what: string, match: (m: SipMessage) => boolean, ms?: number): Promise<SipMessage>;
  /** A response to `request`, with its Via, From, To (a tag added), Call-ID and CSeq. */
  respond(request: SipRequest, status: string, extra?: string[], body?: string): void;
  close(): void;
}

export async function udpPeer(port = 0): Promise<UdpPeer> {
  const socket = dgram.createSocket('udp4');
  const inbox: SipMessage[] = [];
  const raw: string[] = [];
  const sources = new Map<SipMessage, number>();
  const taken = new Set<SipMessage>();
  socket.on('message', (data, rinfo) => {
    raw.push(data.toString('utf8'));
    const message = parseMessage(data);
    if (!message) return;
    inbox.push(message);
    sources.set(message, rinfo.port);
  });
  await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve));
  const send = (text: string, to: number) => socket.send(Buffer.from(text), to, '127.0.0.1');
  return {
    port: socket.address().port,
    inbox,
    raw,
    send,
    async next(what, match, ms = 20_000) {
      const find = () => inbox.find((m) => !taken.has(m) && match(m));
      await until(what, () => find() !== undefined, ms);
      const found = find()!;
      taken.add(found);
      return found;
    },
    respond(request, status, extra = [], body = '') {
      const to = header(request, 'to') ?? '';
      const lines = [
        `SIP/2.0 ${status}`,
        ...(request.headers.get('via') ?? []).map((v) => `Via: ${v}`),
        `From: ${header(request, 'from')}`,
        `To: ${to.includes(';tag=') ? to : `${to};tag=peer1`}`,
        `Call-ID: ${header(request, 'call-id')}`,
        `CSeq: ${header(request, 'cseq')}`,
        ...extra,
        ...(body ? ['Content-Type: application/sdp'] : []),
        `Content-Length: ${Buffer.byteLength(body)}`,
      ];
      send(`${lines.join('\r\n')}\r\n\r\n${body}`, sources.get(request) ?? 0);
    },
    close: () => socket.close(),
  };
}

/** An SDP offer or answer for a G.711 audio stream on `port` of loopback. */
export const audioSdp = (port: number, extra: string[] = []): string =>
  [
    'v=0',
    'o=peer 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio ${port} RTP/AVP 0 101`,
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:101 telephone-event/8000',
    ...extra,
    '',
  ].join('\r\n');

export const isRequest =
  (method: string) =>
  (m: SipMessage): m is SipRequest =>
    m.kind === 'request' && m.method === method;
