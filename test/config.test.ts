import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('has working defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.publicUrl, 'http://localhost:8080');
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.allowPrivateUrls, false);
    assert.equal(c.sandboxA2pDelaySeconds, 60);
    assert.equal(c.workers, true);
    assert.equal(c.audioAheadMs, 40);
  });

  const bad: [string, string][] = [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['LOG_LEVEL', 'loud'],
    ['OPENLINE_API_KEY', 'short'],
    ['OPENLINE_PUBLIC_URL', 'ftp://example.com'],
    ['OPENLINE_DATABASE_URL', 'mysql://localhost/x'],
    ['OPENLINE_ALLOW_PRIVATE_URLS', 'maybe'],
    ['OPENLINE_SANDBOX_A2P_DELAY_SECONDS', '-1'],
    ['OPENLINE_SANDBOX_A2P_DELAY_SECONDS', '1.5'],
    ['OPENLINE_SANDBOX_PRICE_PER_MINUTE', 'free'],
    ['OPENLINE_WORKERS', 'sometimes'],
    ['OPENLINE_AUDIO_AHEAD_MS', '500'],
    ['OPENLINE_AUDIO_AHEAD_MS', 'a little'],
    ['OPENLINE_VOICE_ALIASES', 'ravi=nobody'],
    ['OPENLINE_VOICE_ALIASES', 'ravi'],
  ];
  for (const [name, value] of bad) {
    it(`stops on ${name}=${value} with a message naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (e: unknown) => e instanceof ConfigError && e.variable === name && e.message.startsWith(name),
      );
    });
  }

  it('reads the settings it is given', () => {
    const c = loadConfig({
      PORT: '9000',
      OPENLINE_PUBLIC_URL: 'https://voice.example.com/',
      OPENLINE_DATABASE_URL: 'postgres://localhost/openline',
      OPENLINE_ALLOW_PRIVATE_URLS: 'true',
      OPENLINE_SANDBOX_A2P_DELAY_SECONDS: '0',
      OPENLINE_SANDBOX_PERSONAS: '/a:/b',
      OPENLINE_AUDIO_AHEAD_MS: '70',
    });
    assert.equal(c.port, 9000);
    assert.equal(c.publicUrl, 'https://voice.example.com');
    assert.equal(c.databaseUrl, 'postgres://localhost/openline');
    assert.equal(c.allowPrivateUrls, true);
    assert.equal(c.sandboxA2pDelaySeconds, 0);
    assert.deepEqual(c.personaDirs, ['/a', '/b']);
    assert.equal(c.audioAheadMs, 60, 'whole frames');
  });
});
