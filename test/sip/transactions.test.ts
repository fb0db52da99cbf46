import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { cseqOf, type SipMessage, type SipRequest, type SipResponse } from '../../src/carriers/sip/message.js';
import { SipEndpoint, type Responder } from '../../src/carriers/sip/endpoint.js';
import { until } from './sipp-run.js';
import { startSipApp, type SipTestApp } from './app.js';
import { audioSdp, isRequest, udpCaller, udpPeer, type UdpPeer } from './udp-peer.js';

type Json = Record<string, unknown>;

/** T1 for these tests: 64 T1 (timers B, F, H and the wait after a CANCEL) is 1.28 s rather than 32. */
const T1_MS = 20;

/**
 * RFC 3261's transactions and dialogs against a peer speaking raw SIP over UDP: the trunk of
 * outbound calls and a caller, saying what real peers sometimes say (nothing after a CANCEL, a
 * request for a dialog that is gone, a challenge to a BYE).
 */
describe('SIP transactions and dialogs', () => {
  let app: SipTestApp | undefined;
  let t: TestApp;
  let trunk: UdpPeer;
  let ourPort: number;

  before(async () => {
    trunk = await udpPeer();
    app = await startSipApp(
      'sip-transactions',
      { OPENLINE_SIP_TRUNK: `sip:alice:s3cret@127.0.0.1:${trunk.port}`, OPENLINE_RTP_PORTS: '34000-34199' },
      T1_MS,
    );
    ({ t, ourPort } = app);
  });
  after(async () => {
    await app?.close();
    trunk?.close();
  });

  async function call(to: string, body: Json = {}): Promise<string> {
    const r = await t.request('POST', '/v1/calls', { phone_number: to, task: 'Confirm the appointment.', ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return String(r.body.call_id);
  }

  const inviteTo = (number: string) => (m: SipMessage) => isRequest('INVITE')(m) && m.uri.startsWith(`sip:${number}@`);

  /** Whether a UDP port of loopback can be bound (the call's RTP socket let it go). */
  async function portFree(port: number): Promise<boolean> {
    const socket = dgram.createSocket('udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, '127.0.0.1', resolve);
      });
      return true;
    } catch {
      return false;
    } finally {
      socket.close();
    }
  }

  it('a ringing call stopped through the API ends when the trunk never answers its CANCEL nor the INVITE; its RTP port is let go', async () => {
    const id = await call('+14155551501');
    const invite = (await trunk.next('the INVITE', inviteTo('+14155551501'))) as SipRequest;
    trunk.respond(invite, '100 Trying');
    trunk.respond(invite, '180 Ringing');
    const rtpPort = Number(/m=audio (\d+)/.exec(invite.body)?.[1]);
    assert.equal(await portFree(rtpPort), false, 'the call holds its RTP port while it rings');
    assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
    // The trunk hears the CANCEL and never answers it, nor the INVITE.
    await trunk.next('the CANCEL', isRequest('CANCEL'));
    const record = await waitForCall(t, id);
    assert.equal(record.status, 'canceled');
    assert.equal(record.completed, true);
    assert.equal(await portFree(rtpPort), true, 'the RTP port is free again');
  });

  const caller = () => udpCaller(t, ourPort);

  const callsTo = async (number: string) =>
    ((await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`)).body.calls as Json[])
      .length;

  it('in-dialog requests must name a dialog by Call-ID and both tags: an unknown one gets 481 and never starts a call; a stale CSeq gets 500', async () => {
    const { number, peer, send, dial, status } = await caller();
    try {
      // A re-INVITE (a To tag) for a dialog Openline does not have: 481, no call.
      const stray = {
        callId: 'stray-1',
        from: '<sip:+14155550199@127.0.0.1>;tag=c1',
        to: `<sip:${number}@127.0.0.1>;tag=deadbeef`,
        seq: 2,
      };
      send('INVITE', stray, [], audioSdp(40000));
      assert.equal(await status('stray-1', 'INVITE'), 481);
      assert.equal(await callsTo(number), 0, 'no call started');

      const dialog = await dial('dialog-1');
      assert.equal(await callsTo(number), 1);
      // A BYE with the right Call-ID but the wrong tags: 481, the call goes on.
      send('BYE', { ...dialog, from: '<sip:+14155550199@127.0.0.1>;tag=intruder', seq: 2 });
      assert.equal(await status('dialog-1', 'BYE', 2), 481);
      send('BYE', { ...dialog, to: `<sip:${number}@127.0.0.1>;tag=wrong`, seq: 3 });
      assert.equal(await status('dialog-1', 'BYE', 3), 481);
      // A re-INVITE older than the last request of the dialog: 500.
      send('INFO', { ...dialog, seq: 5 });
      assert.equal(await status('dialog-1', 'INFO', 5), 200);
      send('INVITE', { ...dialog, seq: 4 }, [], audioSdp(40002));
      assert.equal(await status('dialog-1', 'INVITE', 4), 500);
      const list = (await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`)).body
        .calls as Json[];
      const id = String(list[0]!.call_id);
      assert.equal((await t.request('GET', `/v1/calls/${id}`)).body.completed, false, 'the call goes on');
      // The caller's own BYE ends it.
      send('BYE', { ...dialog, seq: 6 });
      assert.equal(await status('dialog-1', 'BYE', 6), 200);
      const record = await waitForCall(t, id);
      assert.equal(record.call_ended_by, 'USER');
    } finally {
      peer.close();
    }
  });

  it("CANCEL (RFC 3261 section 9.2) of an answered call: answered with the 200's To tag, and the call goes on; one that matches no INVITE gets 481", async () => {
    const { number, peer, send, status, callId } = await caller();
    const toTag = (m: SipMessage) => /;tag=([^;]+)/.exec(m.headers.get('to')?.[0] ?? '')?.[1];
    const answerTo = (id: string, method: string) => (m: SipMessage) =>
      m.kind === 'response' &&
      m.status >= 200 &&
      m.headers.get('call-id')?.[0] === id &&
      m.headers.get('cseq')?.[0] === `1 ${method}`;
    try {
      // Answered: a CANCEL crossing the 200 gets 200 with the same To tag, and the call goes on.
      const call = {
        callId: 'cancel-1',
        from: '<sip:+14155550199@127.0.0.1>;tag=c-cancel-1',
        to: `<sip:${number}@127.0.0.1>`,
        seq: 1,
      };
      send('INVITE', call, [], audioSdp(await freeUdpPort()), 'z9hG4bK-cancel-1');
      const ok = (await peer.next('the 200', answerTo('cancel-1', 'INVITE'))) as SipResponse;
      assert.equal(ok.status, 200);
      send('CANCEL', call, [], '', 'z9hG4bK-cancel-1');
      const cancelled = (await peer.next('the answer to CANCEL', answerTo('cancel-1', 'CANCEL'))) as SipResponse;
      assert.equal(cancelled.status, 200);
      assert.equal(toTag(cancelled), toTag(ok), 'the To tag of the 200 to the INVITE');
      // A CANCEL of no INVITE Openline has (another branch): 481.
      send('CANCEL', call, [], '', 'z9hG4bK-cancel-other');
      assert.equal(await status('cancel-1', 'CANCEL'), 481);
      const dialog = { ...call, to: ok.headers.get('to')![0]! };
      send('ACK', dialog);
      const id = await callId();
      assert.equal((await t.request('GET', `/v1/calls/${id}`)).body.completed, false, 'the call goes on');
      send('BYE', { ...dialog, seq: 2 });
      assert.equal(await status('cancel-1', 'BYE', 2), 200);
      await waitForCall(t, id);
    } finally {
      peer.close();
    }
  });

  it('CANCEL of an INVITE not answered yet: 200, the INVITE gets 487 with the same To tag, the handler is told; nothing it says after that goes out', async () => {
    const endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0, t1Ms: T1_MS });
    const peer = await udpPeer();
    let pending: { respond: Responder; transaction: { readonly cancelled: boolean } } | undefined;
    endpoint.onRequest((request, _from, respond, transaction) => {
      if (request.method !== 'INVITE') return respond(405, 'Method Not Allowed');
      respond(100, 'Trying');
      pending = { respond, transaction };
    });
    const request = (method: string) =>
      [
        `${method} sip:+14155550123@127.0.0.1:${endpoint.port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK-pending-1`,
        'Max-Forwards: 70',
        'From: <sip:+14155550199@127.0.0.1>;tag=c-pending-1',
        'To: <sip:+14155550123@127.0.0.1>',
        'Call-ID: pending-1',
        `CSeq: 1 ${method}`,
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
    const final = (method: string) => (m: SipMessage) =>
      m.kind === 'response' && m.status >= 200 && m.headers.get('cseq')?.[0] === `1 ${method}`;
    const toTag = (m: SipMessage) => /;tag=([^;]+)/.exec(m.headers.get('to')?.[0] ?? '')?.[1];
    try {
      peer.send(request('INVITE'), endpoint.port);
      await until('the INVITE to reach the handler', () => pending !== undefined);
      assert.equal(pending!.transaction.cancelled, false);
      peer.send(request('CANCEL'), endpoint.port);
      const ok = (await peer.next('the answer to CANCEL', final('CANCEL'))) as SipResponse;
      const terminated = (await peer.next('the answer to INVITE', final('INVITE'))) as SipResponse;
      assert.equal(ok.status, 200);
      assert.equal(terminated.status, 487);
      assert.ok(toTag(ok));
      assert.equal(toTag(ok), toTag(terminated));
      assert.equal(pending!.transaction.cancelled, true);
      // Too late: the INVITE's transaction has its final response.
      pending!.respond(200, 'OK');
      await new Promise((resolve) => setTimeout(resolve, 10 * T1_MS));
      assert.ok(!peer.inbox.some((m) => m.kind === 'response' && m.status === 200 && final('INVITE')(m)));
      // A CANCEL that matches no INVITE transaction: 481.
      peer.send(request('CANCEL').replace('z9hG4bK-pending-1', 'z9hG4bK-pending-2'), endpoint.port);
      assert.equal(
        (
          (await peer.next(
            'the answer to the stray CANCEL',
            (m) => final('CANCEL')(m) && (m as SipResponse).status !== 200,
          )) as SipResponse
        ).status,
        481,
      );
    } finally {
      endpoint.close();
      peer.close();
    }
  });

  it('a 200 OK never acknowledged ends the call with BYE after 64 T1; no 200 is resent after a BYE of ours', async () => {
    const { peer, dial, callId } = await caller();
    try {
      const oks = (id: string) =>
        peer.inbox.filter((m) => m.kind === 'response' && m.status === 200 && m.headers.get('call-id')?.[0] === id)
          .length;
      await dial('no-ack-1', false);
      const id = await callId();
      // Resent over UDP while it waits, then given up: BYE.
      const bye = (await peer.next(
        'the BYE',
        (m) => isRequest('BYE')(m) && m.headers.get('call-id')?.[0] === 'no-ack-1',
      )) as SipRequest;
      assert.ok(oks('no-ack-1') >= 3, `the 200 was resent (${oks('no-ack-1')} in all)`);
      peer.respond(bye, '200 OK');
      const record = await waitForCall(t, id);
      assert.equal(record.completed, true);

      // Stopped through the API before any ACK: the BYE goes out and the 200 is not resent after it.
      await dial('no-ack-2', false);
      const second = await callId();
      assert.equal((await t.request('POST', `/v1/calls/${second}/stop`)).status, 200);
      const bye2 = (await peer.next(
        'the BYE',
        (m) => isRequest('BYE')(m) && m.headers.get('call-id')?.[0] === 'no-ack-2',
      )) as SipRequest;
      peer.respond(bye2, '200 OK');
      const sentBefore = oks('no-ack-2');
      await new Promise((resolve) => setTimeout(resolve, 20 * T1_MS));
      assert.equal(oks('no-ack-2'), sentBefore, 'no 200 after the BYE');
      await waitForCall(t, second);
    } finally {
      peer.close();
    }
  });

  it("a BYE the trunk challenges (407) is sent again once with the trunk's credentials", async () => {
    const id = await call('+14155551502');
    const invite = (await trunk.next('the INVITE', inviteTo('+14155551502'))) as SipRequest;
    trunk.respond(invite, '200 OK', [`Contact: <sip:trunk@127.0.0.1:${trunk.port}>`], audioSdp(await freeUdpPort()));
    await trunk.next('the ACK', isRequest('ACK'));
    await until(
      'the call to start',
      async () => (await t.request('GET', `/v1/calls/${id}`)).body.queue_status === 'started',
    );
    assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
    const bye = (await trunk.next('the BYE', isRequest('BYE'))) as SipRequest;
    assert.equal(bye.headers.get('proxy-authorization'), undefined);
    trunk.respond(bye, '407 Proxy Authentication Required', [
      'Proxy-Authenticate: Digest realm="carrier.example", nonce="n0nce2", qop="auth", algorithm=MD5',
    ]);
    const again = (await trunk.next(
      'the BYE with credentials',
      (m) => isRequest('BYE')(m) && m.headers.has('proxy-authorization'),
    )) as SipRequest;
    const answer = again.headers.get('proxy-authorization')?.[0] ?? '';
    const field = (name: string) => new RegExp(`${name}="?([^",]+)"?`).exec(answer)?.[1];
    const md5 = (text: string) => createHash('md5').update(text).digest('hex');
    const expected = md5(
      `${md5('alice:carrier.example:s3cret')}:n0nce2:${field('nc')}:${field('cnonce')}:auth:${md5(`BYE:${again.uri}`)}`,
    );
    assert.equal(field('username'), 'alice');
    assert.equal(field('response'), expected, answer);
    assert.ok(cseqOf(again)!.seq > cseqOf(bye)!.seq, 'a new CSeq');
    trunk.respond(again, '200 OK');
    const record = await waitForCall(t, id);
    assert.equal(record.completed, true);
  });

  /**
   * An outbound call to `number` that the trunk answers with a 2 s session (refresher=uac) and no
   * UPDATE: Openline's first refresh re-INVITE, as the trunk receives it.
   */
  async function refreshing(number: string) {
    const id = await call(number);
    const invite = (await trunk.next('the INVITE', inviteTo(number))) as SipRequest;
    const callId = invite.headers.get('call-id')![0]!;
    const ofCall = (method: string) => (m: SipMessage) =>
      isRequest(method)(m) && m.headers.get('call-id')?.[0] === callId;
    // Openline refreshes (refresher=uac) every second; the trunk has no UPDATE: a re-INVITE.
    trunk.respond(
      invite,
      '200 OK',
      [`Contact: <sip:trunk@127.0.0.1:${trunk.port}>`, 'Session-Expires: 2;refresher=uac', 'Require: timer'],
      audioSdp(await freeUdpPort()),
    );
    await trunk.next('the ACK', ofCall('ACK'));
    const reinvite = (await trunk.next(
      'the re-INVITE',
      (m) => ofCall('INVITE')(m) && /;tag=/.test(m.headers.get('to')?.[0] ?? ''),
    )) as SipRequest;
    return { id, invite, callId, ofCall, reinvite };
  }

  it('a session refresh (re-INVITE) that hears 100 Trying and never a final response is cancelled after Timer C (360 T1), and the call ends with BYE', async () => {
    const { id, ofCall, reinvite } = await refreshing('+14155551504');
    const sentAt = Date.now();
    trunk.respond(reinvite, '100 Trying');
    const cancel = (await trunk.next('the CANCEL of the re-INVITE', ofCall('CANCEL'), 30_000)) as SipRequest;
    const waited = Date.now() - sentAt;
    assert.ok(waited >= 300 * T1_MS, `Timer C, not sooner (${waited} ms)`);
    assert.equal(cseqOf(cancel)!.seq, cseqOf(reinvite)!.seq);
    assert.equal(cancel.headers.get('via')?.[0], reinvite.headers.get('via')?.[0]);
    assert.equal(cancel.uri, reinvite.uri);
    // The CANCEL is accepted, the re-INVITE never answered: the refresh failed, the call ends.
    trunk.respond(cancel, '200 OK');
    const bye = (await trunk.next('the BYE', ofCall('BYE'))) as SipRequest;
    trunk.respond(bye, '200 OK');
    const record = await waitForCall(t, id);
    assert.equal(record.completed, true);
  });

  it("glare (RFC 3261 section 14.2): the trunk's re-INVITE that crosses Openline's refresh re-INVITE gets 491; once Openline's is answered, the trunk's goes through", async () => {
    const { id, invite, callId, ofCall, reinvite } = await refreshing('+14155551506');
    // The trunk's own re-INVITE (hold), sent before it answers Openline's.
    const mediaPort = await freeUdpPort();
    const hold = (seq: number) => {
      const body = audioSdp(mediaPort, ['a=sendonly']);
      return [
        `INVITE ${/<([^>]+)>/.exec(invite.headers.get('contact')![0]!)![1]} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${trunk.port};branch=z9hG4bK-glare-${seq}`,
        'Max-Forwards: 70',
        `From: ${reinvite.headers.get('to')![0]}`,
        `To: ${reinvite.headers.get('from')![0]}`,
        `Call-ID: ${callId}`,
        `CSeq: ${seq} INVITE`,
        `Contact: <sip:trunk@127.0.0.1:${trunk.port}>`,
        'Content-Type: application/sdp',
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n');
    };
    const answerTo = (seq: number) => (m: SipMessage) =>
      m.kind === 'response' &&
      m.status >= 200 &&
      m.headers.get('cseq')?.[0] === `${seq} INVITE` &&
      m.headers.get('call-id')?.[0] === callId;
    trunk.send(hold(10), ourPort);
    assert.equal(((await trunk.next('the answer to the crossing re-INVITE', answerTo(10))) as SipResponse).status, 491);
    trunk.respond(reinvite, '200 OK', ['Session-Expires: 90;refresher=uac', 'Require: timer'], audioSdp(mediaPort));
    await trunk.next('the ACK of the refresh', (m) => ofCall('ACK')(m) && cseqOf(m)!.seq === cseqOf(reinvite)!.seq);
    trunk.send(hold(11), ourPort);
    const held = (await trunk.next('the answer to the re-INVITE', answerTo(11))) as SipResponse;
    assert.equal(held.status, 200);
    assert.match(held.body, /a=recvonly/);
    assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
    const bye = (await trunk.next('the BYE', ofCall('BYE'))) as SipRequest;
    trunk.respond(bye, '200 OK');
    await waitForCall(t, id);
  });

  it("a call in from the trunk: a BYE of Openline's that the trunk challenges (401) is sent again with the trunk's credentials", async () => {
    const { peer, dial, callId } = await caller();
    try {
      await dial('in-auth-1');
      const id = await callId();
      assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
      const bye = (await peer.next('the BYE', isRequest('BYE'))) as SipRequest;
      assert.equal(bye.headers.get('authorization'), undefined);
      peer.respond(bye, '401 Unauthorized', [
        'WWW-Authenticate: Digest realm="carrier.example", nonce="n0nce3", qop="auth", algorithm=MD5',
      ]);
      const again = (await peer.next(
        'the BYE with credentials',
        (m) => isRequest('BYE')(m) && m.headers.has('authorization'),
      )) as SipRequest;
      const answer = again.headers.get('authorization')?.[0] ?? '';
      const field = (name: string) => new RegExp(`${name}="?([^",]+)"?`).exec(answer)?.[1];
      const md5 = (text: string) => createHash('md5').update(text).digest('hex');
      assert.equal(field('username'), 'alice');
      assert.equal(
        field('response'),
        md5(
          `${md5('alice:carrier.example:s3cret')}:n0nce3:${field('nc')}:${field('cnonce')}:auth:${md5(`BYE:${again.uri}`)}`,
        ),
      );
      assert.ok(cseqOf(again)!.seq > cseqOf(bye)!.seq, 'a new CSeq');
      peer.respond(again, '200 OK');
      assert.equal((await waitForCall(t, id)).completed, true);
    } finally {
      peer.close();
    }
  });

  /** A UDP socket standing for the caller's RTP: how many packets it got. */
  async function rtpSink() {
    const socket = dgram.createSocket('udp4');
    let packets = 0;
    socket.on('message', () => packets++);
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return { port: socket.address().port, packets: () => packets, close: () => socket.close() };
  }
  /** The o= line's session id and version, the m= lines and the direction of an SDP. */
  const sdpOf = (body: string) => ({
    origin: /^o=\S+ (\d+) (\d+)/m.exec(body)?.slice(1).map(Number),
    m: body.match(/^m=.*$/gm)?.map((line) => line.trim()),
    direction: /^a=(sendrecv|sendonly|recvonly|inactive)/m.exec(body)?.[1],
  });

  it('offer and answer (RFC 3264): hold is answered in kind and silences our RTP, o= keeps its id with a new version, m= lines mirrored, bad offers get 488, offers in the 200 when the INVITE has none', async () => {
    const { peer, send, dial, status } = await caller();
    const first = await rtpSink();
    const second = await rtpSink();
    const third = await rtpSink();
    try {
      const video = ['m=video 5004 RTP/AVP 96', 'a=rtpmap:96 H264/90000'];
      const dialog = await dial('oa-1', true, audioSdp(first.port, video));
      const answered = sdpOf(dialog.ok.body);
      assert.equal(answered.m?.length, 2, dialog.ok.body);
      assert.match(answered.m[0]!, /^m=audio [1-9]\d* /);
      assert.match(answered.m[1]!, /^m=video 0 RTP\/AVP 96$/);
      const [sessionId, version] = answered.origin!;
      await until("the agent's RTP", () => first.packets() > 5);
      let seq = 1;
      /** A re-INVITE of `body`: its final response. */
      const reinvite = async (body: string) => {
        send('INVITE', { ...dialog, seq: ++seq }, [], body);
        const response = (await peer.next(
          'the re-INVITE answer',
          (m) => m.kind === 'response' && m.headers.get('cseq')?.[0] === `${seq} INVITE` && m.status >= 200,
        )) as SipResponse;
        if (response.status === 200) send('ACK', { ...dialog, seq });
        return response;
      };
      /** Whether our RTP to `sink` stops (nothing for a while, after a moment for what was under way). */
      const silentAt = async (sink: { packets: () => number }) => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const before = sink.packets();
        await new Promise((resolve) => setTimeout(resolve, 400));
        return sink.packets() === before;
      };

      // Held by the far end (a=sendonly): recvonly, and nothing sent.
      let r = await reinvite(audioSdp(first.port, ['a=sendonly']));
      assert.equal(r.status, 200);
      assert.equal(sdpOf(r.body).direction, 'recvonly');
      assert.deepEqual(sdpOf(r.body).origin, [sessionId, version! + 1]);
      assert.ok(await silentAt(first), 'no RTP while held');
      r = await reinvite(audioSdp(first.port, ['a=inactive']));
      assert.equal(sdpOf(r.body).direction, 'inactive');
      assert.deepEqual(sdpOf(r.body).origin, [sessionId, version! + 2]);
      // The old way: c=0.0.0.0.
      r = await reinvite(audioSdp(first.port).replace('c=IN IP4 127.0.0.1', 'c=IN IP4 0.0.0.0'));
      assert.equal(sdpOf(r.body).direction, 'recvonly');
      assert.ok(await silentAt(first), 'no RTP to 0.0.0.0');
      // Resumed, at a new port.
      r = await reinvite(audioSdp(second.port));
      assert.equal(sdpOf(r.body).direction, 'sendrecv');
      await until('RTP again', () => second.packets() > 5);
      // The same offer again: the same answer, the same version.
      const version4 = sdpOf(r.body).origin;
      r = await reinvite(audioSdp(second.port));
      assert.deepEqual(sdpOf(r.body).origin, version4);

      // Offers we cannot take: 488, and the session stays as it was.
      for (const bad of [
        audioSdp(third.port)
          .replace('RTP/AVP 0 101', 'RTP/AVP 18')
          .replace('a=rtpmap:0 PCMU/8000', 'a=rtpmap:18 G729/8000'),
        audioSdp(70000),
        audioSdp(0),
      ])
        assert.equal((await reinvite(bad)).status, 488, bad);
      const before = second.packets();
      await until('RTP still to the same port', () => second.packets() > before + 5);
      assert.equal(third.packets(), 0);

      // No SDP: our offer in the 200, the answer in the ACK.
      send('INVITE', { ...dialog, seq: ++seq });
      const offered = (await peer.next(
        'the offer',
        (m) => m.kind === 'response' && m.headers.get('cseq')?.[0] === `${seq} INVITE` && m.status === 200,
      )) as SipResponse;
      assert.match(offered.body, /m=audio \d+ RTP\/AVP 0 8 101/);
      assert.equal(sdpOf(offered.body).origin![0], sessionId);
      send('ACK', { ...dialog, seq }, [], audioSdp(third.port));
      await until('RTP to the address of the answer in the ACK', () => third.packets() > 5);
      send('BYE', { ...dialog, seq: ++seq });
      assert.equal(await status('oa-1', 'BYE', seq), 200);

      // A call in without SDP (a delayed offer): our offer in the 200, the answer in the ACK.
      const delayed = await dial('oa-2', false, '');
      assert.match(delayed.ok.body, /m=audio \d+ RTP\/AVP 0 8 101/);
      const firstBefore = first.packets();
      send('ACK', delayed, [], audioSdp(first.port));
      await until('RTP of the delayed-offer call', () => first.packets() > firstBefore + 5);
      send('BYE', { ...delayed, seq: 2 });
      assert.equal(await status('oa-2', 'BYE', 2), 200);
    } finally {
      peer.close();
      first.close();
      second.close();
      third.close();
    }
  });

  it('an offer of audio at an IPv6 address, which an IPv4 RTP socket cannot reach, gets 488: no call answered only to go silent; a re-INVITE moving there gets 488 and the call goes on', async () => {
    const { number, peer, send, dial, status, callId } = await caller();
    const sink = await rtpSink();
    try {
      const ipv6 = (port: number) =>
        audioSdp(port)
          .replace('o=peer 1 1 IN IP4 127.0.0.1', 'o=peer 1 1 IN IP6 ::1')
          .replace('c=IN IP4 127.0.0.1', 'c=IN IP6 ::1');
      const call = {
        callId: 'ipv6-1',
        from: '<sip:+14155550199@127.0.0.1>;tag=c-ipv6-1',
        to: `<sip:${number}@127.0.0.1>`,
        seq: 1,
      };
      send('INVITE', call, [], ipv6(sink.port));
      const refused = (await peer.next(
        'the answer',
        (m) => m.kind === 'response' && m.headers.get('call-id')?.[0] === 'ipv6-1' && m.status >= 200,
      )) as SipResponse;
      assert.equal(refused.status, 488);
      send('ACK', { ...call, to: refused.headers.get('to')![0]! });
      const dialog = await dial('ipv6-2', true, audioSdp(sink.port));
      const id = await callId();
      send('INVITE', { ...dialog, seq: 2 }, [], ipv6(sink.port));
      assert.equal(await status('ipv6-2', 'INVITE', 2), 488);
      send('ACK', { ...dialog, seq: 2 });
      const before = sink.packets();
      await until('RTP still to the IPv4 address', () => sink.packets() > before + 5);
      send('BYE', { ...dialog, seq: 3 });
      assert.equal(await status('ipv6-2', 'BYE', 3), 200);
      await waitForCall(t, id);
    } finally {
      peer.close();
      sink.close();
    }
  });

  it("a re-INVITE with a new Contact moves the dialog's remote target (RFC 3261 section 12.2.2): Openline's BYE goes there", async () => {
    const { peer, dial, callId } = await caller();
    const moved = await udpPeer();
    try {
      const dialog = await dial('target-1');
      const id = await callId();
      // The caller's re-INVITE, sent from and naming its new address.
      moved.send(
        [
          `INVITE sip:openline@127.0.0.1:${ourPort} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${moved.port};branch=z9hG4bK-target-1-2`,
          'Max-Forwards: 70',
          `From: ${dialog.from}`,
          `To: ${dialog.to}`,
          'Call-ID: target-1',
          'CSeq: 2 INVITE',
          `Contact: <sip:caller@127.0.0.1:${moved.port}>`,
          'Content-Type: application/sdp',
          `Content-Length: ${Buffer.byteLength(audioSdp(await freeUdpPort()))}`,
          '',
          audioSdp(await freeUdpPort()),
        ].join('\r\n'),
        ourPort,
      );
      const ok = (await moved.next(
        'the re-INVITE answer',
        (m) => m.kind === 'response' && m.status >= 200,
      )) as SipResponse;
      assert.equal(ok.status, 200);
      moved.send(
        [
          `ACK sip:openline@127.0.0.1:${ourPort} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${moved.port};branch=z9hG4bK-target-1-ack`,
          'Max-Forwards: 70',
          `From: ${dialog.from}`,
          `To: ${dialog.to}`,
          'Call-ID: target-1',
          'CSeq: 2 ACK',
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n'),
        ourPort,
      );
      assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
      const bye = (await moved.next('the BYE at the new Contact', isRequest('BYE'))) as SipRequest;
      assert.equal(bye.uri, `sip:caller@127.0.0.1:${moved.port}`);
      moved.respond(bye, '200 OK');
      await waitForCall(t, id);
      assert.ok(!peer.inbox.some(isRequest('BYE')), 'nothing to the old Contact');
    } finally {
      peer.close();
      moved.close();
    }
  });

  it('UPDATE with an SDP offer (RFC 3311) is answered with SDP in its 200 and the audio follows it; one Openline cannot take gets 488', async () => {
    const { peer, send, dial, status } = await caller();
    const first = await rtpSink();
    const second = await rtpSink();
    try {
      const dialog = await dial('update-1', true, audioSdp(first.port));
      await until("the agent's RTP", () => first.packets() > 5);
      send('UPDATE', { ...dialog, seq: 2 }, [], audioSdp(second.port));
      const ok = (await peer.next(
        'the answer to UPDATE',
        (m) => m.kind === 'response' && m.headers.get('cseq')?.[0] === '2 UPDATE',
      )) as SipResponse;
      assert.equal(ok.status, 200);
      assert.match(ok.body, /^m=audio [1-9]\d* RTP\/AVP 0 101/m);
      assert.equal(ok.headers.get('content-type')?.[0], 'application/sdp');
      await until('RTP to the address of the UPDATE', () => second.packets() > 5);
      send('UPDATE', { ...dialog, seq: 3 }, [], audioSdp(second.port).replace('RTP/AVP 0 101', 'RTP/AVP 18'));
      assert.equal(await status('update-1', 'UPDATE', 3), 488);
      send('BYE', { ...dialog, seq: 4 });
      assert.equal(await status('update-1', 'BYE', 4), 200);
    } finally {
      peer.close();
      first.close();
      second.close();
    }
  });

  it('out of dialog: responses carry a To tag, an INVITE refused over UDP is answered again until its ACK, Require of an unknown extension gets 420, transactions are told apart by sent-by and (RFC 2543) Call-ID, malformed requests get 400', async () => {
    const peer = await udpPeer();
    /** A request from the peer: `via` is its top Via's sent-by and branch part. */
    const raw = (
      method: string,
      callId: string,
      options: { via?: string; extra?: string[]; body?: string; to?: string } = {},
    ) =>
      [
        `${method} sip:+19995550123@127.0.0.1:${ourPort} SIP/2.0`,
        `Via: SIP/2.0/UDP ${options.via ?? `127.0.0.1:${peer.port};branch=z9hG4bK-${callId}`}`,
        'Max-Forwards: 70',
        'From: <sip:+14155550199@127.0.0.1>;tag=f1',
        `To: ${options.to ?? '<sip:+19995550123@127.0.0.1>'}`,
        `Call-ID: ${callId}`,
        `CSeq: 1 ${method}`,
        ...(options.extra ?? []),
        `Content-Length: ${Buffer.byteLength(options.body ?? '')}`,
        '',
        options.body ?? '',
      ].join('\r\n');
    const answers = (callId: string) =>
      peer.inbox.filter((m): m is SipResponse => m.kind === 'response' && m.headers.get('call-id')?.[0] === callId);
    const answer = async (callId: string) =>
      (await peer.next(
        `the answer for ${callId}`,
        (m) => m.kind === 'response' && m.status >= 200 && m.headers.get('call-id')?.[0] === callId,
      )) as SipResponse;
    try {
      // A number nobody holds: 404 with a To tag, sent again and again until the ACK.
      peer.send(raw('INVITE', 'refused-1'), ourPort);
      const refused = await answer('refused-1');
      assert.equal(refused.status, 404);
      const tag = /;tag=([^;]+)/.exec(refused.headers.get('to')![0]!)?.[1];
      assert.ok(tag, 'a To tag');
      await until('the 404 again', () => answers('refused-1').filter((m) => m.status === 404).length >= 3);
      peer.send(
        raw('ACK', 'refused-1', { to: `<sip:+19995550123@127.0.0.1>;tag=${tag}` }).replace(
          'CSeq: 1 ACK',
          'CSeq: 1 ACK',
        ),
        ourPort,
      );
      await new Promise((resolve) => setTimeout(resolve, 10 * T1_MS));
      const afterAck = answers('refused-1').length;
      await new Promise((resolve) => setTimeout(resolve, 20 * T1_MS));
      assert.equal(answers('refused-1').length, afterAck, 'not sent again after the ACK');

      peer.send(raw('OPTIONS', 'options-1'), ourPort);
      const options = await answer('options-1');
      assert.equal(options.status, 200);
      assert.match(options.headers.get('to')![0]!, /;tag=/);

      peer.send(
        raw('INVITE', 'require-1', { extra: ['Require: 100rel, x-nonexistent-ext'], body: audioSdp(40010) }),
        ourPort,
      );
      const bad = await answer('require-1');
      assert.equal(bad.status, 420);
      assert.equal(
        bad.headers.get('unsupported')?.[0],
        'x-nonexistent-ext',
        'only what Openline lacks (it has 100rel)',
      );

      // The same branch from two senders: two transactions, each answered for itself.
      peer.send(raw('OPTIONS', 'same-branch-1', { via: '127.0.0.1:5555;branch=z9hG4bK-shared;rport' }), ourPort);
      assert.equal((await answer('same-branch-1')).status, 200);
      peer.send(raw('OPTIONS', 'same-branch-2', { via: '127.0.0.2:5555;branch=z9hG4bK-shared;rport' }), ourPort);
      assert.equal((await answer('same-branch-2')).status, 200);
      // RFC 2543 requests (no magic cookie): told apart by their Call-ID.
      peer.send(raw('INVITE', 'old-1', { via: `127.0.0.1:${peer.port}`, body: audioSdp(40012) }), ourPort);
      assert.equal((await answer('old-1')).status, 404);
      peer.send(raw('INVITE', 'old-2', { via: `127.0.0.1:${peer.port}`, body: audioSdp(40014) }), ourPort);
      assert.equal((await answer('old-2')).status, 404);

      // Malformed but answerable: 400.
      peer.send(raw('OPTIONS', 'malformed-1', { extra: ['This line has no colon'] }), ourPort);
      assert.equal((await answer('malformed-1')).status, 400);
      peer.send(raw('OPTIONS', 'malformed-2').replace('Content-Length: 0', 'Content-Length: 500'), ourPort);
      assert.equal((await answer('malformed-2')).status, 400);
      // A CSeq without a number, with one that is not a number, or naming another method: 400, with a To tag.
      for (const [callId, cseq] of [
        ['bad-cseq-1', 'abc OPTIONS'],
        ['bad-cseq-2', 'OPTIONS'],
        ['bad-cseq-3', '1 INVITE'],
        ['bad-cseq-4', '99999999999 OPTIONS'],
      ] as const) {
        peer.send(raw('OPTIONS', callId).replace('CSeq: 1 OPTIONS', `CSeq: ${cseq}`), ourPort);
        const response = await answer(callId);
        assert.equal(response.status, 400, cseq);
        assert.match(response.headers.get('to')![0]!, /;tag=/);
      }
      peer.send(
        raw('INVITE', 'bad-cseq-5', { body: audioSdp(40016) }).replace('CSeq: 1 INVITE', 'CSeq: abc INVITE'),
        ourPort,
      );
      assert.equal((await answer('bad-cseq-5')).status, 400);
    } finally {
      peer.close();
    }
  });

  // Last: the server drains (SIGTERM) and takes no more calls.
  it('a shutdown with a call ringing at a trunk that never answers its CANCEL is over within 64 T1 of the CANCEL', async () => {
    const id = await call('+14155551503');
    const invite = (await trunk.next('the INVITE', inviteTo('+14155551503'))) as SipRequest;
    trunk.respond(invite, '180 Ringing');
    await until(
      'the call to ring',
      async () => (await t.request('GET', `/v1/calls/${id}`)).body.queue_status === 'allocated',
    );
    // 64 T1 is 1.28 s here: ten seconds is a shutdown that waits on the call for good.
    const { cut } = await Promise.race([
      t.services.drain(0),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('the shutdown still waits')), 10_000).unref(),
      ),
    ]);
    assert.equal(cut, 1);
    await trunk.next(
      'the CANCEL',
      (m) => isRequest('CANCEL')(m) && m.headers.get('call-id')?.[0] === invite.headers.get('call-id')?.[0],
    );
    assert.equal((await t.request('GET', `/v1/calls/${id}`)).body.completed, true);
  });
});

