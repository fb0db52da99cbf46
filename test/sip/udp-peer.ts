import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import type net from 'node:net';
import {
  header,
  parseMessage,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from '../../src/carriers/sip/message.js';
import type { TestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { SipStreamReader } from '../../src/carriers/sip/stream.js';
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

/** A SIP peer over a byte stream (the test's side of a TCP or TLS connection): what it read, and a writer. */
export function streamPeer(socket: net.Socket) {
  const reader = new SipStreamReader();
  const inbox: SipMessage[] = [];
  let raw = '';
  socket.on('data', (chunk: Buffer) => {
    raw += chunk.toString('latin1');
    const read = reader.push(chunk);
    if (read === 'malformed') return;
    for (const bytes of read.messages) {
      const message = parseMessage(bytes);
      if (message) inbox.push(message);
    }
  });
  return {
    inbox,
    raw: () => raw,
    write: (text: string) => socket.write(text),
    /** The first message that `match` takes, waiting for it. */
    async next(what: string, match: (m: SipMessage) => boolean): Promise<SipMessage> {
      await until(what, () => inbox.some(match), 20_000);
      const i = inbox.findIndex(match);
      return inbox.splice(i, 1)[0]!;
    },
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

type Json = Record<string, unknown>;

/**
 * A caller of Openline's SIP listener (`ourPort`): one of the account's numbers (bought on the
 * sandbox), and requests from a UDP socket of its own.
 */
export async function udpCaller(t: TestApp, ourPort: number) {
  const bought = await t.request('POST', '/v1/inbound/purchase', {
    area_code: '628',
    prompt: 'You are the front desk. Greet the caller.',
  });
  assert.equal(bought.status, 200, JSON.stringify(bought.body));
  const number = String(bought.body.phone_number);
  const peer = await udpPeer();
  let branch = 0;
  /** A request to Openline: `to` and `from` are the header values (tags included). */
  const send = (
    method: string,
    call: { callId: string; from: string; to: string; seq: number },
    extra: string[] = [],
    body = '',
    /** The top Via's branch (a CANCEL's is its INVITE's): a new one by default. */
    via = `z9hG4bK-test-${++branch}-${Date.now()}`,
  ) =>
    peer.send(
      [
        `${method} sip:${number}@127.0.0.1:${ourPort} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=${via}`,
        'Max-Forwards: 70',
        `From: ${call.from}`,
        `To: ${call.to}`,
        `Call-ID: ${call.callId}`,
        `CSeq: ${call.seq} ${method === 'ACK' ? 'INVITE' : method}`,
        `Contact: <sip:caller@127.0.0.1:${peer.port}>`,
        ...extra,
        ...(body && !extra.some((line) => /^content-type:/i.test(line)) ? ['Content-Type: application/sdp'] : []),
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n'),
      ourPort,
    );
  const responseTo = (callId: string, method: string, seq?: number) => (m: SipMessage) =>
    m.kind === 'response' &&
    m.status >= 200 &&
    m.headers.get('call-id')?.[0] === callId &&
    new RegExp(`^${seq ?? '\\d+'} ${method}$`).test(m.headers.get('cseq')?.[0] ?? '');
  /** Calls the number (with `offer`, else none) and acknowledges the 200 (unless `ack` is false): the dialog's Call-ID and headers. */
  const dial = async (callId: string, ack = true, offer?: string) => {
    const call = {
      callId,
      from: `<sip:+14155550199@127.0.0.1>;tag=caller-${callId}`,
      to: `<sip:${number}@127.0.0.1>`,
      seq: 1,
    };
    send('INVITE', call, [], offer ?? audioSdp(await freeUdpPort()));
    const ok = await peer.next('the 200', responseTo(callId, 'INVITE'));
    assert.equal((ok as { status: number }).status, 200);
    const dialog = { ...call, to: ok.headers.get('to')![0]!, ok: ok as SipResponse };
    if (ack) send('ACK', dialog);
    return dialog;
  };
  /** The status of the final response to a request of ours. */
  const status = async (callId: string, method: string, seq?: number) =>
    ((await peer.next(`the answer to ${method}`, responseTo(callId, method, seq))) as SipResponse).status;
  /** The call on record for the number (the latest). */
  const callId = async () => {
    const list = (await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`)).body
      .calls as Json[];
    return String(list[0]!.call_id);
  };
  return { number, peer, send, dial, status, callId };
}
