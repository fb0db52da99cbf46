import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { freeTcpPort, freeUdpPort } from '../../src/testing/ports.js';
import { SipCarrier } from '../../src/carriers/sip/carrier.js';
import { SipEndpoint } from '../../src/carriers/sip/endpoint.js';
import type { CallRequest } from '../../src/schemas/call-request.js';
import { serialize, type SipMessage, type SipRequest } from '../../src/carriers/sip/message.js';
import { HAS_SIPP, sipp, trace, until } from './sipp-run.js';
import { startSipApp, type SipTestApp } from './app.js';
import { isRequest, streamPeer, udpCaller, udpPeer, type UdpPeer } from './udp-peer.js';

type Json = Record<string, unknown>;

const HAS_OPENSSL = spawnSync('openssl', ['version']).error === undefined;

const sdp = (port: number) =>
  `v=0\r\no=peer 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${port} RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n`;

function request(lines: string[], body = ''): string {
  return `${lines.join('\r\n')}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** A UDP socket counting the RTP packets it receives: the agent's audio. */
async function rtpSink(): Promise<{ socket: dgram.Socket; port: number; packets: () => number }> {
  const socket = dgram.createSocket('udp4');
  let packets = 0;
  socket.on('message', () => packets++);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, port: socket.address().port, packets: () => packets };
}

/**
 * SIP over TCP (RFC 3261 section 18): sipp as a trunk and as a caller over TCP, the stream's
 * framing, keep-alives and the drop of a malformed stream, connections closed when idle.
 */
describe('SIP over TCP', { skip: !HAS_SIPP && 'sipp is not installed (apt-get install sip-tester)' }, () => {
  let app: SipTestApp | undefined;
  let t: TestApp;
  let dir: string;
  let trunkPort: number;
  let ourPort: number;

  before(async () => {
    trunkPort = await freeTcpPort();
    app = await startSipApp('sip-tcp', {
      OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${trunkPort};transport=tcp`,
      OPENLINE_RTP_PORTS: '33000-33999',
    });
    ({ t, dir, ourPort } = app);
  });
  after(() => app?.close());

  it('outbound over TCP: sipp answers and echoes the audio, our BYE goes on the same connection', async () => {
    const peer = sipp(
      ['-sn', 'uas', '-t', 't1', '-i', '127.0.0.1', '-p', String(trunkPort), '-rtp_echo', '-mp', '34000'],
      dir,
      'tcp-answer',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155551301',
      task: 'Confirm the appointment tomorrow.',
      max_duration: 1,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const id = String(r.body.call_id);
    await until('the agent to speak', async () => {
      const call = await t.request('GET', `/v1/calls/${id}`);
      return (call.body.transcripts as Json[]).some((x) => x.user === 'assistant');
    });
    await t.request('POST', `/v1/calls/${id}/stop`);
    const record = await waitForCall(t, id);
    assert.equal(await peer.exit, 0, trace(peer));
    assert.equal(record.status, 'completed');
    const log = trace(peer);
    assert.match(log, /INVITE sip:\+14155551301@127\.0\.0\.1:\d+ SIP\/2\.0\r?\nVia: SIP\/2\.0\/TCP /);
    assert.match(log, /Contact: <sip:openline@127\.0\.0\.1:\d+;transport=tcp>/);
    assert.match(log, /BYE sip:[^\n]*\r?\nVia: SIP\/2\.0\/TCP /);
  });

  // t1: one connection for all calls; tn: a connection per call.
  for (const mode of ['t1', 'tn'])
    it(`inbound over TCP (sipp -t ${mode}): sipp calls one of the account's numbers, the agent answers, sipp hangs up`, async () => {
      const bought = await t.request('POST', '/v1/inbound/purchase', {
        area_code: '628',
        prompt: 'You are the front desk of Sunny Dental. Greet the caller.',
      });
      assert.equal(bought.status, 200, JSON.stringify(bought.body));
      const number = String(bought.body.phone_number);
      const caller = sipp(
        [
          '-sn',
          'uac',
          `127.0.0.1:${ourPort}`,
          '-t',
          mode,
          ...(mode === 'tn' ? ['-max_socket', '100'] : []),
          '-i',
          '127.0.0.1',
          '-p',
          String(await freeTcpPort()),
          '-s',
          number.slice(1),
          '-d',
          '3000',
          '-rtp_echo',
          '-mp',
          mode === 't1' ? '34010' : '34020',
        ],
        dir,
        `tcp-inbound-${mode}`,
      );
      assert.equal(await caller.exit, 0, trace(caller));
      assert.match(trace(caller), /SIP\/2\.0 200 OK[\s\S]*Contact: <sip:openline@127\.0\.0\.1:\d+;transport=tcp>/);
      const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
      const id = String((list.body.calls as Json[])[0]?.call_id);
      const record = await waitForCall(t, id);
      assert.equal(record.inbound, true);
      assert.equal(record.call_ended_by, 'USER');
      assert.ok(
        (record.transcripts as Json[]).some((x) => x.user === 'assistant'),
        'the agent spoke',
      );
    });

  it('a TCP stream: keep-alive pings are answered, requests answered on their connection, a malformed stream dropped', async () => {
    const socket = net.connect({ host: '127.0.0.1', port: ourPort });
    await once(socket, 'connect');
    const peer = streamPeer(socket);
    // A ping (RFC 5626: CRLF CRLF) gets a pong (CRLF).
    peer.write('\r\n\r\n');
    await until('the pong', () => peer.raw() === '\r\n', 5000);
    // An OPTIONS split over three writes is read as one message; its answer comes on this connection.
    const options = request([
      `OPTIONS sip:openline@127.0.0.1:${ourPort} SIP/2.0`,
      `Via: SIP/2.0/TCP 127.0.0.1:${socket.localPort};branch=z9hG4bKtcpopt1`,
      'From: <sip:probe@127.0.0.1>;tag=p1',
      `To: <sip:openline@127.0.0.1:${ourPort}>`,
      'Call-ID: tcp-options-1@openline.test',
      'CSeq: 1 OPTIONS',
    ]);
    peer.write(options.slice(0, 40));
    peer.write(options.slice(40, 90));
    peer.write(options.slice(90));
    const answer = await peer.next('the OPTIONS answer', (m) => m.kind === 'response');
    assert.equal(answer.kind === 'response' && answer.status, 200);
    assert.match(answer.headers.get('allow')?.[0] ?? '', /UPDATE/);
    // A message without Content-Length cannot be framed on a stream: the connection is dropped.
    peer.write('INVITE sip:x@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:1;branch=z9hG4bKbad\r\n\r\n');
    await once(socket, 'close');
    // The server still answers, on UDP and on new connections.
    assert.equal((await t.request('GET', '/healthz')).status, 200);
    const again = net.connect({ host: '127.0.0.1', port: ourPort });
    await once(again, 'connect');
    const second = streamPeer(again);
    second.write(options.replace('z9hG4bKtcpopt1', 'z9hG4bKtcpopt2'));
    const ok = await second.next('an answer on a new connection', (m) => m.kind === 'response');
    assert.equal(ok.kind === 'response' && ok.status, 200);
    again.destroy();
  });
});

