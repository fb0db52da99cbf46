import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { VOICES } from '../../src/domain/voices.js';

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
        assert.deepEqual(Object.keys(voice).sort(), ['description', 'id', 'name', 'public', 'tags', 'voice_id']);
        assert.equal(voice.public, true);
        assert.ok(Array.isArray(voice.tags));
      }
    }
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
});
