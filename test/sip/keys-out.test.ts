import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { RtpSession, parseRtp, type RtpPacket } from '../../src/carriers/sip/rtp.js';
import { audioLegSettings, createAudioLeg } from '../../src/media/audio-leg.js';
import { MULAW_SILENCE } from '../../src/media/audio.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { EnergyVad } from '../../src/media/vad-energy.js';
import { ScriptedStt, ToneTts, createMediaPair } from '../../src/testing/audio-fakes.js';
import { callRequest } from '../../src/testing/call-request.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { waitFor } from '../../src/testing/wait.js';

const SILENCE = Buffer.alloc(160, MULAW_SILENCE);
const scheduler = new FrameScheduler();
after(() => scheduler.stop());

/** An RTP session sending to a plain UDP socket that keeps every packet it gets. */
async function sessionToSink(dtmfPayloadType: number | undefined) {
  const sink = dgram.createSocket('udp4');
  const port = await freeUdpPort();
  await new Promise<void>((resolve) => sink.bind(port, '127.0.0.1', resolve));
  const packets: RtpPacket[] = [];
  sink.on('message', (data) => {
    const packet = parseRtp(data);
    if (packet) packets.push(packet);
  });
  const rtpPort = await freeUdpPort();
  const rtp = await RtpSession.open('127.0.0.1', { min: rtpPort, max: rtpPort });
  rtp.connect(
    { address: '127.0.0.1', port },
    { name: 'PCMU', payloadType: 0, ...(dtmfPayloadType !== undefined && { dtmfPayloadType }) },
  );
  return {
    rtp,
    packets,
    close: () => {
      rtp.close();
      sink.close();
    },
  };
}

const pressKey = (rtp: RtpSession, digit: string, frames = 5) =>
  Array.from({ length: frames }, (_, i) => rtp.sendKey(digit, { first: i === 0, last: i === frames - 1 }));

describe('keys the agent presses on a SIP call go out as RFC 4733 events', () => {
  it('sends one event per key: one timestamp, a growing duration, the end three times, audio after its duration', async () => {
    const { rtp, packets, close } = await sessionToSink(101);
    try {
      rtp.sendMedia(SILENCE);
      assert.deepEqual(pressKey(rtp, '#'), [true, true, true, true, true]);
      rtp.sendMedia(SILENCE);
      await waitFor('the packets', () => packets.length === 1 + 4 + 3 + 1);
      const [audio, ...rest] = packets;
      const events = rest.slice(0, 7);
      const after = rest[7]!;
      assert.ok(events.every((p) => p.payloadType === 101 && p.timestamp === audio!.timestamp + 160));
      assert.deepEqual(
        events.map((p) => p.marker),
        [true, false, false, false, false, false, false],
      );
      assert.deepEqual(
        events.map((p) => p.payload[0]),
        Array(7).fill(11),
        '# is event 11',
      );
      assert.deepEqual(
        events.map((p) => p.payload.readUInt16BE(2)),
        [160, 320, 480, 640, 800, 800, 800],
      );
      assert.deepEqual(
        events.map((p) => (p.payload[1]! & 0x80) !== 0),
        [false, false, false, false, true, true, true],
      );
      const sequences = packets.map((p) => p.sequence);
      assert.ok(
        sequences.every((s, i) => i === 0 || s === ((sequences[i - 1]! + 1) & 0xffff)),
        'no gap in sequence',
      );
      assert.equal(after.payloadType, 0);
      assert.equal(after.timestamp, audio!.timestamp + 160 + 800, 'the audio goes on after the key');
    } finally {
      close();
    }
  });

  it('another RTP session hears each key once', async () => {
    const [a, b] = [await freeUdpPort(), await freeUdpPort()];
    const left = await RtpSession.open('127.0.0.1', { min: a, max: a });
    const right = await RtpSession.open('127.0.0.1', { min: b, max: b });
    const codec = { name: 'PCMU' as const, payloadType: 0, dtmfPayloadType: 101 };
    left.connect({ address: '127.0.0.1', port: b }, codec);
    right.connect({ address: '127.0.0.1', port: a }, codec);
    const heard: string[] = [];
    right.on((event) => event.type === 'dtmf' && heard.push(event.digit));
    try {
      for (const digit of '1*9') {
        pressKey(left, digit);
        left.sendMedia(SILENCE);
      }
      await waitFor('three keys', () => heard.length === 3);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(heard, ['1', '*', '9']);
    } finally {
      left.close();
      right.close();
    }
  });

  it('without telephone-event in the far end SDP the tone goes in-band', async () => {
    const { rtp, close } = await sessionToSink(undefined);
    try {
      assert.equal(rtp.sendKey('5', { first: true, last: false }), false);
    } finally {
      close();
    }
  });

  it('the audio leg hands each frame of a key tone to the transport as that key, the gaps as audio', async () => {
    const { transport, far } = createMediaPair();
    const keys: string[] = [];
    const keyed = Object.assign(transport, {
      sendKey: (digit: string, part: { first: boolean; last: boolean }) => {
        keys.push(`${digit}${part.first ? '<' : ''}${part.last ? '>' : ''}`);
        return true;
      },
    });
    const request = callRequest();
    const leg = createAudioLeg(keyed, audioLegSettings('call-keys', request, 'test-voice'), {
      stt: new ScriptedStt({ lines: [] }),
      tts: new ToneTts({ msPerChar: 10 }),
      vad: new EnergyVad(),
      scheduler,
    });
    far.startStreaming();
    await leg.sendDtmf('4#');
    assert.deepEqual(keys, ['4<', '4', '4', '4', '4>', '#<', '#', '#', '#', '#>']);
    assert.equal(far.received.length, 6, 'the 60 ms gap after each key goes as audio');
    await leg.hangup();
  });
});
