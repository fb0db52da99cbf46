import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('SIP: listens on 0.0.0.0:5060 by default, takes a trunk, names the variable of a bad value', () => {
    const defaults = loadConfig({}).sip;
    assert.deepEqual(defaults.listen, { host: '0.0.0.0', port: 5060 });
    assert.deepEqual(defaults.rtpPorts, { min: 10000, max: 20000 });
    assert.equal(defaults.trunk, undefined);
    const set = loadConfig({
      OPENLINE_SIP_TRUNK: 'sip:u:p@trunk.example.com',
      OPENLINE_SIP_LISTEN: '127.0.0.1:5080',
      OPENLINE_RTP_PORTS: '40000-40100',
      OPENLINE_SIP_PUBLIC_ADDRESS: '203.0.113.5',
      OPENLINE_SIP_ALLOW: '198.51.100.0/24, 192.0.2.7',
    }).sip;
    assert.equal(set.trunk?.host, 'trunk.example.com');
    assert.deepEqual(set.listen, { host: '127.0.0.1', port: 5080 });
    assert.equal(set.publicAddress, '203.0.113.5');
    assert.deepEqual(set.allow, ['198.51.100.0/24', '192.0.2.7']);
    assert.equal(loadConfig({ OPENLINE_SIP_LISTEN: 'off' }).sip.listen, null);
    for (const [name, value] of [
      ['OPENLINE_SIP_TRUNK', 'pbx.example.com'],
      ['OPENLINE_SIP_LISTEN', '5060'],
      ['OPENLINE_RTP_PORTS', '80-90'],
      ['OPENLINE_SIP_ALLOW', 'everyone'],
    ] as const)
      assert.throws(
        () => loadConfig({ [name]: value }),
        (e: unknown) => e instanceof ConfigError && e.message.includes(name),
      );
  });

  it('SIP: transports and registration in the trunk, TLS files, each bad value named', () => {
    const tcp = loadConfig({ OPENLINE_SIP_TRUNK: 'sip:u:p@trunk.example.com;transport=tcp;register=true' }).sip;
    assert.equal(tcp.trunk?.transport, 'tcp');
    assert.equal(tcp.trunk?.register, true);
    assert.equal(loadConfig({ OPENLINE_SIP_TRUNK: 'sips:trunk.example.com' }).sip.trunk?.port, 5061);
    assert.deepEqual(loadConfig({}).sip.tls, { port: 5061 });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-config-'));
    try {
      const pem = path.join(dir, 'cert.pem');
      fs.writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n');
      const notPem = path.join(dir, 'cert.txt');
      fs.writeFileSync(notPem, 'hello');
      const tls = loadConfig({
        OPENLINE_SIP_TLS_CERT: pem,
        OPENLINE_SIP_TLS_KEY: pem,
        OPENLINE_SIP_TLS_CA: pem,
        OPENLINE_SIP_TLS_PORT: '5071',
      }).sip.tls;
      assert.deepEqual(tls, { certFile: pem, keyFile: pem, caFile: pem, port: 5071 });
      for (const [env, name] of [
        [{ OPENLINE_SIP_TRUNK: 'sip:trunk.example.com;transport=sctp' }, 'OPENLINE_SIP_TRUNK'],
        [{ OPENLINE_SIP_TRUNK: 'sip:trunk.example.com;register=true' }, 'OPENLINE_SIP_TRUNK'],
        [{ OPENLINE_SIP_TLS_CERT: path.join(dir, 'missing.pem'), OPENLINE_SIP_TLS_KEY: pem }, 'OPENLINE_SIP_TLS_CERT'],
        [{ OPENLINE_SIP_TLS_CERT: pem, OPENLINE_SIP_TLS_KEY: notPem }, 'OPENLINE_SIP_TLS_KEY'],
        [{ OPENLINE_SIP_TLS_CERT: pem }, 'OPENLINE_SIP_TLS_KEY'],
        [{ OPENLINE_SIP_TLS_KEY: pem }, 'OPENLINE_SIP_TLS_CERT'],
        [{ OPENLINE_SIP_TLS_PORT: '70000' }, 'OPENLINE_SIP_TLS_PORT'],
      ] as const)
        assert.throws(
          () => loadConfig(env),
          (e: unknown) => e instanceof ConfigError && e.message.includes(name),
          name,
        );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

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
