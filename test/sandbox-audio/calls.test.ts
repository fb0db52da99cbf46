import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import type { CallLogEntry } from '../../src/carriers/sandbox/network.js';

type Json = { [k: string]: unknown };

/**
 * Audio runs frame by frame on the clock, so a modest speed-up only: espeak-ng's real start-up
 * time is multiplied by it, and the personas must not take that gap between two of the agent's
 * sentences for the end of its turn.
 */
const SCALE = 4;

const transcript = (call: Json) =>
  (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`).join('\n');

describe('sandbox audio mode (OPENLINE_SANDBOX_AUDIO=1): the personas of the number table on real audio', () => {
  let t: TestApp;
  let dataDir: string;
  const calls = new Map<string, Promise<Json>>();

  async function place(body: Json): Promise<Json> {
    const r = await t.request('POST', '/v1/calls', { answered_by_enabled: true, ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return waitForCall(t, String(r.body.call_id));
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-sandbox-audio-'));
    t = await createTestApp({ clock: new ScaledClock(SCALE), env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
    await t.services.startWorkers();
    // The calls run at the same time: each takes a few seconds of real time.
    calls.set(
      '0100',
      place({ phone_number: '+14155550100', task: 'Confirm the dentist appointment for tomorrow.', record: true }),
    );
    calls.set(
      '0101',
      place({
        phone_number: '+14155550101',
        task: 'Confirm the appointment.',
        voicemail_message: 'Hi, this is Openline. Please call us back.',
      }),
    );
    calls.set('0103', place({ phone_number: '+14155550103', task: 'Reach the support team about a broken order.' }));
    calls.set('0104', place({ phone_number: '+14155550104', task: 'Say hello.' }));
  });
  after(async () => {
    await t.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const logOf = (call: Json): CallLogEntry[] => t.services.sandbox.call(String(call.call_id))?.log ?? [];
  const show = (log: CallLogEntry[]) => log.map((e) => `${e.by} ${e.kind} ${e.text ?? ''}`).join('\n');

  it('555-0100 with record=true: a stereo WAV of both sides, served at recording_url', async () => {
    const call = await calls.get('0100')!;
    assert.match(String(call.recording_url), new RegExp(`/v1/calls/${String(call.call_id)}/recording$`));
    const r = await t.app.inject({
      method: 'GET',
      url: `/v1/calls/${String(call.call_id)}/recording`,
      headers: { authorization: t.key },
    });
    assert.equal(r.statusCode, 200);
    assert.match(String(r.headers['content-type']), /audio\/wav/);
    const wav = r.rawPayload;
    assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
    assert.equal(wav.readUInt16LE(22), 2, 'two channels: the caller and the agent');
    assert.equal(wav.readUInt32LE(24), 8000);
    // Both sides spoke: each channel holds audio well above silence somewhere.
    const peak = [0, 0];
    for (let at = 44; at + 4 <= wav.length; at += 4) {
      peak[0] = Math.max(peak[0]!, Math.abs(wav.readInt16LE(at)));
      peak[1] = Math.max(peak[1]!, Math.abs(wav.readInt16LE(at + 2)));
    }
    assert.ok(peak[0]! > 1000 && peak[1]! > 1000, `peaks ${peak.join(', ')}`);
  });

  it('555-0100, a person: "Hello?" heard through the audio, a conversation, answered_by human', async () => {
    const call = await calls.get('0100')!;
    const lines = transcript(call);
    const log = logOf(call);
    assert.equal(call.queue_status, 'complete', lines);
    assert.equal(call.answered_by, 'human', lines);
    assert.equal(call.call_ended_by, 'ASSISTANT', lines);
    assert.equal(call.completed, true);
    assert.match(lines, /^user: Hello\?\nassistant: /, 'the persona speaks first, then the agent');
    assert.ok((lines.match(/^user: /gm) ?? []).length >= 2, `the persona answers the agent\n${lines}`);
    // The call ran on audio, and the persona heard the agent's words through it.
    assert.ok(
      log.some((e) => e.kind === 'audio'),
      show(log),
    );
    assert.ok(
      log.some((e) => e.by === 'agent' && e.kind === 'speech' && /dentist/.test(e.text ?? '')),
      show(log),
    );
  });

  it('555-0101, voicemail: a real 1000 Hz beep, the message left after it, answered_by voicemail', async () => {
    const call = await calls.get('0101')!;
    const lines = transcript(call);
    const log = logOf(call);
    assert.equal(call.queue_status, 'complete', lines);
    assert.equal(call.answered_by, 'voicemail', lines);
    assert.equal(call.call_ended_by, 'ASSISTANT', lines);
    assert.match(lines, /robot: Hi, you've reached Sam\. Please leave a message after the tone\./);
    assert.match(lines, /assistant: Hi, this is Openline\. Please call us back\./);
    const beep = log.findIndex((e) => e.by === 'persona' && e.kind === 'tone');
    const message = log.findIndex((e) => e.by === 'agent' && e.kind === 'speech' && /call us back/.test(e.text ?? ''));
    assert.ok(beep >= 0 && message > beep, `the voicemail heard the message after its beep\n${show(log)}`);
  });

  it('555-0103, an IVR: the agent presses 2 as in-band DTMF, the menu hears it and connects a person', async () => {
    const call = await calls.get('0103')!;
    const lines = transcript(call);
    const log = logOf(call);
    assert.equal(call.queue_status, 'complete', lines);
    assert.equal(call.answered_by, 'unknown', lines);
    assert.match(lines, /agent-action: Pressed buttons: 2/);
    assert.match(lines, /robot: Please hold while we connect you\./);
    // The persona's DTMF detector (Goertzel on the audio) heard the key: there is no other way for it.
    assert.ok(
      log.some((e) => e.by === 'agent' && e.kind === 'dtmf' && e.text === '2'),
      show(log),
    );
    assert.ok(
      log.some((e) => e.kind === 'persona' && e.text === 'person'),
      show(log),
    );
  });

  it('555-0104, nobody answers: no-answer, as in text mode', async () => {
    const call = await calls.get('0104')!;
    assert.equal(call.queue_status, 'complete');
    assert.equal(call.answered_by, 'no-answer');
    assert.equal(call.call_ended_by, null);
    assert.deepEqual(call.transcripts, []);
  });
});
