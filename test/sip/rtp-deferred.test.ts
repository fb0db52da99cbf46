import { it } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { RtpSession, writeRtp } from '../../src/carriers/sip/rtp.js';
import { MULAW_SILENCE } from '../../src/media/audio.js';
import type { MediaEvent } from '../../src/media/transport.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { waitFor } from '../../src/testing/wait.js';

it("an RTP session's received audio waits for its turn (defer), and a line whose packets wait is not taken for a quiet one", async () => {
  const phone = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => phone.bind(0, '127.0.0.1', resolve));
  const port = await freeUdpPort();
  // The deferred work, run only when the test says so.
  const waiting: (() => void)[] = [];
  const rtp = await RtpSession.open('127.0.0.1', { min: port, max: port }, { defer: (task) => waiting.push(task) });
  const heard: MediaEvent[] = [];
  rtp.on((event) => heard.push(event));
  const runWaiting = () => {
    for (const task of waiting.splice(0)) task();
  };
  const spoken = Buffer.alloc(160, 0x1a);
  let sequence = 1;
  const send = () =>
    phone.send(
      writeRtp({ payloadType: 0, marker: false, sequence, timestamp: sequence++ * 160, ssrc: 0xbeef, payload: spoken }),
      port,
      '127.0.0.1',
    );
  try {
    rtp.connect({ address: '127.0.0.1', port: phone.address().port }, { name: 'PCMU', payloadType: 0 });
    send();
    await waitFor('the packet read', () => waiting.length === 1);
    assert.equal(heard.length, 0, 'nothing heard before its turn');
    runWaiting();
    assert.equal(heard.length, 1);
    // The far end goes on talking while its packets wait their turn longer than a quiet line
    // takes (80 ms): none of them is taken for silence.
    const stream = setInterval(send, 20);
    await new Promise((resolve) => setTimeout(resolve, 250));
    clearInterval(stream);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const sent = sequence - 2;
    assert.ok(sent >= 5, `${sent} packets`);
    runWaiting();
    const talking = heard.slice(1);
    assert.ok(talking.length >= 5);
    assert.ok(
      talking.every((event) => event.type === 'media' && event.payload.equals(spoken)),
      'no silence among the packets that came',
    );
    const before = heard.length;
    // Now the far end says nothing: the silence of the quiet line waits its turn too.
    await waitFor('silence for the quiet line', () => waiting.length >= 2);
    assert.equal(heard.length, before, 'the silence is heard in its turn, not as the timer fires');
    runWaiting();
    const silent = heard.slice(before);
    assert.ok(silent.length >= 2);
    for (const event of silent) assert.ok(event.type === 'media' && event.payload.every((b) => b === MULAW_SILENCE));
  } finally {
    rtp.close();
    phone.close();
  }
});
