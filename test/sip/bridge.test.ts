import { it } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { RtpSession, parseRtp, writeRtp, type RtpPacket } from '../../src/carriers/sip/rtp.js';
import { MULAW_SILENCE, alawToMulaw, mulawToAlaw } from '../../src/media/audio.js';
import type { MediaEvent } from '../../src/media/transport.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { waitFor } from '../../src/testing/wait.js';

/** A phone's end of an RTP stream: a UDP socket that keeps what it gets and sends what it is given. */
async function phone() {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const packets: RtpPacket[] = [];
  socket.on('message', (data) => {
    const packet = parseRtp(data);
    if (packet) packets.push(packet);
  });
  return {
    port: socket.address().port,
    packets,
    send: (port: number, packet: Omit<RtpPacket, 'marker' | 'ssrc'>) =>
      socket.send(writeRtp({ marker: false, ssrc: 0xcafe, ...packet }), port, '127.0.0.1'),
    close: () => socket.close(),
  };
}

async function session(): Promise<RtpSession> {
  const port = await freeUdpPort();
  return RtpSession.open('127.0.0.1', { min: port, max: port });
}

it('two bridged RTP sessions relay audio both ways (PCMU to PCMA and back) and keys, and cut the agent off', async () => {
  const caller = await phone();
  const target = await phone();
  const ours = await session();
  const theirs = await session();
  try {
    ours.connect({ address: '127.0.0.1', port: caller.port }, { name: 'PCMU', payloadType: 0, dtmfPayloadType: 101 });
    theirs.connect({ address: '127.0.0.1', port: target.port }, { name: 'PCMA', payloadType: 8, dtmfPayloadType: 96 });
    const heard: MediaEvent[] = [];
    ours.on((event) => heard.push(event));
    ours.bridge(theirs);
    // The agent's audio and keys go nowhere once bridged.
    ours.sendMedia(Buffer.alloc(160, MULAW_SILENCE));
    assert.equal(ours.sendKey('5', { first: true, last: true }), true);
    const spoken = Buffer.alloc(160, 0x1a);
    const key = Buffer.from([5, 0x8a, 0x03, 0x20]);
    caller.send(ours.port, { payloadType: 0, sequence: 7, timestamp: 1120, payload: spoken });
    caller.send(ours.port, { payloadType: 101, sequence: 8, timestamp: 1280, payload: key });
    // Comfort noise (13) is no audio either side knows: not relayed.
    caller.send(ours.port, { payloadType: 13, sequence: 9, timestamp: 1440, payload: Buffer.from([0x40]) });
    const answered = Buffer.alloc(160, 0x2a);
    target.send(theirs.port, { payloadType: 8, sequence: 40, timestamp: 6400, payload: answered });
    await waitFor('the relayed packets', () => target.packets.length === 2 && caller.packets.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(target.packets.length, 2);
    assert.equal(caller.packets.length, 1, 'the agent sent nothing');
    const [audio, event] = target.packets;
    assert.equal(audio!.payloadType, 8);
    assert.deepEqual(audio!.payload, mulawToAlaw(spoken));
    assert.equal(audio!.sequence, 7);
    assert.equal(audio!.timestamp, 1120);
    assert.equal(event!.payloadType, 96);
    assert.deepEqual(event!.payload, key);
    assert.equal(caller.packets[0]!.payloadType, 0);
    assert.deepEqual(caller.packets[0]!.payload, alawToMulaw(answered));
    assert.deepEqual(heard, [], 'the agent heard nothing');
  } finally {
    ours.close();
    theirs.close();
    caller.close();
    target.close();
  }
});
