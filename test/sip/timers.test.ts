import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import path from 'node:path';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { RtpSession, writeRtp } from '../../src/carriers/sip/rtp.js';
import type { MediaEvent } from '../../src/media/transport.js';
import { HAS_SIPP, SCENARIOS, sipp, trace, until } from './sipp-run.js';
import { startSipApp, type SipTestApp } from './app.js';

/**
 * Session timers (RFC 4028) and early media against sipp as the trunk: Openline refreshes a
 * session it is the refresher of (UPDATE, or re-INVITE when UPDATE is not allowed), ends one
 * nobody refreshed, refuses too brief an interval; a 183 with SDP sets up the media before the
 * answer.
 */
describe('SIP session timers and early media', { skip: !HAS_SIPP && 'sipp is not installed' }, () => {
  let app: SipTestApp | undefined;
  let t: TestApp;
  let dir: string;
  let trunkPort: number;
  let ourPort: number;

  before(async () => {
    trunkPort = await freeUdpPort();
    app = await startSipApp('sip-timers', {
      OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${trunkPort}`,
      OPENLINE_RTP_PORTS: '38000-38999',
    });
    ({ t, dir, ourPort } = app);
  });
  after(() => app?.close());

  const uas = (scenario: string, mediaPort: number) =>
    sipp(
      ['-sf', path.join(SCENARIOS, scenario), '-i', '127.0.0.1', '-p', String(trunkPort), '-mp', String(mediaPort)],
      dir,
      scenario,
    );

  async function call(to: string): Promise<string> {
    const r = await t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Confirm the appointment tomorrow.',
      max_duration: 2,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return String(r.body.call_id);
  }

  it('as the refresher: UPDATE before the interval ends; a session the far end then fails to refresh ends with BYE', async () => {
    const peer = uas('timer-update.xml', 39000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Nobody stops this call: it ends because the session expired.
    const record = await waitForCall(t, await call('+14155551401'));
    assert.equal(await peer.exit, 0, trace(peer));
    const log = trace(peer);
    assert.match(log, /INVITE sip:[\s\S]*Supported: timer[\s\S]*Session-Expires: 1800/);
    assert.match(log, /UPDATE sip:[\s\S]*Session-Expires: 2;refresher=uac[\s\S]*BYE sip:/);
    assert.equal(record.completed, true);
  });

  it('as the refresher with a far end that does not take UPDATE: a re-INVITE with our SDP, acknowledged', async () => {
    const peer = uas('timer-reinvite.xml', 39010);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const id = await call('+14155551402');
    // The refresh is answered and acknowledged: a second ACK.
    await until('the refresh', () => (trace(peer).match(/^ACK sip:/gm) ?? []).length >= 2);
    await t.request('POST', `/v1/calls/${id}/stop`);
    const record = await waitForCall(t, id);
    assert.equal(await peer.exit, 0, trace(peer));
    assert.equal(record.status, 'completed');
    const invites = trace(peer).match(/^INVITE sip:/gm) ?? [];
    assert.ok(invites.length >= 2, 'the first INVITE and its refresh');
  });

  it('early media: a 183 with SDP, an announcement before the answer, a 200 without SDP: the call runs on the 183 media', async () => {
    const peer = uas('early-media.xml', 39020);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const id = await call('+14155551403');
    // Connected on the 183's media (without it, a 200 with no SDP fails the call). The recording
    // sipp plays goes on after the answer, so the agent may still be waiting for it to end.
    await until(
      'the call to connect',
      async () => (await t.request('GET', `/v1/calls/${id}`)).body.queue_status === 'started',
    );
    await t.request('POST', `/v1/calls/${id}/stop`);
    const record = await waitForCall(t, id);
    assert.equal(await peer.exit, 0, trace(peer));
    assert.equal(record.status, 'completed');
    assert.equal(record.error_message, null);
  });

  it('an inbound INVITE asking for too brief a session gets 422 with our Min-SE', async () => {
    const socket = dgram.createSocket('udp4');
    const replies: string[] = [];
    socket.on('message', (data) => replies.push(data.toString()));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: '628', prompt: 'Greet the caller.' });
    const number = String(bought.body.phone_number);
    const body = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 39030 RTP/AVP 0\r\n';
    socket.send(
      Buffer.from(
        [
          `INVITE sip:${number}@127.0.0.1:${ourPort} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${socket.address().port};branch=z9hG4bKbrief1`,
          'From: <sip:+14155550100@127.0.0.1>;tag=b1',
          `To: <sip:${number}@127.0.0.1:${ourPort}>`,
          'Call-ID: brief-1@openline.test',
          'CSeq: 1 INVITE',
          'Supported: timer',
          'Session-Expires: 30',
          'Content-Type: application/sdp',
          `Content-Length: ${body.length}`,
          '',
          body,
        ].join('\r\n'),
      ),
      ourPort,
      '127.0.0.1',
    );
    await until('a final answer', () => replies.some((r) => /^SIP\/2\.0 [2-6]\d\d/.test(r)), 5000);
    socket.close();
    const final = replies.find((r) => /^SIP\/2\.0 [2-6]\d\d/.test(r))!;
    assert.match(final, /^SIP\/2\.0 422 /);
    assert.match(final, /Min-SE: 90/);
  });
});

describe('RTP early media', () => {
  it('packets before the answer are taken but heard by nobody; after the answer they are audio', async () => {
    const range = { min: 39100, max: 39199 };
    const ours = await RtpSession.open('127.0.0.1', range);
    const far = await RtpSession.open('127.0.0.1', range);
    try {
      const events: MediaEvent[] = [];
      ours.on((event) => events.push(event));
      const socket = dgram.createSocket('udp4');
      await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
      const send = (sequence: number) =>
        socket.send(
          writeRtp({
            payloadType: 0,
            marker: false,
            sequence,
            timestamp: sequence * 160,
            ssrc: 7,
            payload: Buffer.alloc(160, 0x55),
          }),
          ours.port,
          '127.0.0.1',
        );
      ours.connect({ address: '127.0.0.1', port: far.port }, { name: 'PCMU', payloadType: 0 }, { early: true });
      for (let i = 0; i < 5; i++) send(i);
      await until('the early packets', () => ours.stats.received >= 5, 5000);
      assert.equal(events.filter((e) => e.type === 'media').length, 0, 'ringback is no one speaking');
      ours.connect({ address: '127.0.0.1', port: far.port }, { name: 'PCMU', payloadType: 0 });
      for (let i = 5; i < 10; i++) send(i);
      await until('audio after the answer', () => events.some((e) => e.type === 'media'), 5000);
      socket.close();
    } finally {
      ours.close();
      far.close();
    }
  });
});
