import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { VOICES } from '../../src/domain/voices.js';
import { parseWav, WAVE_FORMAT_MULAW, WAVE_FORMAT_PCM } from '../../src/media/wav.js';
import { espeakAvailable } from '../../src/providers/tts/espeak.js';

describe('voices', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('lists every curated voice with its public fields only', async () => {
    for (const prefix of ['/v1', '/api/v1']) {
      const r = await t.request('GET', `${prefix}/voices`);
      assert.equal(r.status, 200);
      const voices = r.body.voices as Record<string, unknown>[];
      assert.deepEqual(
        voices.map((v) => v.name),
        ['maya', 'mason', 'ryan', 'adriana', 'tina', 'matt', 'evelyn'],
      );
      for (const voice of voices) {
        assert.deepEqual(Object.keys(voice).sort(), [
          'aliases',
          'average_rating',
          'description',
          'id',
          'name',
          'public',
          'tags',
          'total_ratings',
          'voice_id',
        ]);
        assert.equal(voice.average_rating, 0);
        assert.equal(voice.total_ratings, 0);
        assert.equal(voice.public, true);
        assert.ok(Array.isArray(voice.tags));
      }
    }
  });

  it('answers a rename or a delete with 403 (every voice is built in) and 404 for no voice', async () => {
    for (const method of ['PATCH', 'DELETE'] as const) {
      const r = await t.request(method, '/v1/voices/maya', method === 'PATCH' ? { name: 'Maya 2' } : undefined);
      assert.equal(r.status, 403);
      assert.match(String(r.body.message), /maya is one of this server's built-in voices/);
      assert.equal((await t.request(method, '/v1/voices/no-such-voice')).status, 404);
    }
    assert.equal((await t.request('GET', '/v1/voices/maya')).status, 200, 'still there');
  });

  it('gets one voice by id or by name, case-insensitively', async () => {
    for (const voice of VOICES) {
      for (const key of [voice.id, voice.name, voice.name.toUpperCase()]) {
        const r = await t.request('GET', `/v1/voices/${encodeURIComponent(key)}`);
        assert.equal(r.status, 200, key);
        const got = r.body.voice as Record<string, unknown>;
        assert.equal(got.id, voice.id);
        assert.equal(got.name, voice.name);
        assert.equal(got.voice_id, voice.legacy_id);
        assert.equal('espeak' in got, false);
      }
    }
  });

  it('answers 404 for an unknown voice', async () => {
    const r = await t.request('GET', '/v1/voices/nobody');
    assert.equal(r.status, 404);
    assert.equal(r.body.status, 'error');
    assert.equal(r.body.code, 'NOT_FOUND');
  });

  it('requires an API key', async () => {
    assert.equal((await t.request('GET', '/v1/voices', undefined, { as: null })).status, 401);
    assert.equal((await t.request('GET', '/v1/voices/maya', undefined, { as: 'wrong' })).status, 401);
  });

  it('speaks a sample in a voice, and any text through /v1/speak, as WAV from the configured voice (espeak-ng)', async () => {
    const sample = await t.app.inject({
      method: 'POST',
      url: '/v1/voices/maya/sample',
      headers: { authorization: t.key, 'content-type': 'application/json' },
      payload: { text: 'Hello from Openline.' },
    });
    assert.equal(sample.statusCode, 200, sample.body);
    assert.match(String(sample.headers['content-type']), /^audio\/wav/);
    const wav = sample.rawPayload;
    assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
    assert.equal(wav.readUInt16LE(22), 1, 'mono');
    const seconds = (wav.length - 44) / 2 / wav.readUInt32LE(24);
    assert.ok(seconds > 0.5 && seconds < 5, `${seconds} s of speech`);
    let peak = 0;
    for (let at = 44; at + 2 <= wav.length; at += 2) peak = Math.max(peak, Math.abs(wav.readInt16LE(at)));
    assert.ok(peak > 1000, 'audible speech');

    const spoken = await t.app.inject({
      method: 'POST',
      url: '/v1/speak',
      headers: { authorization: t.key, 'content-type': 'application/json' },
      payload: { text: 'Your order ships today.', voice: 'some-hosted-voice', language: 'ENG' },
    });
    assert.equal(spoken.statusCode, 200, spoken.body);
    assert.equal(spoken.rawPayload.toString('ascii', 0, 4), 'RIFF');

    assert.equal((await t.request('POST', '/v1/voices/nobody/sample', { text: 'Hi' })).status, 404);
    const empty = await t.request('POST', '/v1/voices/maya/sample', { text: '' });
    assert.equal(empty.status, 400);
    assert.ok((empty.body.errors as string[]).some((e) => e.startsWith('text')));
  });

  it(
    '/v1/speak answers in the output_format asked for, and says which in its samples',
    { skip: !espeakAvailable() && 'needs espeak-ng' },
    async () => {
      const speak = (body: Record<string, unknown>) =>
        t.app.inject({
          method: 'POST',
          url: '/v1/speak',
          headers: { authorization: t.key, 'content-type': 'application/json' },
          payload: { text: 'Your order ships today.', voice: 'ryan', ...body },
        });
      const cases = [
        ['pcm_8000', WAVE_FORMAT_PCM, 8000, 16],
        ['pcm_16000', WAVE_FORMAT_PCM, 16000, 16],
        ['pcm_24000', WAVE_FORMAT_PCM, 24000, 16],
        ['pcm_44100', WAVE_FORMAT_PCM, 44100, 16],
        ['ulaw_8000', WAVE_FORMAT_MULAW, 8000, 8],
      ] as const;
      for (const [outputFormat, format, sampleRate, bits] of cases) {
        const r = await speak({ output_format: outputFormat });
        assert.equal(r.statusCode, 200, r.body);
        const wav = parseWav(r.rawPayload);
        assert.deepEqual(
          [wav.format, wav.sampleRate, wav.bitsPerSample, wav.channels],
          [format, sampleRate, bits, 1],
          outputFormat,
        );
        const seconds = wav.data.length / (bits / 8) / sampleRate;
        assert.ok(seconds > 0.5 && seconds < 5, `${outputFormat}: ${seconds} s of speech`);
        const sample = await t.request('GET', `/v1/speak/samples/${String(r.headers['x-sample-id'])}`);
        assert.equal((sample.body.data as Record<string, unknown>).output_format, outputFormat);
      }
      // Up to 5,000 characters, as the hosted API takes.
      const long = await speak({ text: 'Your order ships today. '.repeat(60).trim(), output_format: 'pcm_8000' });
      assert.equal(long.statusCode, 200, long.body);
      const tooLong = await t.request('POST', '/v1/speak', { text: 'a'.repeat(5001) });
      assert.equal(tooLong.status, 400);
      assert.match((tooLong.body.errors as string[])[0]!, /^text must be at most 5000 characters/);
      // A pause marker <|N|> is N seconds of silence, not words.
      const seconds = async (text: string) => {
        const wav = parseWav((await speak({ text, output_format: 'pcm_8000' })).rawPayload);
        return wav.data.length / 2 / 8000;
      };
      const plain = await seconds('Hello there. Goodbye now.');
      const paused = await seconds('Hello there. <|2|> Goodbye now.');
      assert.ok(paused - plain > 1.8 && paused - plain < 2.5, `${paused} s with the pause, ${plain} s without`);
      const mp3 = await t.request('POST', '/v1/speak', { text: 'Hi', output_format: 'mp3' });
      assert.equal(mp3.status, 400);
      assert.match((mp3.body.errors as string[])[0]!, /^output_format must be one of: pcm_8000, /);
    },
  );
});
