import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { espeakAvailable } from '../../src/providers/tts/espeak.js';
import { SAMPLES_KEPT } from '../../src/store/speech-samples.js';
import { voiceByName } from '../../src/domain/voices.js';
import { ScaledClock } from '../../src/clock.js';

type Json = Record<string, unknown>;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`speech samples: what POST /v1/speak said is kept (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      // A fast clock: samples made in a row have times of their own (the newest are kept).
      t = await createTestApp({ postgres: storage === 'postgres', clock: new ScaledClock(1000) });
    });
    after(() => t.close());

    it(
      'lists and returns each generation, with its audio as base64 or as the WAV file',
      { skip: !espeakAvailable() && 'needs espeak-ng' },
      async () => {
        const spoken = await t.app.inject({
          method: 'POST',
          url: '/v1/speak',
          headers: { authorization: t.key, 'content-type': 'application/json' },
          payload: { text: 'Your order ships today.', voice: 'ryan' },
        });
        assert.equal(spoken.statusCode, 200);
        const id = String(spoken.headers['x-sample-id']);
        await t.app.inject({
          method: 'POST',
          url: '/v1/speak',
          headers: { authorization: t.key, 'content-type': 'application/json' },
          payload: { text: 'Hello.' },
        });

        const list = await t.request('GET', '/v1/speak/samples');
        assert.equal(list.status, 200, JSON.stringify(list.body));
        const samples = list.body.data as Json[];
        assert.deepEqual(
          samples.map((s) => s.text),
          ['Hello.', 'Your order ships today.'],
          'newest first',
        );
        const ryan = voiceByName('ryan')!.id;
        assert.equal(samples[1]!.voice_id, ryan);
        assert.match(String(samples[1]!.output_format), /^pcm_\d+$/);
        assert.equal('audio_data' in samples[1]!, false, 'the list has no audio');
        const byVoice = await t.request('GET', '/v1/speak/samples?voice_id=ryan');
        assert.deepEqual(
          (byVoice.body.data as Json[]).map((s) => s.id),
          [id],
        );

        const one = await t.request('GET', `/v1/speak/samples/${id}`);
        const data = one.body.data as Json;
        assert.equal(data.text, 'Your order ships today.');
        const wav = Buffer.from(String(data.audio_data), 'base64');
        assert.deepEqual(wav, spoken.rawPayload, 'the very audio POST /v1/speak answered');
        const file = await t.app.inject({
          method: 'GET',
          url: `/v1/speak/samples/${id}?format=audio`,
          headers: { authorization: t.key },
        });
        assert.equal(file.headers['content-type'], 'audio/wav');
        assert.deepEqual(file.rawPayload, spoken.rawPayload);

        assert.equal((await t.request('GET', `/v1/speak/samples/${id}`, undefined, { as: t.otherKey })).status, 404);
        assert.deepEqual((await t.request('GET', '/v1/speak/samples', undefined, { as: t.otherKey })).body.data, []);
        assert.equal((await t.request('GET', '/v1/speak/samples?limit=0')).status, 400);
      },
    );

    it(`keeps each account's newest ${SAMPLES_KEPT}`, async () => {
      const wav = Buffer.from('RIFF....WAVE');
      const account = (await t.services.accounts.create('many')).account.id;
      const ids: string[] = [];
      for (let i = 0; i < SAMPLES_KEPT + 3; i++)
        ids.push(
          (
            await t.services.speechSamples.add(account, {
              text: `n${i}`,
              voiceId: 'v',
              outputFormat: 'pcm_8000',
              wav,
              latencyMs: 1,
            })
          ).id,
        );
      const kept = await t.services.speechSamples.list(account, { limit: 1000, offset: 0 });
      assert.equal(kept.length, SAMPLES_KEPT);
      assert.equal(await t.services.speechSamples.get(account, ids[0]!), undefined, 'the oldest went');
      assert.ok(await t.services.speechSamples.get(account, ids.at(-1)!));
    });
  });
