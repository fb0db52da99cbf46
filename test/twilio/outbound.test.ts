import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitForCall } from '../../src/testing/harness.js';
import { waitFor } from '../../src/testing/wait.js';
import { voice } from '../../src/testing/audio-fakes.js';
import { decodeMulaw, rms } from '../../src/media/audio.js';
import { parseTwiml } from '../../src/testing/twilio-emulator.js';
import { detectDtmf } from '../../src/media/dtmf.js';
import { CUSTOMER, OUR_NUMBER, SERVER, startTwilioTest, voicedFrames, type TwilioTest } from './setup.js';

const FIRST = 'Hello, this is Openline calling about your order.';

describe('Twilio outbound calls through the emulator', () => {
  let env: TwilioTest;
  before(async () => {
    env = await startTwilioTest();
  });
  after(() => env.close());

  it('places the call with Connect Stream TwiML, talks over the media stream, and ends when the callee hangs up', async () => {
    const to = '+12025550301';
    env.hear(['Yes this is Sam speaking']);
    env.emulator.scripts.set(to, { say: [{ atMs: 1500, pcm: voice(700) }], hangupAfterMs: 5000 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Ask about the order.',
      first_sentence: FIRST,
    });
    assert.equal(sent.status, 200);
    const id = String(sent.body.call_id);
    const call = await waitForCall(env.t, id);
    assert.equal(call.status, 'completed');
    assert.equal(call.queue_status, 'complete');
    assert.equal(call.call_ended_by, 'USER');

    // What Twilio was asked to do.
    const create = env.emulator.requests.find((r) => r.method === 'POST' && r.path.endsWith('/Calls.json'))!;
    assert.equal(create.path, `/2010-04-01/Accounts/${SERVER.accountSid}/Calls.json`);
    assert.equal(create.params.To, to);
    assert.equal(create.params.From, OUR_NUMBER);
    assert.deepEqual(create.multi.StatusCallbackEvent, ['initiated', 'ringing', 'answered', 'completed']);
    assert.equal(create.params.StatusCallback, `${env.publicUrl}/twilio/status?call_id=${id}`);
    assert.equal(create.params.MachineDetection, undefined);
    const verb = parseTwiml(create.params.Twiml!);
    assert.equal(verb.verb, 'stream');
    if (verb.verb === 'stream') {
      assert.equal(verb.url, `${env.publicUrl.replace('http', 'ws')}/twilio/media`);
      assert.equal(verb.parameters.call_id, id);
      assert.ok((verb.parameters.token ?? '').length >= 24, 'a one-time stream token');
    }

    // The callee's side: answered, heard our words as audio, echoed our marks, hung up.
    const far = env.emulator.callTo(to)!;
    assert.deepEqual(far.statuses, ['initiated', 'ringing', 'in-progress', 'completed']);
    assert.ok(far.marksEchoed.length > 0, 'marks came back');
    // The tone TTS makes 10 ms of sound per character: the greeting alone is over 20 voiced frames.
    assert.ok(voicedFrames(far.heardPcm()) >= 20, `voiced frames heard: ${voicedFrames(far.heardPcm())}`);

    // The transcript: our greeting (played in full, by its echoed marks), then what the callee said.
    const transcripts = (call.transcripts as { user: string; text: string }[]).map((t) => `${t.user}: ${t.text}`);
    assert.equal(transcripts[0], `assistant: ${FIRST}`);
    assert.ok(transcripts.includes('user: Yes this is Sam speaking'), transcripts.join('\n'));
    const row = await env.t.services.calls.byId(id);
    assert.equal(row?.carrier, 'twilio');
    assert.equal(row?.carrier_call_id, far.sid);
  });

  it('stops talking when the callee talks over it: clear on the stream, the transcript cut at the words played', async () => {
    const to = '+12025550302';
    const long =
      'Hello, this is Openline calling about your order number four five six, which we shipped on Monday by ' +
      'express courier, and I would like to confirm the delivery address and the time window that suits you best.';
    env.hear(['wait wait I have a question about that']);
    env.emulator.scripts.set(to, { say: [{ atMs: 900, pcm: voice(1500) }], hangupAfterMs: 5000 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Confirm the order.',
      first_sentence: long,
    });
    const call = await waitForCall(env.t, String(sent.body.call_id));
    const far = env.emulator.callTo(to)!;
    assert.ok(far.clears >= 1, 'clear was sent');
    const first = (call.transcripts as { user: string; text: string }[]).find((t) => t.user === 'assistant')!;
    assert.ok(first.text.endsWith('...'), first.text);
    assert.ok(first.text.length < long.length, 'only the words played are kept');
    assert.ok(long.startsWith(first.text.slice(0, -3)), first.text);
  });

  it('a backchannel over the agent: the buffered audio is cleared at once, sent again on resume, and the callee hears the whole sentence, at most one frame repeated or skipped', async () => {
    const long =
      'Hello, this is Openline calling about your order number four five six, which we shipped on Monday by ' +
      'express courier, and I would like to confirm the delivery address.';
    /** The agent's voiced frames the callee heard (not dropped by a clear), in the order played. */
    const run = async (to: string, caller: boolean, line = 'uh huh') => {
      env.hear([line]);
      env.emulator.scripts.set(to, { say: caller ? [{ atMs: 900, pcm: voice(400) }] : [], hangupAfterMs: 4000 });
      const sent = await env.t.request('POST', '/v1/calls', {
        phone_number: to,
        task: 'Confirm.',
        first_sentence: long,
      });
      const call = await waitForCall(env.t, String(sent.body.call_id));
      const far = env.emulator.callTo(to)!;
      const heard = far.frames
        .filter((f) => !f.dropped && rms(decodeMulaw(f.payload)) > 200)
        .sort((a, b) => a.playAtMs - b.playAtMs);
      const first = (call.transcripts as { user: string; text: string }[]).find((t) => t.user === 'assistant');
      return { heard, far, said: first?.text, latency: call.latency as { interruptions: Record<string, number> } };
    };
    const plain = await run('+12025550330', false);
    const held = await run('+12025550331', true);
    assert.ok(held.far.clears >= 1, 'the stream was cleared when the voice started');
    assert.ok(
      held.far.frames.some((f) => f.dropped && rms(decodeMulaw(f.payload)) > 200),
      'voiced audio the carrier held was dropped',
    );
    // Frame for frame the same tones (the line's comfort noise under them differs from call to call).
    const apart = (a: Buffer, b: Buffer) => {
      const x = decodeMulaw(a);
      const y = decodeMulaw(b);
      let sum = 0;
      for (let i = 0; i < x.length; i++) sum += Math.abs(x[i]! - y[i]!);
      return sum / x.length;
    };
    // The sentence, then (once it has finished) perhaps the agent's answer to what was said over
    // it. Every frame of the tones differs from the next, so a frame skipped or repeated at the
    // resume shifts all that follow. The pacer knows the carrier's play position on its own clock
    // only: on a loaded machine the carrier may lag it by a frame, so one frame (20 ms) repeated
    // or skipped is allowed, no more.
    const same = (i: number, j: number) =>
      held.heard[i] !== undefined &&
      plain.heard[j] !== undefined &&
      apart(held.heard[i].payload, plain.heard[j].payload) <= 400;
    const n = plain.heard.length;
    let k = 0;
    while (k < n && same(k, k)) k++;
    const shift = [0, -1, 1].find((d) => {
      for (let j = k + d; j < n; j++) if (!same(j - d, j)) return false;
      return true;
    });
    assert.ok(k >= 40, `the sentence heard as sent up to the hold (frame ${k} of ${n} differs)`);
    assert.notEqual(shift, undefined, `the heard audio differs from frame ${k} of ${n} on`);
    // Nothing more of the last word after it.
    const end = n - 1 - (shift ?? 0);
    const next = held.heard[end + 1];
    if (next) assert.ok(apart(next.payload, plain.heard[n - 1]!.payload) > 400, 'the last word is not longer');
    assert.equal(held.said, long);
    // The call record's figures, through the API: one hold, resumed after words that were no interruption.
    const figures = held.latency.interruptions;
    assert.deepEqual(
      [figures.held, figures.resumed, figures.cut, figures.backchannels, figures.false_interruptions],
      [1, 1, 0, 1, 0],
    );
    assert.ok(figures.silent_ms_p50! > 0 && figures.silent_ms_p50! < 500, `silent_ms ${figures.silent_ms_p50}`);
    // The agent goes on once the voice has stopped for 200 ms (frames, not a wall-clock bound).
    assert.ok(figures.resume_ms_p50! >= 100, `resume_ms ${figures.resume_ms_p50}`);
    assert.equal(figures.echo_ms, 0);
    // A cough over the agent (a voice, no words): a false interruption, resumed all the same.
    const cough = await run('+12025550332', true, '');
    assert.equal(cough.said, long);
    const coughed = cough.latency.interruptions;
    assert.deepEqual(
      [coughed.held, coughed.resumed, coughed.cut, coughed.backchannels, coughed.false_interruptions],
      [1, 1, 0, 0, 1],
    );
  });

  for (const [outcome, expected] of [
    ['busy', { status: 'completed', answered_by: 'no-answer', error_message: 'The line was busy' }],
    ['no-answer', { status: 'completed', answered_by: 'no-answer', error_message: null }],
    ['failed', { status: 'queue_error', error_message: 'Twilio could not place the call (error 32009)' }],
  ] as const) {
    it(`maps a ${outcome} call from its status callback`, async () => {
      const to = `+1202555031${['busy', 'no-answer', 'failed'].indexOf(outcome)}`;
      env.emulator.scripts.set(to, { outcome, ringMs: 100 });
      const sent = await env.t.request('POST', '/v1/calls', { phone_number: to, task: 'Say hello.' });
      const call = await waitForCall(env.t, String(sent.body.call_id));
      for (const [key, value] of Object.entries(expected)) assert.equal(call[key], value, key);
      assert.equal(env.emulator.callTo(to)?.status, outcome);
      assert.equal(env.emulator.callTo(to)?.socket, undefined, 'no stream was opened');
    });
  }

  it('keeps a final status that arrives before the REST answer and before an earlier status', async () => {
    for (const [outcome, expected] of [
      ['busy', { status: 'completed', answered_by: 'no-answer', error_message: 'The line was busy' }],
      ['failed', { status: 'queue_error', error_message: 'Twilio could not place the call (error 32009)' }],
    ] as const) {
      const to = outcome === 'busy' ? '+12025550316' : '+12025550317';
      // Fired initiated, ringing, busy; ringing is delivered last, all before Twilio's REST answer.
      env.emulator.scripts.set(to, { outcome, ringMs: 0, callbackDelayMs: { ringing: 150 } });
      env.emulator.responseDelayMs = 400;
      try {
        const sent = await env.t.request('POST', '/v1/calls', { phone_number: to, task: 'Say hello.' });
        const call = await waitForCall(env.t, String(sent.body.call_id));
        for (const [key, value] of Object.entries(expected)) assert.equal(call[key], value, `${outcome}: ${key}`);
      } finally {
        env.emulator.responseDelayMs = 0;
      }
    }
  });

  it("ends the call on Twilio's completed status callback when the stream's stop comes later", async () => {
    const to = '+12025550318';
    env.hear(['Yes this is Sam speaking']);
    env.emulator.scripts.set(to, { say: [{ atMs: 1500, pcm: voice(700) }], hangupAfterMs: 5000, stopDelayMs: 60_000 });
    const sent = await env.t.request('POST', '/v1/calls', { phone_number: to, task: 'Ask.', first_sentence: FIRST });
    const call = await waitForCall(env.t, String(sent.body.call_id));
    assert.equal(call.status, 'completed');
    assert.equal(call.call_ended_by, 'USER');
    const transcripts = (call.transcripts as { user: string; text: string }[]).map((t) => `${t.user}: ${t.text}`);
    assert.ok(transcripts.includes('user: Yes this is Sam speaking'), transcripts.join('\n'));
    const far = env.emulator.callTo(to)!;
    assert.deepEqual(far.statuses, ['initiated', 'ringing', 'in-progress', 'completed']);
    // Openline closed the stream itself (the emulator's stop was still a minute away).
    const closed = await waitFor('the stream to close', () => far.socketClosed);
    assert.equal(closed.code, 1000);
  });

  it('cancels a ringing call at Twilio when the call is stopped', async () => {
    const to = '+12025550315';
    env.emulator.scripts.set(to, { outcome: 'no-answer', ringMs: 30_000 });
    const sent = await env.t.request('POST', '/v1/calls', { phone_number: to, task: 'Say hello.' });
    const id = String(sent.body.call_id);
    const far = await env.emulator.waitForCallTo(to);
    while (far.status !== 'ringing') await new Promise((resolve) => setTimeout(resolve, 20));
    const stopped = await env.t.request('POST', `/v1/calls/${id}/stop`);
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    const call = await waitForCall(env.t, id);
    assert.equal(call.status, 'canceled');
    assert.equal(far.status, 'canceled');
    assert.ok(env.emulator.requests.some((r) => r.path.includes(far.sid) && r.params.Status === 'canceled'));
  });

  it('asks for async AMD and maps AnsweredBy machine_end_beep into answered_by voicemail', async () => {
    const to = '+12025550320';
    env.emulator.scripts.set(to, { answeredBy: 'machine_end_beep', amdDelayMs: 300, hangupAfterMs: 6000 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Remind them of the appointment.',
      answered_by_enabled: true,
      voicemail_action: 'hangup',
    });
    const id = String(sent.body.call_id);
    const call = await waitForCall(env.t, id);
    const create = env.emulator.requests.find((r) => r.path.endsWith('/Calls.json') && r.params.To === to)!;
    assert.equal(create.params.MachineDetection, 'DetectMessageEnd');
    assert.equal(create.params.AsyncAmd, 'true');
    assert.equal(create.params.AsyncAmdStatusCallback, `${env.publicUrl}/twilio/amd?call_id=${id}`);
    assert.equal(call.answered_by, 'voicemail');
    // Hung up on the machine well before the callee's own hang-up at 6 s.
    assert.equal(call.call_ended_by, 'ASSISTANT');
    assert.ok(
      env.emulator.requests.some(
        (r) => r.params.Status === 'completed' && r.path.includes(env.emulator.callTo(to)!.sid),
      ),
    );
  });

  it('maps AnsweredBy human into answered_by human', async () => {
    const to = '+12025550321';
    env.emulator.scripts.set(to, { answeredBy: 'human', amdDelayMs: 200, hangupAfterMs: 2500 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Say hello.',
      answered_by_enabled: true,
    });
    const call = await waitForCall(env.t, String(sent.body.call_id));
    assert.equal(call.answered_by, 'human');
    assert.equal(call.call_ended_by, 'USER');
  });

  it('keeps an AMD verdict that comes before the media stream starts', async () => {
    const to = '+12025550322';
    env.emulator.scripts.set(to, { answeredBy: 'human', amdDelayMs: 50, streamDelayMs: 600, hangupAfterMs: 2500 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Say hello.',
      answered_by_enabled: true,
    });
    const call = await waitForCall(env.t, String(sent.body.call_id));
    assert.equal(call.answered_by, 'human');
  });

  it('presses an IVR menu key as in-band DTMF tones on the stream (never TwiML Play)', async () => {
    const to = '+12025550325';
    env.hear(['For sales press 1. For billing press 2.']);
    env.emulator.scripts.set(to, { say: [{ atMs: 600, pcm: voice(900) }], hangupAfterMs: 5000 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Reach the billing department about an invoice.',
      answered_by_enabled: true,
      wait_for_greeting: true,
    });
    const call = await waitForCall(env.t, String(sent.body.call_id));
    const far = env.emulator.callTo(to)!;
    const texts = (call.transcripts as { text: string }[]).map((t) => t.text);
    assert.ok(texts.includes('Pressed buttons: 2'), texts.join('\n'));
    // The callee's Goertzel detector hears the key in the audio we sent.
    assert.match(detectDtmf(far.receivedPcm()), /2/);
    // The call's TwiML was never replaced (a <Play digits> would have ended the stream).
    assert.equal(far.twiml.length, 1);
  });

  it("sends a pathway SMS node's text through the call's Twilio account, from the call's number", async () => {
    const to = '+12025550350';
    env.emulator.scripts.set(to, { outcome: 'no-answer', ringMs: 100 });
    const sent = await env.t.request('POST', '/v1/calls', { phone_number: to, task: 'Say hello.' });
    const id = String(sent.body.call_id);
    await waitForCall(env.t, id);
    const ok = await env.t.services.twilio.sendSms({ callId: id, to, body: 'Your appointment: Tuesday 3pm' });
    assert.deepEqual(ok, { ok: true });
    const message = env.emulator.messages.at(-1)!;
    assert.deepEqual(
      { accountSid: message.accountSid, to: message.to, from: message.from, body: message.body },
      { accountSid: SERVER.accountSid, to, from: OUR_NUMBER, body: 'Your appointment: Tuesday 3pm' },
    );
    // Twilio's refusal comes back as a reason the pathway log shows, never as an exception.
    const refused = await env.t.services.twilio.sendSms({ callId: id, to: 'not-a-number', body: 'x' });
    assert.deepEqual(refused, { ok: false, reason: 'Twilio did not accept the message (error 21211)' });
    assert.deepEqual(await env.t.services.twilio.sendSms({ callId: 'no-such-call', to, body: 'x' }), {
      ok: false,
      reason: 'the call no longer exists',
    });
  });

  it('transfers by updating the call with Dial TwiML', async () => {
    const to = '+12025550330';
    env.hear(['I would like to talk to billing please']);
    env.emulator.scripts.set(to, { say: [{ atMs: 1200, pcm: voice(700) }], hangupAfterMs: 15_000 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'If they want to talk to billing, transfer the call.',
      first_sentence: 'Hi.',
      transfer_phone_number: '+14155550999',
    });
    const id = String(sent.body.call_id);
    const call = await waitForCall(env.t, id);
    const far = env.emulator.callTo(to)!;
    assert.deepEqual(far.dialed, { number: '+14155550999', callerId: OUR_NUMBER });
    assert.equal(call.transferred_to, '+14155550999');
    const update = env.emulator.requests.find((r) => r.path.includes(far.sid) && r.params.Twiml);
    assert.ok(update, 'the call was updated with TwiML');
    const dial = parseTwiml(update.params.Twiml!);
    assert.equal(dial.verb, 'dial');
    if (dial.verb === 'dial') {
      assert.deepEqual([dial.number, dial.callerId], ['+14155550999', OUR_NUMBER]);
      // Twilio says how the Dial went: when the target answers, and when it is over.
      assert.equal(dial.action, `${env.publicUrl}/twilio/dial?call_id=${id}`);
      assert.deepEqual(dial.numberCallback, { url: dial.action, events: ['answered'] });
    }
    // The transfer TwiML replaced the stream: Twilio stopped it (its close handshake may still be under way).
    assert.equal(far.socket, undefined, 'the stream ended');
    assert.equal(call.status, 'completed');
    assert.deepEqual(env.emulator.webhookFailures, []);
  });

  it('a transfer whose target is busy, does not answer or fails brings the caller back to the agent, who says so and goes on', async () => {
    for (const [target, outcome, reason, to] of [
      ['+14155550997', 'busy', 'The transfer target is busy', '+12025550335'],
      ['+14155550998', 'no-answer', 'The transfer target did not answer', '+12025550336'],
      ['+14155550996', 'failed', 'Twilio could not reach the transfer target', '+12025550337'],
    ] as const) {
      env.hear(['I would like to talk to billing please', 'No thanks, goodbye']);
      // The callee speaks 1.2 s into each stream: the first, and the one it is back on after the Dial.
      env.emulator.scripts.set(to, { say: [{ atMs: 1200, pcm: voice(700) }], hangupAfterMs: 15_000 });
      env.emulator.scripts.set(target, { outcome, ringMs: 200 });
      const sent = await env.t.request('POST', '/v1/calls', {
        phone_number: to,
        task: 'If they want to talk to billing, transfer the call.',
        first_sentence: 'Hi.',
        transfer_phone_number: target,
      });
      const id = String(sent.body.call_id);
      const call = await waitForCall(env.t, id);
      const far = env.emulator.callTo(to)!;
      assert.equal(far.dialed?.number, target);
      // The Dial's action connected the caller to a new stream of the same call.
      assert.equal(far.twiml.length, 3, outcome);
      const back = parseTwiml(far.twiml[2]!);
      assert.equal(back.verb, 'stream', outcome);
      if (back.verb === 'stream') {
        assert.equal(back.url, `${env.publicUrl.replace('http', 'ws')}/twilio/media`);
        assert.equal(back.parameters.call_id, id);
      }
      // The agent told them and went on: their goodbye was answered, and the agent ended the call.
      const lines = (call.transcripts as { user: string; text: string }[]).map((t) => `${t.user}: ${t.text}`);
      const failed = lines.indexOf(`agent-action: Transfer to ${target} failed: ${reason}`);
      assert.ok(failed > 0, lines.join('; '));
      assert.deepEqual(lines.slice(failed + 1), [
        "assistant: I'm sorry, I couldn't transfer your call. Is there anything else I can help you with?",
        'user: No thanks, goodbye',
        'assistant: Thank you for your time. Goodbye!',
      ]);
      assert.equal(call.call_ended_by, 'ASSISTANT');
      // A live call's failed transfer is an error of the call (seed: call_error with error_message).
      assert.equal(call.queue_status, 'call_error', outcome);
      assert.equal(call.error_message, `Transfer to ${target} failed: ${reason}`);
      assert.equal(call.transferred_to ?? null, null);
      await waitFor('the call to end at Twilio', () => far.status === 'completed');
      assert.deepEqual(env.emulator.webhookFailures, []);
    }
  });

  it("places a call with encrypted_key on the customer's own Twilio account", async () => {
    const stored = await env.t.request('POST', '/v1/accounts', {
      provider: 'twilio',
      account_sid: CUSTOMER.accountSid,
      auth_token: CUSTOMER.authToken,
    });
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    const encryptedKey = String(stored.body.encrypted_key);
    const to = '+12025550340';
    env.emulator.scripts.set(to, { hangupAfterMs: 1500 });
    const sent = await env.t.request(
      'POST',
      '/v1/calls',
      { phone_number: to, task: 'Say hello.', from: '+12025550401' },
      { headers: { encrypted_key: encryptedKey } },
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const call = await waitForCall(env.t, String(sent.body.call_id));
    assert.equal(call.status, 'completed');
    const far = env.emulator.callTo(to)!;
    assert.equal(far.accountSid, CUSTOMER.accountSid);
    assert.equal(far.from, '+12025550401');
    // Its callbacks were signed with the customer's token and accepted.
    assert.deepEqual(far.statuses, ['initiated', 'ringing', 'in-progress', 'completed']);
    assert.deepEqual(env.emulator.webhookFailures, []);
  });
});
