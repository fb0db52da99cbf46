import { it } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { RtpSession, SOURCE_SWITCH_PACKETS, parseRtp, writeRtp } from '../../src/carriers/sip/rtp.js';
import type { MediaEvent } from '../../src/media/transport.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { waitFor } from '../../src/testing/wait.js';
import { alawToMulaw } from '../../src/media/audio.js';

/** A UDP socket sending RTP of one payload and SSRC, and counting the packets it receives. */
async function source(payload: number, ssrc: number) {
  const socket = dgram.createSocket('udp4');
  let received = 0;
  socket.on('message', (data) => {
    if (parseRtp(data)) received++;
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  let sequence = 1;
  return {
    port: socket.address().port,
    received: () => received,
    async send(to: number, count = 1, ssrcOf: (i: number) => number = () => ssrc) {
      for (let i = 0; i < count; i++) {
        const packet = writeRtp({
          payloadType: 0,
          marker: false,
          sequence,
          timestamp: sequence++ * 160,
          ssrc: ssrcOf(i),
          payload: Buffer.alloc(160, payload),
        });
        await new Promise<void>((resolve) => socket.send(packet, to, '127.0.0.1', () => resolve()));
      }
      // Loopback delivers within a moment: the session has read them before the test goes on.
      await new Promise((resolve) => setTimeout(resolve, 30));
    },
    close: () => socket.close(),
  };
}

it("RTP from another address never takes over a call's stream unless it sends several packets in a row with one SSRC, the call's own source silent", async () => {
  const port = await freeUdpPort();
  const rtp = await RtpSession.open('127.0.0.1', { min: port, max: port });
  const phone = await source(0x1a, 0x1111);
  const stranger = await source(0x55, 0x2222);
  const heard: MediaEvent[] = [];
  rtp.on((event) => heard.push(event));
  const heardFrom = (payload: number) =>
    heard.filter((e) => e.type === 'media' && e.payload.length > 0 && e.payload.every((b) => b === payload)).length;
  /** Sends a frame of the agent's and says which of the two got it. */
  const agentSends = async () => {
    const before = { phone: phone.received(), stranger: stranger.received() };
    rtp.sendMedia(Buffer.alloc(160, 0xff));
    await waitFor('the packet', () => phone.received() + stranger.received() > before.phone + before.stranger, 2000);
    return phone.received() > before.phone ? 'phone' : 'stranger';
  };
  try {
    rtp.connect({ address: '127.0.0.1', port: phone.port }, { name: 'PCMU', payloadType: 0 });
    await phone.send(port, 3);
    assert.ok(heardFrom(0x1a) >= 1, 'the phone is heard');
    // One forged packet, while the phone is quiet: nothing changes.
    await stranger.send(port, 1);
    assert.equal(await agentSends(), 'phone');
    // Many packets, but with changing SSRCs: not one stream.
    await stranger.send(port, 2 * SOURCE_SWITCH_PACKETS, (i) => 0x3000 + i);
    assert.equal(await agentSends(), 'phone');
    // One short of the switch, then the phone speaks: the count starts again.
    await stranger.send(port, SOURCE_SWITCH_PACKETS - 1);
    await phone.send(port, 1);
    await stranger.send(port, SOURCE_SWITCH_PACKETS - 1);
    assert.equal(await agentSends(), 'phone');
    assert.equal(heardFrom(0x55), 0, "none of the stranger's audio reached the call");
    // A far end that really moved (one SSRC, packets in a row, nothing from the old address): followed.
    await stranger.send(port, SOURCE_SWITCH_PACKETS);
    assert.equal(await agentSends(), 'stranger');
    assert.ok(heardFrom(0x55) >= 1, 'its audio is the call');
  } finally {
    rtp.close();
    phone.close();
    stranger.close();
  }
});

it('RFC 4733 events come under the telephone-event type of the answer or under the one Openline offered (101), each key once', async () => {
  const port = await freeUdpPort();
  const rtp = await RtpSession.open('127.0.0.1', { min: port, max: port });
  const phone = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => phone.bind(0, '127.0.0.1', resolve));
  const keys: string[] = [];
  rtp.on((event) => {
    if (event.type === 'dtmf') keys.push(event.digit);
  });
  let sequence = 1;
  /** One key's three end packets under `payloadType`. */
  const press = async (event: number, payloadType: number, timestamp: number) => {
    for (let i = 0; i < 3; i++) {
      const payload = Buffer.from([event, 0x80 | 10, 0x03, 0x20]);
      const packet = writeRtp({ payloadType, marker: i === 0, sequence: sequence++, timestamp, ssrc: 7, payload });
      await new Promise<void>((resolve) => phone.send(packet, port, '127.0.0.1', () => resolve()));
    }
  };
  try {
    // Openline offered 101; the far end's answer named 96.
    rtp.connect(
      { address: '127.0.0.1', port: phone.address().port },
      { name: 'PCMU', payloadType: 0, dtmfPayloadType: 96 },
    );
    await press(5, 96, 1000);
    await press(7, 101, 2000);
    await waitFor('both keys', () => keys.length >= 2, 2000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(keys, ['5', '7']);
  } finally {
    rtp.close();
    phone.close();
  }
});

it('G.711 under a dynamic payload type (96 PCMU/8000, 97 PCMA/8000 in the SDP) is heard, and sent under that type', async () => {
  for (const [name, payloadType] of [
    ['PCMU', 96],
    ['PCMA', 97],
  ] as const) {
    const port = await freeUdpPort();
    const rtp = await RtpSession.open('127.0.0.1', { min: port, max: port });
    const phone = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => phone.bind(0, '127.0.0.1', resolve));
    const sent: number[] = [];
    phone.on('message', (data) => sent.push(parseRtp(data)?.payloadType ?? -1));
    const frames: Buffer[] = [];
    rtp.on((event) => {
      if (event.type === 'media') frames.push(event.payload);
    });
    try {
      rtp.connect({ address: '127.0.0.1', port: phone.address().port }, { name, payloadType, dtmfPayloadType: 101 });
      const byte = 0x1a;
      for (let sequence = 1; sequence <= 3; sequence++) {
        const packet = writeRtp({
          payloadType,
          marker: false,
          sequence,
          timestamp: sequence * 160,
          ssrc: 9,
          payload: Buffer.alloc(160, byte),
        });
        await new Promise<void>((resolve) => phone.send(packet, port, '127.0.0.1', () => resolve()));
      }
      const expected = name === 'PCMA' ? alawToMulaw(Buffer.from([byte]))[0] : byte;
      await waitFor(`the ${name} audio`, () => frames.some((f) => f.every((b) => b === expected)), 2000);
      rtp.sendMedia(Buffer.alloc(160, 0xff));
      await waitFor('our packet', () => sent.length > 0, 2000);
      assert.deepEqual(sent, [payloadType]);
    } finally {
      rtp.close();
      phone.close();
    }
  }
});
