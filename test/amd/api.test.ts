import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

type Json = { [k: string]: unknown };

describe('answered_by through the public API on audio (OPENLINE_SANDBOX_AUDIO=1), greetings no detector was fitted on', () => {
  let t: TestApp;
  let dataDir: string;
  const calls = new Map<string, Promise<Json>>();
  const transcript = (call: Json) =>
    (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`).join('\n');

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-amd-api-'));
    t = await createTestApp({ clock: new ScaledClock(4), env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
    await t.services.startWorkers();
    for (const number of ['0180', '0182', '0185', '0186']) {
      const placed = t
        .request('POST', '/v1/calls', {
          phone_number: `+1415555${number}`,
          task: 'Ask whether the order arrived.',
          answered_by_enabled: true,
          wait_for_greeting: true,
          voicemail_message: 'Hi, this is Openline about your order. Please call us back.',
          max_duration: 1,
        })
        .then((r) => {
          assert.equal(r.status, 200, JSON.stringify(r.body));
          return waitForCall(t, String(r.body.call_id));
        });
      calls.set(number, placed);
    }
  });
  after(async () => {
    await t.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('555-0180, a receptionist giving the practice and her own name: human, and the agent talks to her', async () => {
    const call = await calls.get('0180')!;
    assert.equal(call.answered_by, 'human', transcript(call));
    assert.match(transcript(call), /user: Good afternoon, Lakeside Family Practice/);
    assert.match(transcript(call), /assistant: /);
  });

  it('555-0182, "Hello, Delgado residence.": human', async () => {
    const call = await calls.get('0182')!;
    assert.equal(call.answered_by, 'human', transcript(call));
  });

  it('555-0185, a personal voicemail with an 850 Hz beep: voicemail, the message left after the beep', async () => {
    const call = await calls.get('0185')!;
    assert.equal(call.answered_by, 'voicemail', transcript(call));
    assert.match(transcript(call), /assistant: Hi, this is Openline about your order/);
  });

  it("555-0186, a carrier's voicemail prompt with a short 1400 Hz beep: voicemail", async () => {
    const call = await calls.get('0186')!;
    assert.equal(call.answered_by, 'voicemail', transcript(call));
  });
});
