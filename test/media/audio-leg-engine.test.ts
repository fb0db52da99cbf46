import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { callRequest } from '../../src/testing/call-request.js';
import { audioLegSettings, createAudioLeg } from '../../src/media/audio-leg.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { EnergyVad } from '../../src/media/vad-energy.js';
import { ScriptedStt, ToneTts, createMediaPair, voice } from '../../src/testing/audio-fakes.js';

async function until<T>(what: string, check: () => T | false | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('audio calls through the engine', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-audio-engine-'));
  const scheduler = new FrameScheduler();
  const events: { category: string; message: string; call_id: string }[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      events.push(JSON.parse(body) as (typeof events)[number]);
      res.end('ok');
    });
  });
  let t: TestApp;
  let receiverUrl = '';

  before(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    t = await createTestApp({ env: { DATA_DIR: dataDir } });
  });
  after(async () => {
    await t.close();
    scheduler.stop();
    receiver.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a recorded audio call keeps its recording and every turn latency, and streams latency events', async () => {
    const accountId = (await t.services.accounts.authenticate(t.key))!.id;
    const request = callRequest({
      phone_number: '+14155550123',
      record: true,
      webhook: `${receiverUrl}/events`,
      webhook_events: ['latency'],
    });
    const call = await t.services.calls.create(accountId, { request, inbound: true, ourNumber: '+14155550199' });
    const { transport, far } = createMediaPair();
    const leg = createAudioLeg(transport, audioLegSettings(call.id, request, 'test-voice'), {
      stt: new ScriptedStt({ lines: ['I have a question about my bill', 'no that is all, goodbye'] }),
      tts: new ToneTts({ msPerChar: 8 }),
      vad: new EnergyVad(),
      scheduler,
      dataDir,
    });
    const done = t.services.engine.answer(call.id, leg);
    far.startStreaming();
    await until('the greeting', () => far.echoed.includes('s1:end'));
    far.talk(voice(600));
    await until('the answer', () => far.echoed.includes('s2:end'));
    far.talk(voice(600));
    await done;

    const r = await t.request('GET', `/v1/calls/${call.id}`);
    assert.equal(r.status, 200);
    const record = r.body as {
      recording_url: string | null;
      latency: { turns: { turn: number; total_ms: number }[]; summary: { turns: number } } | null;
      call_ended_by: string;
    };
    assert.equal(record.call_ended_by, 'ASSISTANT');
    assert.ok(record.latency, 'the record has latency');
    assert.equal(record.latency.turns.length, 2);
    assert.equal(record.latency.summary.turns, 2);
    assert.ok(record.latency.turns.every((turn) => turn.total_ms > 0));
    assert.match(record.recording_url ?? '', new RegExp(`/v1/calls/${call.id}/recording$`));

    const wav = await t.app.inject({
      method: 'GET',
      url: `/v1/calls/${call.id}/recording`,
      headers: { authorization: t.key },
    });
    assert.equal(wav.statusCode, 200);
    assert.equal(wav.rawPayload.toString('ascii', 0, 4), 'RIFF');
    assert.equal(wav.rawPayload.readUInt16LE(22), 2);

    const latencyEvents = await until('the latency events', () => {
      const mine = events.filter((e) => e.call_id === call.id && e.category === 'latency');
      return mine.length === 2 && mine;
    });
    assert.match(latencyEvents[0]!.message, /^Turn 1 latency: \d+ ms from end of speech to first audio/);
  });
});
