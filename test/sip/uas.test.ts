import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import type { SipMessage, SipResponse } from '../../src/carriers/sip/message.js';
import { HAS_SIPP, sippCaller, trace, until } from './sipp-run.js';
import { startSipApp, type SipTestApp } from './app.js';
import { audioSdp, streamPeer, udpCaller } from './udp-peer.js';

type Json = Record<string, unknown>;

/** T1 for these tests: 64 T1 (the wait for a PRACK, for an ACK) is 1.28 s rather than 32. */
const T1_MS = 20;

/**
 * Openline answering calls (the UAS side) as real trunks call: reliable provisional responses
 * (RFC 3262), and what carriers send around them, from a peer speaking raw SIP.
 */
describe('SIP calls in: what trunks send', () => {
  let app: SipTestApp | undefined;
  let t: TestApp;
  let dir: string;
  let ourPort: number;

  before(async () => {
    app = await startSipApp('sip-uas', { OPENLINE_RTP_PORTS: '34400-34599' }, T1_MS);
    ({ t, dir, ourPort } = app);
  });
  after(() => app?.close());

  const caller = () => udpCaller(t, ourPort);
  const response = (callId: string, cseq: string, status?: number) => (m: SipMessage) =>
    m.kind === 'response' &&
    (status === undefined ? m.status > 100 : m.status === status) &&
    m.headers.get('call-id')?.[0] === callId &&
    m.headers.get('cseq')?.[0] === cseq;
  const count = (inbox: SipMessage[], match: (m: SipMessage) => boolean) => inbox.filter(match).length;
  const calls = async (number: string) =>
    (await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`)).body.calls as Json[];

  it('Require: 100rel: 180 Ringing goes reliably (RSeq), again until its PRACK; the PRACK gets 200, then the INVITE its 200 OK', async () => {
    const { number, peer, send, status, callId } = await caller();
    try {
      const call = {
        callId: 'rel-1',
        from: '<sip:+14155550199@127.0.0.1>;tag=c-rel-1',
        to: `<sip:${number}@127.0.0.1>`,
        seq: 1,
      };
      send('INVITE', call, ['Require: 100rel', 'Supported: timer'], audioSdp(await freeUdpPort()));
      const ringing = (await peer.next('the 180', response('rel-1', '1 INVITE', 180))) as SipResponse;
      assert.match(ringing.headers.get('require')?.[0] ?? '', /100rel/);
      const rseq = Number(ringing.headers.get('rseq')?.[0]);
      assert.ok(Number.isInteger(rseq) && rseq >= 1 && rseq < 2 ** 31, 'an RSeq');
      assert.equal(ringing.body, '', 'no SDP: the answer comes in the 200');
      const to = ringing.headers.get('to')![0]!;
      assert.match(to, /;tag=/);
      // Unacknowledged, it is sent again (same RSeq), and the 200 waits for its PRACK.
      await peer.next('the 180 again', response('rel-1', '1 INVITE', 180));
      await peer.next('the 180 a third time', response('rel-1', '1 INVITE', 180));
      assert.equal(count(peer.inbox, response('rel-1', '1 INVITE', 200)), 0, 'no 200 before the PRACK');
      for (const again of peer.inbox.filter(response('rel-1', '1 INVITE', 180)))
        assert.equal(Number(again.headers.get('rseq')?.[0]), rseq);
      const dialog = { ...call, to };
      // A PRACK for another provisional response: 481.
      send('PRACK', { ...dialog, seq: 2 }, [`RAck: ${rseq + 1} 1 INVITE`]);
      assert.equal(await status('rel-1', 'PRACK', 2), 481);
      send('PRACK', { ...dialog, seq: 3 }, [`RAck: ${rseq} 1 INVITE`]);
      assert.equal(await status('rel-1', 'PRACK', 3), 200);
      const ok = (await peer.next('the 200', response('rel-1', '1 INVITE', 200))) as SipResponse;
      assert.equal(ok.headers.get('to')![0], to, 'the To tag of the 180');
      assert.match(ok.body, /m=audio \d+ RTP\/AVP 0/);
      send('ACK', dialog);
      const id = await callId();
      send('BYE', { ...dialog, seq: 4 });
      assert.equal(await status('rel-1', 'BYE', 4), 200);
      const record = await waitForCall(t, id);
      assert.equal(record.call_ended_by, 'USER');
    } finally {
      peer.close();
    }
  });

  it(
    'sipp requiring 100rel (PCMA and telephone-event only): the reliable 180 is PRACKed, the call connected, the agent speaks',
    { skip: !HAS_SIPP && 'sipp is not installed' },
    async () => {
      const { number, peer } = await caller();
      peer.close();
      const run = await sippCaller(
        'prack-uac.xml',
        number,
        ourPort,
        ['-rtp_echo', '-mp', String(await freeUdpPort())],
        dir,
        'prack-uac',
      );
      assert.equal(await run.exit, 0, trace(run));
      const list = await calls(number);
      assert.equal(list.length, 1);
      const record = await waitForCall(t, String(list[0]!.call_id));
      assert.equal(record.call_ended_by, 'USER');
      assert.ok(
        (record.transcripts as Json[]).some((x) => x.user === 'assistant'),
        'the agent spoke',
      );
    },
  );

  it('Require: 100rel over TCP, the INVITE written a few bytes at a time: the 180 is not resent on the stream, the PRACK and the rest of the call go on the connection', async () => {
    const { number, peer } = await caller();
    peer.close();
    const socket = net.connect({ host: '127.0.0.1', port: ourPort });
    await once(socket, 'connect');
    const tcp = streamPeer(socket);
    const request = (method: string, seq: number, to: string, extra: string[] = [], body = '') =>
      [
        `${method} sip:${number}@127.0.0.1:${ourPort};transport=tcp SIP/2.0`,
        `Via: SIP/2.0/TCP 127.0.0.1:${socket.localPort};branch=z9hG4bK-tcp-rel-${seq}`,
        'Max-Forwards: 70',
        'From: <sip:+14155550199@127.0.0.1>;tag=c-tcp-rel',
        `To: ${to}`,
        'Call-ID: tcp-rel-1',
        `CSeq: ${seq} ${method === 'ACK' ? 'INVITE' : method}`,
        `Contact: <sip:caller@127.0.0.1:${socket.localPort};transport=tcp>`,
        ...extra,
        ...(body ? ['Content-Type: application/sdp'] : []),
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n');
    try {
      const invite = request(
        'INVITE',
        1,
        `<sip:${number}@127.0.0.1>`,
        ['Require: 100rel'],
        audioSdp(await freeUdpPort()),
      );
      for (let i = 0; i < invite.length; i += 7) {
        tcp.write(invite.slice(i, i + 7));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const ringing = await tcp.next('the 180', response('tcp-rel-1', '1 INVITE', 180));
      const rseq = ringing.headers.get('rseq')?.[0];
      await new Promise((resolve) => setTimeout(resolve, 10 * T1_MS));
      assert.equal(count(tcp.inbox, response('tcp-rel-1', '1 INVITE', 180)), 0, 'sent once on the stream');
      const to = ringing.headers.get('to')![0]!;
      tcp.write(request('PRACK', 2, to, [`RAck: ${rseq} 1 INVITE`]));
      assert.equal(((await tcp.next('the 200 to PRACK', response('tcp-rel-1', '2 PRACK'))) as SipResponse).status, 200);
      await tcp.next('the 200 OK', response('tcp-rel-1', '1 INVITE', 200));
      tcp.write(request('ACK', 1, to));
      tcp.write(request('BYE', 3, to));
      assert.equal(((await tcp.next('the 200 to BYE', response('tcp-rel-1', '3 BYE'))) as SipResponse).status, 200);
      const list = await calls(number);
      assert.equal((await waitForCall(t, String(list[0]!.call_id))).call_ended_by, 'USER');
    } finally {
      socket.destroy();
    }
  });

  it('the number called is read from a request URI with user parameters (number portability: ;npdi;rn=) and from a tel: URI in To', async () => {
    const { number, peer } = await caller();
    const invite = (callId: string, uri: string, to: string, body: string) =>
      [
        `INVITE ${uri} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK-${callId}`,
        'Max-Forwards: 70',
        `From: <sip:+14155550199@127.0.0.1>;tag=c-${callId}`,
        `To: ${to}`,
        `Call-ID: ${callId}`,
        'CSeq: 1 INVITE',
        `Contact: <sip:caller@127.0.0.1:${peer.port}>`,
        'Content-Type: application/sdp',
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n');
    try {
      peer.send(
        invite(
          'npdi-1',
          `sip:${number};npdi;rn=+16285550000@127.0.0.1:${ourPort};user=phone`,
          '<sip:openline@127.0.0.1>',
          audioSdp(await freeUdpPort()),
        ),
        ourPort,
      );
      peer.send(
        invite(
          'tel-1',
          `sip:openline@127.0.0.1:${ourPort}`,
          `<tel:${number};phone-context=+1>`,
          audioSdp(await freeUdpPort()),
        ),
        ourPort,
      );
      for (const id of ['npdi-1', 'tel-1']) {
        const answered = (await peer.next(`the answer to ${id}`, response(id, '1 INVITE'))) as SipResponse;
        assert.equal(answered.status, 200, id);
        const dialog = (method: string, seq: number) =>
          invite(id, `sip:caller@127.0.0.1:${peer.port}`, answered.headers.get('to')![0]!, '')
            .replace(/^INVITE/, method)
            .replace('CSeq: 1 INVITE', `CSeq: ${seq} ${method === 'ACK' ? 'INVITE' : method}`)
            .replace(`branch=z9hG4bK-${id}`, `branch=z9hG4bK-${id}-${method}`)
            .replace('Content-Type: application/sdp\r\n', '');
        peer.send(dialog('ACK', 1), ourPort);
        peer.send(dialog('BYE', 2), ourPort);
        await peer.next(`the answer to BYE of ${id}`, response(id, '2 BYE', 200));
      }
      assert.equal((await calls(number)).length, 2);
    } finally {
      peer.close();
    }
  });

  it('an INVITE whose body is multipart (SDP beside ISUP, as SIP-I and SIP-T trunks send) is answered from its SDP part', async () => {
    const { number, peer, send, status } = await caller();
    try {
      const call = {
        callId: 'multipart-1',
        from: '<sip:+14155550199@127.0.0.1>;tag=c-multipart-1',
        to: `<sip:${number}@127.0.0.1>`,
        seq: 1,
      };
      const body = [
        '--unique-boundary-1',
        'Content-Type: application/sdp',
        '',
        audioSdp(await freeUdpPort())
          .replace('RTP/AVP 0 101', 'RTP/AVP 8 101')
          .replace('0 PCMU', '8 PCMA'),
        '--unique-boundary-1',
        'Content-Type: application/isup;version=itu-t92+;base=itu-t92+',
        'Content-Disposition: signal;handling=optional',
        '',
        '\x01\x10\x48\x00\x0a\x03\x02\x0a\x08\x03\x10\x41\x52\x55\x05\x00',
        '--unique-boundary-1--',
        '',
      ].join('\r\n');
      send('INVITE', call, ['MIME-Version: 1.0', 'Content-Type: multipart/mixed;boundary=unique-boundary-1'], body);
      const ok = (await peer.next('the answer', response('multipart-1', '1 INVITE'))) as SipResponse;
      assert.equal(ok.status, 200);
      assert.match(ok.body, /m=audio \d+ RTP\/AVP 8 101/, 'PCMA, from the SDP part');
      const dialog = { ...call, to: ok.headers.get('to')![0]! };
      send('ACK', dialog);
      send('BYE', { ...dialog, seq: 2 });
      assert.equal(await status('multipart-1', 'BYE', 2), 200);
    } finally {
      peer.close();
    }
  });

  it('OPTIONS, out of a call and in one (keep-alives of trunks): 200 with Allow (PRACK too, not REFER, which gets 405) and Supported (timer, 100rel)', async () => {
    const { number, peer, send, dial, status } = await caller();
    try {
      send('OPTIONS', {
        callId: 'options-out',
        from: '<sip:probe@127.0.0.1>;tag=o1',
        to: `<sip:${number}@127.0.0.1>`,
        seq: 1,
      });
      const dialog = await dial('options-in');
      send('OPTIONS', { ...dialog, seq: 2 });
      for (const [id, seq] of [
        ['options-out', 1],
        ['options-in', 2],
      ] as const) {
        const ok = (await peer.next(`the answer to ${id}`, response(id, `${seq} OPTIONS`))) as SipResponse;
        assert.equal(ok.status, 200);
        assert.match(ok.headers.get('allow')?.[0] ?? '', /PRACK/);
        // Openline sends REFER (transfers) but takes none: Allow lists what it takes.
        assert.doesNotMatch(ok.headers.get('allow')?.[0] ?? '', /REFER/);
        assert.match(ok.headers.get('supported')?.[0] ?? '', /timer, 100rel/);
      }
      send('REFER', { ...dialog, seq: 3 }, ['Refer-To: <sip:+14155550110@127.0.0.1>']);
      const refused = (await peer.next('the answer to REFER', response('options-in', '3 REFER'))) as SipResponse;
      assert.equal(refused.status, 405);
      assert.doesNotMatch(refused.headers.get('allow')?.[0] ?? '', /REFER/);
      send('BYE', { ...dialog, seq: 4 });
      assert.equal(await status('options-in', 'BYE', 4), 200);
    } finally {
      peer.close();
    }
  });

  it('keys by SIP INFO: application/dtmf-relay (Signal=5) and application/dtmf (a bare 7) both reach the call', async () => {
    const { peer, send, dial, status, callId } = await caller();
    try {
      const dialog = await dial('info-1');
      const id = await callId();
      send('INFO', { ...dialog, seq: 2 }, ['Content-Type: application/dtmf-relay'], 'Signal=5\r\nDuration=160\r\n');
      assert.equal(await status('info-1', 'INFO', 2), 200);
      send('INFO', { ...dialog, seq: 3 }, ['Content-Type: application/dtmf'], '7');
      assert.equal(await status('info-1', 'INFO', 3), 200);
      const pressed = async () =>
        ((await t.request('GET', `/v1/calls/${id}`)).body.transcripts as Json[]).map((x) => String(x.text));
      await until('both keys on the record', async () => {
        const said = await pressed();
        return said.some((x) => x.includes('pressed 5')) && said.some((x) => x.includes('pressed 7'));
      });
      send('BYE', { ...dialog, seq: 4 });
      assert.equal(await status('info-1', 'BYE', 4), 200);
      await waitForCall(t, id);
    } finally {
      peer.close();
    }
  });

  it('keys by SIP INFO as event numbers (Signal=11 for #, Signal=10 for *, RFC 4733 codes): the call gets # and *, not 1', async () => {
    const { peer, send, dial, status, callId } = await caller();
    try {
      const dialog = await dial('info-2');
      const id = await callId();
      send('INFO', { ...dialog, seq: 2 }, ['Content-Type: application/dtmf-relay'], 'Signal=11\r\nDuration=160\r\n');
      assert.equal(await status('info-2', 'INFO', 2), 200);
      send('INFO', { ...dialog, seq: 3 }, ['Content-Type: application/dtmf'], '10');
      assert.equal(await status('info-2', 'INFO', 3), 200);
      const pressed = async () =>
        ((await t.request('GET', `/v1/calls/${id}`)).body.transcripts as Json[]).map((x) => String(x.text));
      await until('both keys on the record', async () => {
        const said = await pressed();
        return said.some((x) => x.includes('pressed #')) && said.some((x) => x.includes('pressed *'));
      });
      assert.ok(!(await pressed()).some((x) => x.includes('pressed 1')), 'no 1 was pressed');
      send('BYE', { ...dialog, seq: 4 });
      assert.equal(await status('info-2', 'BYE', 4), 200);
      await waitForCall(t, id);
    } finally {
      peer.close();
    }
  });

  it('Require: 100rel with no PRACK within 64 T1: the INVITE gets 500, the 180 is no longer sent, no call is connected', async () => {
    const { number, peer, send } = await caller();
    try {
      const call = {
        callId: 'rel-2',
        from: '<sip:+14155550199@127.0.0.1>;tag=c-rel-2',
        to: `<sip:${number}@127.0.0.1>`,
        seq: 1,
      };
      send('INVITE', call, ['Require: 100rel'], audioSdp(await freeUdpPort()));
      const refused = (await peer.next('the final response', response('rel-2', '1 INVITE'), 20_000)) as SipResponse;
      while (refused.status === 180)
        Object.assign(refused, await peer.next('the final response', response('rel-2', '1 INVITE')));
      assert.equal(refused.status, 500);
      send('ACK', { ...call, to: refused.headers.get('to')![0]! });
      const list = await calls(number);
      assert.equal(list.length, 1);
      const record = await waitForCall(t, String(list[0]!.call_id));
      assert.equal(record.call_length, 0, 'never connected');
    } finally {
      peer.close();
    }
  });

  it('Require: 100rel, the caller gives up before its PRACK: CANCEL gets 200 and the INVITE 487; a BYE in the early dialog gets 200 and the INVITE 487; an UPDATE with an offer meanwhile gets 500', async () => {
    const { number, peer, send, status } = await caller();
    try {
      for (const how of ['CANCEL', 'BYE'] as const) {
        const id = `rel-3-${how}`;
        const call = {
          callId: id,
          from: `<sip:+14155550199@127.0.0.1>;tag=c-${id}`,
          to: `<sip:${number}@127.0.0.1>`,
          seq: 1,
        };
        const branch = `z9hG4bK-${id}`;
        send('INVITE', call, ['Require: 100rel'], audioSdp(await freeUdpPort()), branch);
        const ringing = await peer.next('the 180', response(id, '1 INVITE', 180));
        // A new offer before Openline answered the INVITE's: 500 with Retry-After (RFC 3311 section 5.2).
        send('UPDATE', { ...call, to: ringing.headers.get('to')![0]!, seq: 2 }, [], audioSdp(await freeUdpPort()));
        const early = (await peer.next('the answer to UPDATE', response(id, '2 UPDATE'))) as SipResponse;
        assert.equal(early.status, 500);
        assert.ok(early.headers.get('retry-after'));
        if (how === 'CANCEL') {
          send('CANCEL', call, [], '', branch);
          assert.equal(await status(id, 'CANCEL'), 200);
        } else {
          send('BYE', { ...call, to: ringing.headers.get('to')![0]!, seq: 3 });
          assert.equal(await status(id, 'BYE', 3), 200);
        }
        const final = (await peer.next('the final response', response(id, '1 INVITE', 487))) as SipResponse;
        send('ACK', { ...call, to: final.headers.get('to')![0]! }, [], '', branch);
      }
      const list = await calls(number);
      assert.equal(list.length, 2);
      for (const call of list) assert.equal((await waitForCall(t, String(call.call_id))).call_length, 0);
    } finally {
      peer.close();
    }
  });

  it('Supported: 100rel only (or a call with no offer): no provisional response but 100, the 200 OK at once', async () => {
    const { number, peer, send } = await caller();
    try {
      const call = {
        callId: 'rel-4',
        from: '<sip:+14155550199@127.0.0.1>;tag=c-rel-4',
        to: `<sip:${number}@127.0.0.1>`,
        seq: 1,
      };
      send('INVITE', call, ['Supported: 100rel, timer'], audioSdp(await freeUdpPort()));
      const ok = (await peer.next('the 200', response('rel-4', '1 INVITE'))) as SipResponse;
      assert.equal(ok.status, 200);
      assert.match(ok.headers.get('supported')?.[0] ?? '', /100rel/);
      send('ACK', { ...call, to: ok.headers.get('to')![0]! });
      send('BYE', { ...call, to: ok.headers.get('to')![0]!, seq: 2 });
      // No offer, 100rel required: the offer goes in the 200 (its answer in the ACK), no 18x.
      const delayed = { ...call, callId: 'rel-5', from: '<sip:+14155550199@127.0.0.1>;tag=c-rel-5' };
      send('INVITE', delayed, ['Require: 100rel']);
      const offered = (await peer.next('the 200', response('rel-5', '1 INVITE'))) as SipResponse;
      assert.equal(offered.status, 200);
      assert.match(offered.body, /m=audio/);
      const answer = { ...delayed, to: offered.headers.get('to')![0]! };
      send('ACK', answer, [], audioSdp(await freeUdpPort()));
      send('BYE', { ...answer, seq: 2 });
      const provisional = (m: SipMessage) => m.kind === 'response' && m.status > 100 && m.status < 200;
      assert.equal(count(peer.inbox, provisional), 0, 'no 18x');
    } finally {
      peer.close();
    }
  });
});