describe('SIP connections', () => {
  it('a connection with no traffic is closed after the idle time; one with traffic is not', async () => {
    const endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0, idleMs: 400 });
    try {
      const idle = net.connect({ host: '127.0.0.1', port: endpoint.port });
      await once(idle, 'connect');
      const closed = once(idle, 'close');
      const busy = net.connect({ host: '127.0.0.1', port: endpoint.port });
      await once(busy, 'connect');
      let busyClosed = false;
      busy.on('close', () => (busyClosed = true));
      const pings = setInterval(() => busy.write('\r\n\r\n'), 100);
      await closed;
      clearInterval(pings);
      assert.equal(busyClosed, false, 'a connection in use stays open');
      busy.destroy();
    } finally {
      endpoint.close();
    }
  });

  it("a response whose request's connection has closed goes on a new connection to the Via's port, where the peer listens", async () => {
    const endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0 });
    const accepted: ReturnType<typeof streamPeer>[] = [];
    const listener = net.createServer((s) => accepted.push(streamPeer(s)));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const listening = (listener.address() as net.AddressInfo).port;
    let answer: ((status: number) => void) | undefined;
    let connection: number | undefined;
    endpoint.onRequest((_request, from, respond) => {
      connection = from.connection;
      answer = (status) => respond(status, 'OK');
    });
    const socket = net.connect({ host: '127.0.0.1', port: endpoint.port });
    try {
      await once(socket, 'connect');
      socket.write(
        [
          `OPTIONS sip:probe@127.0.0.1:${endpoint.port};transport=tcp SIP/2.0`,
          `Via: SIP/2.0/TCP 127.0.0.1:${listening};branch=z9hG4bK-gone-1`,
          'From: <sip:peer@127.0.0.1>;tag=p1',
          'To: <sip:probe@127.0.0.1>',
          'Call-ID: gone-1',
          'CSeq: 1 OPTIONS',
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n'),
      );
      await until('the request', () => answer !== undefined);
      socket.destroy();
      await until('its connection closed', () => !endpoint.isOpen(connection));
      answer!(200);
      await until('a connection to the Via port', () => accepted.length > 0);
      const ok = await accepted[0]!.next('the 200', (m) => m.kind === 'response' && m.status === 200);
      assert.equal(ok.headers.get('call-id')?.[0], 'gone-1');
    } finally {
      socket.destroy();
      endpoint.close();
      listener.close();
    }
  });

  it('an oversized message on a stream drops the connection', async () => {
    const endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0 });
    try {
      const socket = net.connect({ host: '127.0.0.1', port: endpoint.port });
      await once(socket, 'connect');
      socket.write(`OPTIONS sip:x@127.0.0.1 SIP/2.0\r\nContent-Length: 900000\r\n\r\n`);
      await once(socket, 'close');
    } finally {
      endpoint.close();
    }
  });
});

