import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { waitFor } from '../../src/testing/wait.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { mixForListening } from '../../src/calls/listen.js';

type Json = Record<string, unknown>;

const rms = (pcm: Buffer): number => {
  let sum = 0;
  for (let i = 0; i + 1 < pcm.length; i += 2) sum += pcm.readInt16LE(i) ** 2;
  return Math.sqrt(sum / Math.max(1, pcm.length / 2));
};

describe('live listening (POST /v1/calls/{id}/listen)', () => {
  let t: TestApp;
  let origin: string;
  let dataDir: string;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-listen-'));
    // Real time: the listener hears the call as it happens.
    t = await createTestApp({ env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await t.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('mixes both sides and doubles the rate', () => {
    const stereo = Int16Array.from([100, 200, 30000, 10000, -30000, -10000]);
    const out = mixForListening(stereo);
    const samples = Array.from({ length: out.length / 2 }, (_, i) => out.readInt16LE(2 * i));
    assert.deepEqual(samples, [150, 300, 16534, 32767, 0, -32768]);
  });

  it('streams a live sandbox audio call, both sides, as 16 kHz PCM until the call ends', async () => {
    const placed = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the dentist appointment for tomorrow at three in the afternoon.',
    });
    const callId = placed.body.call_id as string;
    await waitFor('the call to start', async () => {
      const r = await t.request('GET', `/v1/calls/${callId}`);
      return r.body.status === 'started' ? true : undefined;
    });
    const foreign = await t.request('POST', `/v1/calls/${callId}/listen`, undefined, { as: t.otherKey });
    assert.equal(foreign.status, 404);

    const r = await t.request('POST', `/v1/calls/${callId}/listen`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.errors, null);
    const url = (r.body.data as Json).url as string;
    // The URL names the host the request reached (here the test's injected request: localhost).
    assert.match(url, new RegExp(`^ws://localhost(:\\d+)?/ws/listen/${callId}\\?token=`));
    const heard: Buffer[] = [];
    const socket = new WebSocket(url.replace(/^ws:\/\/[^/]+/, origin.replace(/^http/, 'ws')));
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    socket.on('message', (data, isBinary) => {
      assert.ok(isBinary);
      heard.push(data as Buffer);
    });
    await new Promise((resolve) => socket.once('open', resolve));
    const opened = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 4000));
    const bytes = Buffer.concat(heard);
    const seconds = (Date.now() - opened) / 1000;
    // 32,000 bytes a second, give or take the hold and the timers.
    assert.ok(
      bytes.length > seconds * 32_000 * 0.7 && bytes.length < seconds * 32_000 * 1.2,
      `${bytes.length} bytes in ${seconds} s`,
    );
    assert.ok(rms(bytes) > 300, `someone is talking: rms ${rms(bytes)}`);
    assert.equal(t.services.listening.listenerCount, 1);

    // A second listener on the same URL; the socket closes when the call ends.
    const second = new WebSocket(url.replace(/^ws:\/\/[^/]+/, origin.replace(/^http/, 'ws')));
    await new Promise((resolve) => second.once('open', resolve));
    await t.request('POST', `/v1/calls/${callId}/stop`);
    assert.equal(await closed, 1000);
    await waitForCall(t, callId);
    assert.equal(t.services.listening.listenerCount, 0);
    const ended = await t.request('POST', `/v1/calls/${callId}/listen`);
    assert.equal(ended.status, 400);
    assert.match(String(ended.body.message), /not active/);

    // A token for another call, or a forged one, is refused.
    const forged = new WebSocket(`${origin.replace(/^http/, 'ws')}/ws/listen/${callId}?token=v1.x.y.z`);
    assert.equal(await new Promise<number>((resolve) => forged.on('close', (code) => resolve(code))), 1008);
    const other = new WebSocket(
      url
        .replace(/^ws:\/\/[^/]+/, origin.replace(/^http/, 'ws'))
        .replace(`/ws/listen/${callId}`, '/ws/listen/another-call'),
    );
    assert.equal(await new Promise<number>((resolve) => other.on('close', (code) => resolve(code))), 1008);
  });

  it('a call with no audio here cannot be listened to', async () => {
    const text = await createTestApp();
    try {
      const placed = await text.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Say hello.' });
      const callId = placed.body.call_id as string;
      await text.services.startWorkers();
      const r = await waitFor('a refusal', async () => {
        const listen = await text.request('POST', `/v1/calls/${callId}/listen`);
        return /no live audio/.test(String(listen.body.message)) ? listen : undefined;
      });
      assert.equal(r.status, 400);
      assert.equal((await text.request('POST', '/v1/calls/nope/listen')).status, 404);
    } finally {
      await text.close();
    }
  });
});
