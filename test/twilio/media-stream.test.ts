import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TwilioMediaStream } from '../../src/carriers/twilio/media-stream.js';
import type { MediaEvent } from '../../src/media/transport.js';
import { MemorySocket } from '../../src/testing/memory-socket.js';

function open() {
  const socket = new MemorySocket();
  const stream = new TwilioMediaStream(socket.ws, {
    streamSid: 'MZ1',
    callSid: 'CA1',
    accountSid: 'AC1',
    customParameters: {},
  });
  return { socket, stream };
}

describe('TwilioMediaStream', () => {
  it('sends media, mark and clear with the streamSid, as Twilio expects them', () => {
    const { socket, stream } = open();
    stream.sendMedia(Buffer.from([0xff, 0x7f]));
    stream.sendMark('w1');
    stream.clear();
    assert.deepEqual(socket.sent, [
      { event: 'media', streamSid: 'MZ1', media: { payload: Buffer.from([0xff, 0x7f]).toString('base64') } },
      { event: 'mark', streamSid: 'MZ1', mark: { name: 'w1' } },
      { event: 'clear', streamSid: 'MZ1' },
    ]);
  });

  it('keeps what arrives before anyone listens, hears only the inbound track, and stops once', () => {
    const { socket, stream } = open();
    stream.receive({ event: 'media', payload: Buffer.from([1]), timestampMs: 0, track: 'inbound' });
    stream.receive({ event: 'media', payload: Buffer.from([2]), timestampMs: 0, track: 'outbound' });
    stream.receive({ event: 'dtmf', digit: '5' });
    const heard: MediaEvent[] = [];
    stream.on((event) => heard.push(event));
    stream.receive({ event: 'mark', name: 'w1' });
    stream.receive({ event: 'stop' });
    socket.emit('close', 1000, Buffer.alloc(0));
    stream.receive({ event: 'media', payload: Buffer.from([3]), timestampMs: 40, track: 'inbound' });
    assert.deepEqual(heard, [
      { type: 'media', payload: Buffer.from([1]), timestampMs: 0 },
      { type: 'dtmf', digit: '5' },
      { type: 'mark', name: 'w1' },
      { type: 'stop', reason: 'remote' },
    ]);
    // Nothing is sent on a stopped stream.
    stream.sendMedia(Buffer.from([1]));
    assert.equal(socket.sent.length, 0);
  });

  it('reports a socket lost without a stop as a network end', () => {
    const { socket, stream } = open();
    const heard: MediaEvent[] = [];
    stream.on((event) => heard.push(event));
    socket.readyState = 3;
    socket.emit('close', 1006, Buffer.alloc(0));
    assert.deepEqual(heard, [{ type: 'stop', reason: 'network' }]);
  });
});
