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
    t = await createTestApp({ clock: new ScaledClock(2), env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
    await t.services.startWorkers();
    for (const number of ['0180', '0182', '0185', '0186', '0109', '0188', '0191']) {
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
    // A patient agent (interruption_threshold 500: two seconds of silence end a turn): it still
    // greets at the far end's first pause, as heard on the audio.
    calls.set(
      'patient',
      t
        .request('POST', '/v1/calls', {
          phone_number: '+14155550182',
          task: 'Ask whether the order arrived.',
          answered_by_enabled: true,
          wait_for_greeting: true,
          interruption_threshold: 500,
          max_duration: 1,
        })
        .then((r) => {
          assert.equal(r.status, 200, JSON.stringify(r.body));
          return waitForCall(t, String(r.body.call_id));
        }),
    );
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
    // Said over her long greeting and cut by it, the first sentence does not leave her waiting:
    // her greeting is answered.
    assert.doesNotMatch(transcript(call), /user: Hello\? Are you still there\?/);
  });

  it('greeting at the first pause: the person gets one greeting, and their reply is what the agent answers next', async () => {
    const call = await calls.get('patient')!;
    assert.equal(call.answered_by, 'human', transcript(call));
    const lines = (call.transcripts as { user: string; text: string }[]).filter((x) => x.user !== 'agent-action');
    assert.equal(lines[0]?.user, 'user', transcript(call));
    assert.match(lines[0]!.text, /Delgado residence/, transcript(call));
    const greeting = "Hello! This is an automated call. I'm calling to ask whether the order arrived.";
    assert.deepEqual(lines[1], { ...lines[1], user: 'assistant', text: greeting }, transcript(call));
    assert.equal(lines.filter((x) => x.text === greeting).length, 1, transcript(call));
    // The greeting they said is not answered again: the next words are theirs, then the agent's.
    assert.equal(lines[2]?.user, 'user', transcript(call));
    assert.doesNotMatch(lines[2]!.text, /Delgado residence/, transcript(call));
    assert.equal(lines[3]?.user, 'assistant', transcript(call));
  });

  for (const number of ['0109', '0188']) {
    it(`555-${number}, a call screener: told who is calling and why, then the person it puts through is greeted`, async () => {
      const call = await calls.get(number)!;
      const lines = (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`);
      const said = lines.join('\n');
      assert.equal(call.answered_by, 'human', said);
      assert.doesNotMatch(said, /Voicemail detected|IVR detected/);
      const detected = lines.findIndex((l) => /^agent-action: Call screener detected/.test(l));
      assert.ok(detected >= 0, said);
      assert.match(lines[detected - 1]!, /^robot: .*(say your name|who you are)/, said);
      // Who is calling and why, said to the screener; its hold line waited through in silence
      // (each line is recorded when it ends, so the two may come in either order).
      const hello = lines.findIndex((l, n) => n > detected && l === 'user: Hello?');
      assert.ok(hello > detected, said);
      assert.deepEqual(
        lines.slice(detected + 1, hello).filter((l) => l.startsWith('assistant:')),
        ['assistant: This is an automated assistant, calling to ask whether the order arrived.'],
        said,
      );
      assert.ok(
        lines.slice(detected + 1, hello).some((l) => /^robot: Thank/.test(l)),
        said,
      );
      // The person picks up: greeted with the call's opening, as one who just answered.
      assert.match(lines[hello + 1]!, /^agent-action: A person answered after the call screener/, said);
      assert.ok(
        lines.slice(hello + 2).some((l) => /^assistant: Hello! This is/.test(l)),
        said,
      );
      assert.equal(call.call_ended_by, 'ASSISTANT', said);
    });
  }

  it('555-0182, "Hello, Delgado residence.": human', async () => {
    const call = await calls.get('0182')!;
    assert.equal(call.answered_by, 'human', transcript(call));
  });

  it('555-0185, a personal voicemail with an 850 Hz beep: voicemail, the message left after the beep', async () => {
    const call = await calls.get('0185')!;
    assert.equal(call.answered_by, 'voicemail', transcript(call));
    assert.match(transcript(call), /assistant: Hi, this is Openline about your order/);
  });

  it('555-0191, a voicemail that pauses like a person after "Hi, it\'s Mark.": its beep makes it a voicemail, the message left', async () => {
    const call = await calls.get('0191')!;
    assert.equal(call.answered_by, 'voicemail', transcript(call));
    assert.match(transcript(call), /user: Hi, it's Mark\.[^]*Voicemail detected: leaving a message/);
    assert.match(transcript(call), /assistant: Hi, this is Openline about your order\. Please call us back\.$/);
  });

  it('the call record says when answered_by took its final value: a person at the pause after the greeting, a revised verdict at its beep', async () => {
    const decidedMs = (call: Json) => (call.latency as { answered_by_ms?: unknown } | null)?.answered_by_ms;
    const person = await calls.get('0182')!;
    const personMs = decidedMs(person);
    assert.equal(typeof personMs, 'number', JSON.stringify(person.latency));
    // Mark's "Hi, it's Mark." made a person at its pause (about 1.3 s); the beep after his next
    // sentence, 4 s in, revised it, and the record gives the revision's time.
    const mark = await calls.get('0191')!;
    const markMs = Number(decidedMs(mark));
    assert.ok(markMs > 3500 && markMs < Number(mark.corrected_duration) * 1000, `${markMs} ms`);
    // "Hello, Delgado residence." and its pause: after the greeting, and well before a beep 4 s in
    // (the times are the clock's, so a busy machine makes both later; their order holds).
    assert.ok(Number(personMs) > 500 && Number(personMs) < markMs, `${String(personMs)} ms, Mark's ${markMs} ms`);
  });

  it("555-0186, a carrier's voicemail prompt with a short 1400 Hz beep: voicemail", async () => {
    const call = await calls.get('0186')!;
    assert.equal(call.answered_by, 'voicemail', transcript(call));
  });
});
