import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OutboundClient, OutboundError, type Resolver } from '../../src/outbound/http.js';
import { blockedReason } from '../../src/outbound/addresses.js';
import { startReceiver } from './receiver.js';

/** Every class of address CONTRACT.md section 8 refuses, as a literal. */
const BLOCKED: [string, string][] = [
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.255', 'carrier-grade NAT'],
  ['169.254.169.254', 'link-local'],
  ['169.254.0.1', 'link-local'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['0.0.0.0', 'unspecified'],
  ['255.255.255.255', 'broadcast'],
  ['240.0.0.1', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['::1', 'loopback'],
  ['::', 'unspecified'],
  ['fc00::1', 'private'],
  ['fd12:3456::1', 'private'],
  ['fe80::1', 'link-local'],
  ['ff02::1', 'multicast'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'link-local'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:0:10.0.0.1', 'private'],
  ['::ffff:0:7f00:1', 'loopback'],
  ['::ffff:0:169.254.169.254', 'link-local'],
  ['::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'link-local'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b:1::c0a8:101', 'private'],
  ['2002:7f00:1::', 'loopback'],
  ['2001:0:4136:e378::1', 'Teredo'],
  ['2001:db8::1', 'reserved'],
];

const PUBLIC = [
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '100.128.0.1',
  '2606:4700:4700::1111',
  '::ffff:8.8.8.8',
  '::ffff:0:8.8.8.8',
  '64:ff9b::808:808',
];

describe('address classification', () => {
  for (const [ip, why] of BLOCKED) {
    it(`${ip} is refused (${why})`, () => {
      const reason = blockedReason(ip);
      assert.ok(reason, `${ip} was allowed`);
      assert.match(reason, new RegExp(why.split(' ')[0] ?? why, 'i'));
    });
  }
  for (const ip of PUBLIC) it(`${ip} is public`, () => assert.equal(blockedReason(ip), null));
});

describe('guarded outbound client', () => {
  let server: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    server = await startReceiver((req, res) => {
      if (req.url === '/big') {
        res.end('x'.repeat(2 * 1024 * 1024));
      } else if (req.url === '/big-chunked') {
        res.write('y'.repeat(800 * 1024));
        res.write('y'.repeat(800 * 1024));
        res.end();
      } else if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 2000);
      } else if (req.url?.startsWith('/redirect?to=')) {
        res.writeHead(302, { location: decodeURIComponent(req.url.slice('/redirect?to='.length)) }).end();
      } else if (req.url === '/loop') {
        res.writeHead(307, { location: '/loop' }).end();
      } else if (req.url === '/see-other') {
        res.writeHead(303, { location: '/echo' }).end();
      } else {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ method: req.method, body: req.body, host: req.headers.host }));
      }
    });
  });
  after(() => server.close());

  // Test names resolve to the blocked classes; nothing else resolves.
  const names: Record<string, string[]> = {
    'loopback.test': ['127.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    'private.test': ['10.0.0.5'],
    'cgnat.test': ['100.64.1.1'],
    'v6loop.test': ['::1'],
    'ula.test': ['fd00::1'],
    'mapped.test': ['::ffff:192.168.0.1'],
    'nat64.test': ['64:ff9b::a9fe:a9fe'],
    // One public and one private answer: the private one refuses the request.
    'mixed.test': ['93.184.216.34', '10.0.0.1'],
  };
  let lookups = 0;
  const resolve: Resolver = async (host) => {
    lookups++;
    const found = names[host];
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  const strict = new OutboundClient({ allowPrivate: false, resolve });

  async function refused(client: OutboundClient, url: string, reason: string): Promise<OutboundError> {
    const error = await client.request({ url, method: 'POST', body: '{"secret":"s3cr3t"}' }).then(
      () => assert.fail(`${url} was requested`),
      (e: unknown) => e,
    );
    assert.ok(error instanceof OutboundError, String(error));
    assert.equal(error.reason, reason, error.message);
    assert.doesNotMatch(error.message, /s3cr3t|token=/);
    return error;
  }

  for (const [ip] of BLOCKED) {
    it(`refuses the literal http://${ip.includes(':') ? `[${ip}]` : ip}/ without connecting`, async () => {
      const before = server.received.length;
      const host = ip.includes(':') ? `[${ip}]` : ip;
      await refused(strict, `http://${host}:${server.port}/hook?token=abc`, 'blocked_address');
      assert.equal(server.received.length, before);
    });
  }

  for (const name of Object.keys(names)) {
    it(`refuses ${name} (resolves to ${names[name]?.join(', ')})`, async () => {
      const before = server.received.length;
      const error = await refused(strict, `https://${name}:${server.port}/x?token=abc`, 'blocked_address');
      assert.match(error.message, new RegExp(name));
      assert.equal(server.received.length, before);
    });
  }

  it('refuses localhost through the system resolver', async () => {
    const system = new OutboundClient({ allowPrivate: false });
    await refused(system, `http://localhost:${server.port}/`, 'blocked_address');
  });

  // The local server itself is let through; where it redirects to is checked.
  const loopbackOnly = new OutboundClient({
    allowPrivate: false,
    resolve,
    blocked: (ip) => (ip === '127.0.0.1' ? null : blockedReason(ip)),
  });
  for (const target of [
    'http://169.254.169.254/latest/meta-data/',
    'http://metadata.test/latest/meta-data/',
    'http://[::ffff:10.0.0.1]/',
    'http://nat64.test/',
    'http://10.0.0.1:8080/admin',
  ]) {
    it(`refuses a redirect to ${target}`, async () => {
      await refused(loopbackOnly, `${server.url}/redirect?to=${encodeURIComponent(target)}`, 'blocked_address');
    });
  }

  it('follows a redirect to an allowed address, resolving each name once', async () => {
    lookups = 0;
    const r = await loopbackOnly.request({
      url: `${server.url}/redirect?to=${encodeURIComponent(`http://loopback.test:${server.port}/echo`)}`,
    });
    assert.equal(r.status, 200);
    assert.equal((JSON.parse(r.body) as { host: string }).host, `loopback.test:${server.port}`);
    assert.equal(lookups, 1);
    assert.equal(r.url, `http://loopback.test:${server.port}/echo`);
  });

  it('gives up after 5 redirects', async () => {
    const before = server.received.length;
    await refused(loopbackOnly, `${server.url}/loop`, 'too_many_redirects');
    assert.equal(server.received.length - before, 6);
  });

  it('continues a POST answered 303 as a GET', async () => {
    const open = new OutboundClient({ allowPrivate: true });
    const r = await open.request({ url: `${server.url}/see-other`, method: 'POST', body: 'x' });
    assert.equal((JSON.parse(r.body) as { method: string }).method, 'GET');
  });

  it('with private URLs allowed, reaches loopback and returns status, headers, body, duration', async () => {
    const open = new OutboundClient({ allowPrivate: true });
    const r = await open.request({ url: `${server.url}/echo`, method: 'POST', body: 'hello' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal((JSON.parse(r.body) as { method: string }).method, 'POST');
    assert.ok(r.durationMs >= 0);
  });

  it('times out', async () => {
    const open = new OutboundClient({ allowPrivate: true });
    const started = Date.now();
    await refused(new OutboundClient({ allowPrivate: true, timeoutMs: 200 }), `${server.url}/slow`, 'timeout');
    assert.ok(Date.now() - started < 1500);
    await assert.rejects(open.request({ url: `${server.url}/slow`, timeoutMs: 100 }), { reason: 'timeout' });
  });

  it('stops reading a response beyond the size limit', async () => {
    const open = new OutboundClient({ allowPrivate: true });
    await assert.rejects(open.request({ url: `${server.url}/big` }), { reason: 'too_large' });
    await assert.rejects(open.request({ url: `${server.url}/big-chunked` }), { reason: 'too_large' });
    const small = await open.request({ url: `${server.url}/big-chunked`, maxBytes: 2 * 1024 * 1024 });
    assert.equal(small.body.length, 1600 * 1024);
  });

  it('reports a refused connection, an unknown name and an invalid URL', async () => {
    const open = new OutboundClient({ allowPrivate: true, resolve });
    await assert.rejects(open.request({ url: 'http://127.0.0.1:1/' }), { reason: 'connection' });
    await assert.rejects(open.request({ url: 'http://nowhere.test/' }), { reason: 'connection' });
    await assert.rejects(open.request({ url: 'ftp://example.com/' }), { reason: 'invalid_url' });
    await assert.rejects(open.request({ url: 'not a url' }), { reason: 'invalid_url' });
  });

  it('requires https:// for tools unless private URLs are allowed; webhooks may use http://', async () => {
    await assert.rejects(strict.request({ url: 'http://example.com/', httpsOnly: true }), { reason: 'invalid_url' });
    // http:// passes the scheme check for webhooks; the address check then applies.
    await assert.rejects(strict.request({ url: 'http://metadata.test/' }), { reason: 'blocked_address' });
    const open = new OutboundClient({ allowPrivate: true });
    assert.equal((await open.request({ url: `${server.url}/echo`, httpsOnly: true })).status, 200);
  });
});
