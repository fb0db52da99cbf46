import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitForCall } from '../../src/testing/harness.js';
import { FakeTts } from '../../src/testing/fake-tts.js';
import { startTwilioTest, voicedFrames, type TwilioTest } from './setup.js';

describe('a Twilio call whose configured voice refuses every sentence', () => {
  let env: TwilioTest;
  let tts: FakeTts;
  before(async () => {
    // The OpenAI-protocol voice answers 401 to a client without its key: not worth retrying.
    tts = await FakeTts.start({ apiKey: 'the-right-key' });
    env = await startTwilioTest({
      configuredAudio: true,
      env: { OPENLINE_TTS: 'openai', OPENLINE_TTS_BASE_URL: `${tts.url}/v1` },
    });
  });
  after(async () => {
    await env.close();
    await tts.close();
  });

  it('the local voice says the sentence and the rest of the call; the callee hears it', async () => {
    const to = '+12025550377';
    env.emulator.scripts.set(to, { say: [], hangupAfterMs: 4000 });
    const sent = await env.t.request('POST', '/v1/calls', {
      phone_number: to,
      task: 'Ask about the order.',
      first_sentence: 'Hello, this is the order desk calling about your delivery.',
    });
    assert.equal(sent.status, 200);
    const call = await waitForCall(env.t, String(sent.body.call_id));
    assert.equal(call.queue_status, 'complete');
    assert.equal(call.error_message, null);
    const far = env.emulator.callTo(to)!;
    // espeak-ng's voice reached the callee: well over a second of voiced audio.
    assert.ok(voicedFrames(far.heardPcm()) >= 50, `voiced frames heard: ${voicedFrames(far.heardPcm())}`);
    // The refusing voice was asked once, then left alone.
    assert.equal(tts.requests.length, 1);
  });
});
