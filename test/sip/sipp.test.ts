import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { parseWav } from '../../src/media/wav.js';
import { alawToMulaw, dbfs, mulawToAlaw } from '../../src/media/audio.js';
import { parseRtp, writeRtp, type RtpPacket } from '../../src/carriers/sip/rtp.js';
import { TRANSFER_FAILED_LINE } from '../../src/agent/offline.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { HAS_SIPP, SCENARIOS, sipp, sippCaller, trace, until } from './sipp-run.js';
import { startSipApp, type SipTestApp } from './app.js';

type Json = Record<string, unknown>;

/**
 * SIP against a real peer: sipp (Debian's sip-tester) plays the trunk or the caller. Outbound
 * calls go through OPENLINE_SIP_TRUNK to sipp as UAS (answer with RTP echoed, busy, digest
 * challenge, ringing until CANCEL, hang-up from the far end); inbound calls come from sipp as UAC
 * to a number of the account.
 */
describe(
  'SIP with sipp as the trunk and as the caller',
  { skip: !HAS_SIPP && 'sipp is not installed (apt-get install sip-tester)' },
  () => {
    let app: SipTestApp | undefined;
    let t: TestApp;
    let dir: string;
    let trunkPort: number;
    let ourPort: number;

    before(async () => {
      trunkPort = await freeUdpPort();
      app = await startSipApp('sip', {
        OPENLINE_SIP_TRUNK: `sip:alice:s3cret@127.0.0.1:${trunkPort}`,
        OPENLINE_RTP_PORTS: '30000-30999',
      });
      ({ t, dir, ourPort } = app);
    });
    after(() => app?.close());

    async function call(body: Json): Promise<string> {
      const r = await t.request('POST', '/v1/calls', { task: 'Confirm the appointment tomorrow.', ...body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return String(r.body.call_id);
    }

    const uas = (scenario: string | undefined, name: string, extra: string[] = [], calls = 1) =>
      sipp(
        [
          ...(scenario ? ['-sf', path.join(SCENARIOS, scenario)] : ['-sn', 'uas']),
          '-i',
          '127.0.0.1',
          '-p',
          String(trunkPort),
          ...extra,
        ],
        dir,
        name,
        calls,
      );
    /**
     * sipp as the trunk of refer-bridge.xml (the person called refuses REFER, then the transfer
     * target), its two calls' RTP sent to `callerRtp` and `targetRtp`, its media on `mediaPort`.
     */
    const referBridge = async (name: string, mediaPort: number, callerRtp: number, targetRtp: number) => {
      const peer = uas(
        'refer-bridge.xml',
        name,
        ['-mp', String(mediaPort), '-key', 'caller_rtp', String(callerRtp), '-key', 'target_rtp', String(targetRtp)],
        2,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      return peer;
    };

    it('outbound: INVITE to the trunk, answered, RTP both ways (the echo is on the recording), BYE on stop', async () => {
      const peer = uas(undefined, 'answer', ['-rtp_echo', '-mp', '31000']);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const id = await call({ phone_number: '+14155551234', record: true, max_duration: 1 });
      await until('the call to be answered', async () => {
        const r = await t.request('GET', `/v1/calls/${id}`);
        return r.body.queue_status === 'started' && (r.body.transcripts as Json[]).length > 0;
      });
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
      const record = await waitForCall(t, id);
      assert.equal(await peer.exit, 0, trace(peer));
      assert.equal(record.status, 'completed');
      assert.equal(record.to, '+14155551234');
      const log = trace(peer);
      assert.match(log, /INVITE sip:\+14155551234@127\.0\.0\.1/);
      assert.match(log, /BYE sip:/);
      // The recording: the agent's voice on the right, and on the left what came back over RTP.
      const wav = parseWav(fs.readFileSync(path.join(dir, 'recordings', `${id}.wav`)));
      assert.equal(wav.channels, 2);
      const left = new Int16Array(wav.samples.length / 2);
      const right = new Int16Array(wav.samples.length / 2);
      for (let i = 0; i < left.length; i++) {
        left[i] = wav.samples[2 * i]!;
        right[i] = wav.samples[2 * i + 1]!;
      }
      assert.ok(dbfs(right) > -45, `the agent spoke (${dbfs(right).toFixed(1)} dBFS)`);
      assert.ok((record.transcripts as Json[]).some((x) => x.user === 'assistant'));
      assert.ok(dbfs(left) > -45, `its voice came back over RTP (${dbfs(left).toFixed(1)} dBFS)`);
    });

    it('outbound: 486 from the trunk is a busy line', async () => {
      const peer = uas('busy.xml', 'busy');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const record = await waitForCall(t, await call({ phone_number: '+14155551235' }));
      assert.equal(await peer.exit, 0, trace(peer));
      assert.equal(record.answered_by, 'no-answer');
      assert.equal(record.error_message, 'The line was busy');
      assert.equal((record.transcripts as Json[]).length, 0);
    });

    it("outbound: a 401 challenge is answered with the trunk's credentials (digest), PCMA is spoken", async () => {
      const peer = uas('digest.xml', 'digest', ['-mp', '31010']);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const id = await call({ phone_number: '+14155551236', max_duration: 1 });
      await until(
        'the call to be answered',
        async () => (await t.request('GET', `/v1/calls/${id}`)).body.queue_status === 'started',
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await t.request('POST', `/v1/calls/${id}/stop`);
      const record = await waitForCall(t, id);
      assert.equal(await peer.exit, 0, trace(peer));
      assert.equal(record.queue_status, 'complete');
      assert.equal(record.error_message, null);
      assert.match(trace(peer), /Authorization: Digest username="alice", realm="trunk\.openline\.test"/);
      // Answered only after the credentials were accepted, then hung up by us.
      assert.match(trace(peer), /SIP\/2\.0 200 OK[\s\S]*BYE sip:/);
      assert.doesNotMatch(trace(peer), /403 Forbidden/);
    });

    it('outbound: stopping a ringing call sends CANCEL; the record says nobody answered', async () => {
      const peer = uas('ring-cancel.xml', 'cancel');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const id = await call({ phone_number: '+14155551237' });
      await until('ringing', async () => trace(peer).includes('180 Ringing'));
      await t.request('POST', `/v1/calls/${id}/stop`);
      const record = await waitForCall(t, id);
      assert.equal(await peer.exit, 0, trace(peer));
      assert.match(trace(peer), /CANCEL sip:\+14155551237@/);
      assert.equal(record.completed, true);
      assert.equal((record.transcripts as Json[]).filter((x) => x.user === 'assistant').length, 0);
    });

    it('outbound: the far end hangs up with BYE', async () => {
      const peer = uas('hangup.xml', 'hangup', ['-mp', '31020']);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const record = await waitForCall(t, await call({ phone_number: '+14155551238', max_duration: 1 }));
      assert.equal(await peer.exit, 0, trace(peer));
      assert.equal(record.call_ended_by, 'USER');
      // The carrier reported the line it placed the call on; the engine wrote it.
      assert.equal(record.carrier, 'sip');
    });

    it('outbound: a key pressed by SIP INFO reaches the call; a transfer is a REFER, and BYE once accepted', async () => {
      const created = await t.request('POST', '/v1/pathway/create', {
        name: 'Transfer',
        nodes: [
          {
            id: 'to-sales',
            type: 'Transfer Call',
            data: { name: 'Sales', isStart: true, transferNumber: '+14155550110', text: 'Connecting you to sales.' },
          },
        ],
        edges: [],
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const peer = uas('refer.xml', 'refer', ['-mp', '31050']);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const id = await call({ phone_number: '+14155551239', pathway_id: created.body.pathway_id, max_duration: 1 });
      const record = await waitForCall(t, id);
      assert.equal(await peer.exit, 0, trace(peer));
      assert.match(trace(peer), /REFER sip:[\s\S]*Refer-To: <sip:\+14155550110@/);
      assert.equal(record.transferred_to, '+14155550110');
      assert.ok(
        (record.transcripts as Json[]).some((x) => String(x.text).includes('pressed 7')),
        'the key from SIP INFO is on the record',
      );
    });

    /** A pathway whose first node transfers the call to `number`. */
    async function transferPathway(number: string): Promise<string> {
      const created = await t.request('POST', '/v1/pathway/create', {
        name: `Transfer to ${number}`,
        nodes: [
          {
            id: 'transfer',
            type: 'Transfer Call',
            data: { name: 'Sales', isStart: true, transferNumber: number, text: 'Connecting you to sales.' },
          },
        ],
        edges: [],
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      return String(created.body.pathway_id);
    }

    /** Waits until the agent, its transfer failed, tells the person called (who is still on the line). */
    const agentSaysTransferFailed = (id: string, ms?: number) =>
      until(
        'the agent to say the transfer failed',
        async () => {
          const record = (await t.request('GET', `/v1/calls/${id}`)).body;
          return ((record.transcripts ?? []) as Json[]).some(
            (x) => x.user === 'assistant' && x.text === TRANSFER_FAILED_LINE,
          );
        },
        ms,
      );

    /** A UDP socket standing for a phone's RTP: what it receives, and a 20 ms stream of one payload it can send. */
    async function rtpPeer() {
      const socket = dgram.createSocket('udp4');
      const packets: RtpPacket[] = [];
      socket.on('message', (data) => {
        const packet = parseRtp(data);
        if (packet) packets.push(packet);
      });
      await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
      let timer: NodeJS.Timeout | undefined;
      return {
        port: socket.address().port,
        packets,
        stream(to: number, payloadType: number, payload: Buffer) {
          let sequence = 1;
          timer = setInterval(() => {
            const packet = { payloadType, marker: false, sequence, timestamp: sequence * 160, ssrc: 0x5eed, payload };
            socket.send(writeRtp(packet), to, '127.0.0.1');
            sequence++;
          }, 20);
        },
        close() {
          clearInterval(timer);
          socket.close();
        },
      };
    }

    /** The RTP port Openline offered in its INVITE to `number` (from sipp's trace). */
    const offeredPort = (log: string, number: string) =>
      Number(new RegExp(`INVITE sip:\\${number}@[\\s\\S]*?m=audio (\\d+)`).exec(log)?.[1]);

    it('outbound: a refused REFER falls back to a call to the target through the trunk, bridged both ways; its BYE ends the call', async () => {
      const pathwayId = await transferPathway('+14155550110');
      const caller = await rtpPeer();
      const target = await rtpPeer();
      try {
        const peer = await referBridge('refer-bridge', 31060, caller.port, target.port);
        const id = await call({ phone_number: '+14155551240', pathway_id: pathwayId, max_duration: 1 });
        await until('the call to the transfer target', async () => trace(peer).includes('INVITE sip:+14155550110@'));
        // The person called speaks PCMU, the target PCMA: each one's audio reaches the other converted.
        const spoken = Buffer.alloc(160, 0x1a);
        const answered = Buffer.alloc(160, 0x2a);
        caller.stream(offeredPort(trace(peer), '+14155551240'), 0, spoken);
        target.stream(offeredPort(trace(peer), '+14155550110'), 8, answered);
        const relayed = (packets: RtpPacket[], payloadType: number, payload: Buffer) =>
          packets.filter((p) => p.payloadType === payloadType && p.payload.equals(payload));
        await until(
          'audio both ways across the bridge',
          () =>
            relayed(target.packets, 8, mulawToAlaw(spoken)).length >= 25 &&
            relayed(caller.packets, 0, alawToMulaw(answered)).length >= 25,
        );
        const record = await waitForCall(t, id);
        assert.equal(await peer.exit, 0, trace(peer));
        const log = trace(peer);
        assert.match(log, new RegExp(`INVITE sip:\\+14155550110@127\\.0\\.0\\.1:${trunkPort}`));
        assert.match(log, /SIP\/2\.0 603 Declined/);
        // The target's BYE (sent by sipp as the target) ended the caller's leg with a BYE from Openline.
        assert.match(log, /BYE sip:openline@/);
        assert.match(log, /received \[\d+\] bytes :\s+BYE sip:/);
        // The target heard the person called and nobody else; once bridged, the agent fell silent.
        assert.equal(relayed(target.packets, 8, mulawToAlaw(spoken)).length, target.packets.length);
        const first = caller.packets.findIndex((p) => p.payload.equals(alawToMulaw(answered)));
        const after = caller.packets.slice(first);
        assert.equal(relayed(after, 0, alawToMulaw(answered)).length, after.length, 'the agent spoke into the bridge');
        assert.equal(record.transferred_to, '+14155550110');
        assert.equal(record.call_ended_by, 'ASSISTANT');
        assert.equal(record.error_message, null);
      } finally {
        caller.close();
        target.close();
      }
    });

    it('outbound: a REFER that gets no response at all falls back, once its transaction times out, to a call to the target, bridged', async () => {
      const pathwayId = await transferPathway('+14155550110');
      const caller = await rtpPeer();
      const target = await rtpPeer();
      try {
        const peer = await referBridge('refer-lost', 31110, caller.port, target.port);
        const id = await call({ phone_number: '+14155551245', pathway_id: pathwayId, max_duration: 1 });
        await until('the call to the transfer target', async () => trace(peer).includes('INVITE sip:+14155550110@'));
        // The target's audio reaches the person called through the bridge.
        const answered = Buffer.alloc(160, 0x2c);
        target.stream(offeredPort(trace(peer), '+14155550110'), 8, answered);
        await until('the bridge', () => caller.packets.some((p) => p.payload.equals(alawToMulaw(answered))));
        const record = await waitForCall(t, id);
        assert.equal(await peer.exit, 0, trace(peer));
        const log = trace(peer);
        // The REFER went out (and again, over UDP) and sipp never answered it; then came the INVITE to the target.
        const refers = log.match(/received \[\d+\] bytes :\s+REFER sip:/g) ?? [];
        assert.ok(refers.length >= 2, `the REFER was retransmitted (${refers.length} received)`);
        assert.doesNotMatch(log, /SIP\/2\.0 \d{3} [^\n]*\n(?:[^\r\n]+\r?\n)*CSeq: \d+ REFER/);
        assert.ok(
          log.indexOf('REFER sip:') < log.indexOf('INVITE sip:+14155550110@'),
          'the INVITE to the target came after the REFER',
        );
        assert.equal(record.transferred_to, '+14155550110');
        assert.equal(record.call_ended_by, 'ASSISTANT');
        assert.equal(record.error_message, null);
      } finally {
        caller.close();
        target.close();
      }
    });

    it('outbound: the person called hangs up the bridge: the target gets BYE, the call was ended by the user', async () => {
      const pathwayId = await transferPathway('+14155550112');
      const caller = await rtpPeer();
      const target = await rtpPeer();
      try {
        const peer = await referBridge('refer-bridge-user', 31080, caller.port, target.port);
        const record = await waitForCall(
          t,
          await call({ phone_number: '+14155551242', pathway_id: pathwayId, max_duration: 1 }),
        );
        assert.equal(await peer.exit, 0, trace(peer));
        const log = trace(peer);
        assert.match(log, /INVITE sip:\+14155550112@/);
        // The caller's BYE went out from sipp; the target's BYE came from Openline.
        assert.match(log, /sent [^\n]*\s+BYE sip:openline@/);
        assert.match(log, /received \[\d+\] bytes :\s+BYE sip:/);
        assert.equal(record.transferred_to, '+14155550112');
        assert.equal(record.call_ended_by, 'USER');
      } finally {
        caller.close();
        target.close();
      }
    });

    it('outbound: a call stopped through the API while bridged: both calls get BYE, the transfer stands', async () => {
      const pathwayId = await transferPathway('+14155550112');
      const caller = await rtpPeer();
      const target = await rtpPeer();
      try {
        const peer = await referBridge('refer-bridge-stop', 31090, caller.port, target.port);
        const id = await call({ phone_number: '+14155551243', pathway_id: pathwayId, max_duration: 1 });
        // Bridged: the target's audio reaches the person called.
        const answered = Buffer.alloc(160, 0x2b);
        await until('the call to the transfer target', async () => trace(peer).includes('INVITE sip:+14155550112@'));
        target.stream(offeredPort(trace(peer), '+14155550112'), 0, answered);
        await until('the bridge', () => caller.packets.some((p) => p.payload.equals(answered)));
        assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
        const record = await waitForCall(t, id);
        // Both of sipp's calls were ended by a BYE from Openline, each answered 200.
        assert.equal(await peer.exit, 0, trace(peer));
        assert.equal(trace(peer).match(/received \[\d+\] bytes :\s+BYE sip:/g)?.length, 2, trace(peer));
        assert.equal(record.transferred_to, '+14155550112');
        assert.equal(record.call_ended_by, 'ASSISTANT');
        assert.equal(record.error_message, null);
      } finally {
        caller.close();
        target.close();
      }
    });

    it('outbound: a refused REFER to a busy target: the transfer failed, the person called is back with the agent, who says so', async () => {
      const pathwayId = await transferPathway('+14155550111');
      const caller = await rtpPeer();
      try {
        const peer = await referBridge('refer-busy', 31070, caller.port, caller.port);
        const id = await call({ phone_number: '+14155551241', pathway_id: pathwayId, max_duration: 1 });
        await agentSaysTransferFailed(id);
        assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
        const record = await waitForCall(t, id);
        assert.equal(await peer.exit, 0, trace(peer));
        assert.match(trace(peer), /INVITE sip:\+14155550111@[\s\S]*SIP\/2\.0 486 Busy Here/);
        assert.equal(record.transferred_to, null);
        assert.match(String(record.error_message), /^Transfer to \+14155550111 failed: .*busy/);
      } finally {
        caller.close();
      }
    });

    it('outbound: a refused REFER to a target that never answers: cancelled after 30 s of ringing, the transfer failed', async () => {
      const pathwayId = await transferPathway('+14155550113');
      const caller = await rtpPeer();
      try {
        const peer = await referBridge('refer-rings', 31100, caller.port, caller.port);
        const id = await call({ phone_number: '+14155551244', pathway_id: pathwayId, max_duration: 1 });
        // The person called stays on the line (their RTP keeps the call from timing out meanwhile).
        await until('the call answered', async () => trace(peer).includes('INVITE sip:+14155551244@'));
        caller.stream(offeredPort(trace(peer), '+14155551244'), 0, Buffer.alloc(160, 0xff));
        await agentSaysTransferFailed(id, 60_000);
        assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
        const record = await waitForCall(t, id);
        assert.equal(await peer.exit, 0, trace(peer));
        const log = trace(peer);
        assert.match(log, /INVITE sip:\+14155550113@[\s\S]*SIP\/2\.0 180 Ringing[\s\S]*CANCEL sip:\+14155550113@/);
        assert.equal(record.transferred_to, null);
        assert.match(String(record.error_message), /^Transfer to \+14155550113 failed: .*nobody answered/);
      } finally {
        caller.close();
      }
    });

    it("outbound: a call naming the account's own SIP trunk (encrypted_key) goes there", async () => {
      const bad = await t.request('POST', '/v1/accounts', { provider: 'sip', trunk: 'https://pbx.example.com' });
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.body), /trunk/);
      const ownPort = await freeUdpPort();
      const stored = await t.request('POST', '/v1/accounts', {
        provider: 'sip',
        trunk: `sip:127.0.0.1:${ownPort}`,
        username: 'acme',
        password: 'pw',
      });
      assert.equal(stored.status, 200, JSON.stringify(stored.body));
      const peer = sipp(
        ['-sf', path.join(SCENARIOS, 'busy.xml'), '-i', '127.0.0.1', '-p', String(ownPort)],
        dir,
        'own',
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const r = await t.request(
        'POST',
        '/v1/calls',
        { phone_number: '+14155550100', task: 'Confirm the appointment.' },
        { headers: { encrypted_key: String(stored.body.encrypted_key) } },
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const record = await waitForCall(t, String(r.body.call_id));
      assert.equal(await peer.exit, 0, trace(peer));
      assert.match(trace(peer), new RegExp(`INVITE sip:\\+14155550100@127\\.0\\.0\\.1:${ownPort}`));
      assert.equal(record.error_message, 'The line was busy');
    });

    it("inbound: sipp calls one of the account's numbers, the agent answers and speaks, sipp hangs up", async () => {
      const bought = await t.request('POST', '/v1/inbound/purchase', {
        area_code: '628',
        prompt: 'You are the front desk of Sunny Dental. Greet the caller and offer help.',
      });
      assert.equal(bought.status, 200, JSON.stringify(bought.body));
      const number = String(bought.body.phone_number);
      const caller = await sippCaller(
        'uac',
        number.slice(1),
        ourPort,
        ['-d', '4000', '-rtp_echo', '-mp', '31030'],
        dir,
        'inbound',
      );
      assert.equal(await caller.exit, 0, trace(caller));
      const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
      const id = (list.body.calls as Json[])[0]?.call_id;
      assert.ok(id, 'the inbound call is on record');
      const record = await waitForCall(t, String(id));
      assert.equal(record.inbound, true);
      assert.equal(record.carrier, 'sip');
      assert.equal(record.call_ended_by, 'USER');
      assert.ok(
        (record.transcripts as Json[]).some((x) => x.user === 'assistant'),
        'the agent spoke',
      );
    });

    it('inbound: a number nobody holds is 404; garbage on the SIP port changes nothing', async () => {
      const socket = dgram.createSocket('udp4');
      const replies: string[] = [];
      socket.on('message', (data) => replies.push(data.toString()));
      await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
      const send = (text: string) => socket.send(Buffer.from(text), ourPort, '127.0.0.1');
      for (const junk of [
        '',
        'hello',
        'INVITE',
        'SIP/2.0 200',
        'INVITE sip:x SIP/2.0\r\nVia: nonsense\r\n\r\n',
        '\u0000'.repeat(2000),
      ])
        send(junk);
      const port = socket.address().port;
      send(
        [
          `INVITE sip:+19995550100@127.0.0.1:${ourPort} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bKnobody1`,
          'From: <sip:+14155550100@127.0.0.1>;tag=a1',
          `To: <sip:+19995550100@127.0.0.1:${ourPort}>`,
          'Call-ID: nobody-1@127.0.0.1',
          'CSeq: 1 INVITE',
          'Content-Type: application/sdp',
          '',
          'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 31040 RTP/AVP 0\r\n',
        ].join('\r\n'),
      );
      await until('a final answer', async () => replies.some((r) => /^SIP\/2\.0 404/.test(r)), 5000);
      socket.close();
      // The server still answers.
      assert.equal((await t.request('GET', '/healthz')).status, 200);
    });
  },
);