/**
 * SIP over TLS: a self-signed certificate made here by openssl; a TLS client calls one of the
 * account's numbers through a real INVITE dialog, and a TLS trunk (trusted through
 * OPENLINE_SIP_TLS_CA) takes an outbound call whose BYE comes on the INVITE's own connection.
 */
describe('SIP over TLS', { skip: !HAS_OPENSSL && 'openssl is not installed' }, () => {
  let t: TestApp;
  let dir: string;
  let cert: string;
  let key: string;
  let tlsPort: number;
  let trunk: tls.Server;
  let trunkPort: number;
  const trunkConnections: tls.TLSSocket[] = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-sip-tls-'));
    const made = spawnSync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-out',
      path.join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ]);
    assert.equal(made.status, 0, made.stderr.toString());
    cert = fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8');
    key = fs.readFileSync(path.join(dir, 'key.pem'), 'utf8');
    // The trunk: a TLS server with the same certificate.
    trunk = tls.createServer({ cert, key }, (socket) => trunkConnections.push(socket));
    trunkPort = await freeTcpPort();
    await new Promise<void>((resolve) => trunk.listen(trunkPort, '127.0.0.1', resolve));
    tlsPort = await freeTcpPort();
    t = await createTestApp({
      env: {
        DATA_DIR: dir,
        OPENLINE_SIP_LISTEN: `127.0.0.1:${await freeUdpPort()}`,
        OPENLINE_SIP_TLS_CERT: path.join(dir, 'cert.pem'),
        OPENLINE_SIP_TLS_KEY: path.join(dir, 'key.pem'),
        OPENLINE_SIP_TLS_CA: path.join(dir, 'cert.pem'),
        OPENLINE_SIP_TLS_PORT: String(tlsPort),
        OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${trunkPort};transport=tls`,
        OPENLINE_RTP_PORTS: '35000-35999',
      },
    });
    await t.services.startWorkers();
  });
  after(async () => {
    await t?.close();
    for (const socket of trunkConnections) socket.destroy();
    trunk?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("inbound over TLS: a TLS client calls one of the account's numbers, hears the agent, hangs up", async () => {
    const bought = await t.request('POST', '/v1/inbound/purchase', {
      area_code: '628',
      prompt: 'You are the front desk of Sunny Dental. Greet the caller.',
    });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    const number = String(bought.body.phone_number);
    // Our certificate is checked against the authority the client trusts.
    const socket = tls.connect({ host: '127.0.0.1', port: tlsPort, ca: cert });
    await once(socket, 'secureConnect');
    const peer = streamPeer(socket);
    const rtp = await rtpSink();
    const local = `127.0.0.1:${socket.localPort}`;
    const common = [
      `From: <sip:+14155550177@127.0.0.1>;tag=tls1`,
      `Call-ID: tls-inbound-1@openline.test`,
      'Max-Forwards: 70',
    ];
    peer.write(
      request(
        [
          `INVITE sip:${number}@127.0.0.1:${tlsPort};transport=tls SIP/2.0`,
          `Via: SIP/2.0/TLS ${local};branch=z9hG4bKtlsinv1;rport`,
          ...common,
          `To: <sip:${number}@127.0.0.1>`,
          'CSeq: 1 INVITE',
          `Contact: <sip:caller@${local};transport=tls>`,
          'Content-Type: application/sdp',
        ],
        sdp(rtp.port),
      ),
    );
    const ok = await peer.next('the 200 OK', (m) => m.kind === 'response' && m.status === 200);
    assert.match(ok.headers.get('contact')?.[0] ?? '', new RegExp(`:${tlsPort};transport=tls>`));
    const to = ok.headers.get('to')![0]!;
    peer.write(
      request([
        `ACK sip:openline@127.0.0.1:${tlsPort};transport=tls SIP/2.0`,
        `Via: SIP/2.0/TLS ${local};branch=z9hG4bKtlsack1;rport`,
        ...common,
        `To: ${to}`,
        'CSeq: 1 ACK',
      ]),
    );
    // The agent's greeting arrives as RTP (50 packets: a second of audio).
    await until('the agent to speak', () => rtp.packets() >= 50);
    peer.write(
      request([
        `BYE sip:openline@127.0.0.1:${tlsPort};transport=tls SIP/2.0`,
        `Via: SIP/2.0/TLS ${local};branch=z9hG4bKtlsbye1;rport`,
        ...common,
        `To: ${to}`,
        'CSeq: 2 BYE',
      ]),
    );
    const bye = await peer.next(
      'the BYE answer',
      (m) => m.kind === 'response' && /BYE/.test(m.headers.get('cseq')![0]!),
    );
    assert.equal(bye.kind === 'response' && bye.status, 200);
    socket.destroy();
    rtp.socket.close();
    const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
    const record = await waitForCall(t, String((list.body.calls as Json[])[0]?.call_id));
    assert.equal(record.inbound, true);
    assert.equal(record.call_ended_by, 'USER');
    assert.ok((record.transcripts as Json[]).some((x) => x.user === 'assistant'));
  });

  it('outbound over TLS: the trunk (its certificate trusted by OPENLINE_SIP_TLS_CA) answers; BYE comes on the same connection', async () => {
    const rtp = await rtpSink();
    const seen: { method: string; connection: number }[] = [];
    const serve = (socket: tls.TLSSocket, index: number) => {
      const peer = streamPeer(socket);
      socket.on('data', () => {
        for (const m of peer.inbox.splice(0)) {
          if (m.kind !== 'request') continue;
          seen.push({ method: m.method, connection: index });
          if (m.method === 'ACK') continue;
          const reply: SipMessage = {
            kind: 'response',
            status: 200,
            reason: 'OK',
            headers: new Map([
              ['via', m.headers.get('via')!],
              ['from', m.headers.get('from')!],
              ['to', [m.method === 'INVITE' ? `${m.headers.get('to')![0]};tag=trunk1` : m.headers.get('to')![0]!]],
              ['call-id', m.headers.get('call-id')!],
              ['cseq', m.headers.get('cseq')!],
              ['contact', [`<sip:trunk@127.0.0.1:${trunkPort};transport=tls>`]],
              ...(m.method === 'INVITE' ? [['content-type', ['application/sdp']] as [string, string[]]] : []),
            ]),
            body: m.method === 'INVITE' ? sdp(rtp.port) : '',
          };
          socket.write(serialize(reply));
        }
      });
    };
    let served = 0;
    trunk.on('secureConnection', (socket) => serve(socket, served++));
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155551302',
      task: 'Confirm the appointment tomorrow.',
      max_duration: 1,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const id = String(r.body.call_id);
    await until('the agent to speak', () => rtp.packets() >= 50);
    await t.request('POST', `/v1/calls/${id}/stop`);
    const record = await waitForCall(t, id);
    await until('the BYE', () => seen.some((s) => s.method === 'BYE'));
    rtp.socket.close();
    assert.equal(record.status, 'completed');
    assert.deepEqual(
      seen.map((s) => s.method),
      ['INVITE', 'ACK', 'BYE'],
    );
    assert.ok(
      seen.every((s) => s.connection === 0),
      'one connection for the whole dialog',
    );
    assert.equal(trunkConnections.length, 1);
  });

  it('outbound over TLS to a trunk whose certificate is not trusted: the call fails, saying why', async () => {
    // An endpoint that trusts only the system's authorities: the self-signed trunk is refused.
    const endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0 });
    const carrier = new SipCarrier({
      endpoint,
      trunk: { host: '127.0.0.1', port: trunkPort, transport: 'tls' },
      rtpPorts: { min: 35500, max: 35599 },
      rtpHost: '127.0.0.1',
      audioLeg: () => assert.fail('an untrusted trunk must not connect a call'),
    });
    try {
      const result = await carrier.dial({
        callId: 'untrusted-tls',
        to: '+14155551303',
        from: null,
        ringTimeoutMs: 10_000,
        signal: new AbortController().signal,
        // The call's settings are not read before the call connects.
        request: {} as CallRequest,
      });
      assert.equal(result.status, 'failed');
      assert.match(result.status === 'failed' ? result.reason : '', /^SIP 503 .*certificate/i);
    } finally {
      await carrier.close();
    }
  });
});

/**
 * SIP listening on every address, IPv6 and IPv4 alike (OPENLINE_SIP_LISTEN=[::]:port, one
 * dual-stack socket): IPv4 peers call in and are called, their RTP and requests sent to their
 * IPv4 addresses.
 */
describe('SIP listening on [::] (IPv4 and IPv6)', () => {
  let app: SipTestApp | undefined;
  let trunk: UdpPeer;
  let port: number;

  before(async () => {
    trunk = await udpPeer();
    port = await freeUdpPort();
    app = await startSipApp('sip-dual-stack', {
      OPENLINE_SIP_LISTEN: `[::]:${port}`,
      OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${trunk.port}`,
      OPENLINE_RTP_PORTS: '37100-37199',
    });
  });
  after(async () => {
    await app?.close();
    trunk?.close();
  });

  it('an IPv4 caller hears the agent, and a call out reaches an IPv4 trunk', async () => {
    const t = app!.t;
    const { peer, send, dial, status } = await udpCaller(t, port);
    const sink = await rtpSink();
    try {
      const dialog = await dial('dual-stack-1', true, sdp(sink.port));
      await until("the agent's RTP at the caller's IPv4 address", () => sink.packets() > 5);
      send('BYE', { ...dialog, seq: 2 });
      assert.equal(await status('dual-stack-1', 'BYE', 2), 200);
      const r = await t.request('POST', '/v1/calls', { phone_number: '+14155551901', task: 'Say hello.' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const invite = (await trunk.next('the INVITE at the IPv4 trunk', isRequest('INVITE'), 5000)) as SipRequest;
      trunk.respond(invite, '486 Busy Here');
      assert.equal((await waitForCall(t, String(r.body.call_id))).answered_by, 'no-answer');
    } finally {
      peer.close();
      sink.socket.close();
    }
  });
});