/**
 * The RTP timeout (shortened here to 1.5 s) ends a call whose far end vanished, but not one the
 * far end holds: a holder may send nothing (RFC 3264 section 8.4), whatever its SDP says.
 */
describe('SIP hold and the RTP timeout', () => {
  let app: SipTestApp | undefined;

  before(async () => {
    app = await startSipApp('sip-hold', { OPENLINE_RTP_PORTS: '37000-37099' }, T1_MS, 1500);
  });
  after(() => app?.close());

  it('a caller holding the call (a=sendonly) and sending no RTP keeps it; taken back and silent, the call ends with BYE', async () => {
    const { t, ourPort } = app!;
    const { peer, send, dial, status, callId } = await udpCaller(t, ourPort);
    try {
      const dialog = await dial('hold-silent');
      const id = await callId();
      send('INVITE', { ...dialog, seq: 2 }, [], audioSdp(await freeUdpPort(), ['a=sendonly']));
      assert.equal(await status('hold-silent', 'INVITE', 2), 200);
      send('ACK', { ...dialog, seq: 2 });
      // Held for twice the RTP timeout, without a packet.
      await new Promise((resolve) => setTimeout(resolve, 3500));
      assert.ok(!peer.inbox.some(isRequest('BYE')), 'no BYE while the call is held');
      assert.notEqual((await t.request('GET', `/v1/calls/${id}`)).body.completed, true, 'the call goes on');
      // Taken back, and still silent: the far end is gone.
      send('INVITE', { ...dialog, seq: 3 }, [], audioSdp(await freeUdpPort()));
      assert.equal(await status('hold-silent', 'INVITE', 3), 200);
      send('ACK', { ...dialog, seq: 3 });
      const bye = (await peer.next('the BYE', isRequest('BYE'))) as SipRequest;
      peer.respond(bye, '200 OK');
      await waitForCall(t, id);
    } finally {
      peer.close();
    }
  });
});
