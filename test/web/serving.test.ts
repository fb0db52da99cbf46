import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ensureDashboardBuilt } from '../../src/testing/browser.js';
import { dashboard } from '../../src/web.js';
import { installErrorHandling } from '../../src/errors.js';
import type { Api } from '../../src/api/types.js';

describe('the dashboard is served at / with its deep links, and the API keeps its own 404s', () => {
  let t: TestApp;
  before(async () => {
    ensureDashboardBuilt();
    t = await createTestApp();
  });
  after(() => t.close());

  const get = (url: string, accept = 'text/html,application/xhtml+xml') =>
    t.app.inject({ method: 'GET', url, headers: { accept } });

  it('serves the app at / and at every deep link, with a strict content security policy', async () => {
    for (const url of ['/', '/calls', '/calls/2d0c1f7e-0000-4000-8000-000000000000', '/pathways/abc', '/settings']) {
      const r = await get(url);
      assert.equal(r.statusCode, 200, url);
      assert.match(r.headers['content-type'] as string, /text\/html/);
      assert.match(r.body, /<div id="root">/);
      assert.match(r.headers['content-security-policy'] as string, /default-src 'self'/);
      assert.match(r.headers['content-security-policy'] as string, /frame-ancestors 'none'/);
      assert.equal(r.headers['cache-control'], 'no-cache');
    }
  });

  it('serves the hashed assets for good', async () => {
    const page = (await get('/')).body;
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page)?.[1];
    assert.ok(script, 'the page names its script');
    const r = await get(script, '*/*');
    assert.equal(r.statusCode, 200);
    assert.match(r.headers['content-type'] as string, /javascript/);
    assert.match(r.headers['cache-control'] as string, /immutable/);
    // An asset that is not there (a tab loaded before the server was updated asks for an old
    // one) is a 404, not the page: a browser would fail to run the page as a script.
    for (const url of ['/assets/pathway-0ld.js', '/assets/index-0ld.css', '/client/gone.js']) {
      const gone = await get(url, '*/*');
      assert.equal(gone.statusCode, 404, url);
      assert.doesNotMatch(gone.headers['content-type'] as string, /text\/html/, url);
    }
  });

  it('leaves the API, docs and probes as they are: unknown API paths are JSON 404s', async () => {
    for (const url of ['/v1/nothing', '/api/v1/nothing', '/v2/nothing', '/.well-known/oauth-protected-resource']) {
      const r = await get(url);
      assert.equal(r.statusCode, 404, url);
      assert.equal(r.json().code, 'ROUTE_NOT_FOUND');
    }
    assert.equal((await get('/healthz', 'application/json')).json().status, 'ok');
    assert.equal((await get('/openapi.json', 'application/json')).statusCode, 200);
    // A client asking for JSON at a path that is not the API's gets the API's 404, not a page.
    const json = await get('/whatever', 'application/json');
    assert.equal(json.statusCode, 404);
    assert.equal(json.json().code, 'ROUTE_NOT_FOUND');
    const post = await t.app.inject({ method: 'POST', url: '/calls' });
    assert.equal(post.statusCode, 404);
    // An API path in another case is the API's 404 too, never the page.
    for (const url of ['/V1/nothing', '/API/v1/me']) {
      const r = await get(url);
      assert.equal(r.statusCode, 404, url);
      assert.equal(r.json().code, 'ROUTE_NOT_FOUND');
    }
  });

  it('reads a doubled slash as one, as a base URL ending in a slash makes it (//v1/me)', async () => {
    const headers = { authorization: t.key, 'content-type': 'application/json' };
    for (const url of ['//v1/me', '//api/v1/me', '/v1//me']) {
      const r = await t.app.inject({ method: 'GET', url, headers });
      assert.equal(r.statusCode, 200, url);
      assert.equal(r.json().status, 'success', url);
    }
    const posted = await t.app.inject({
      method: 'POST',
      url: '//v1/blocked_numbers',
      headers,
      payload: { phone_number: '+14155550107' },
    });
    assert.equal(posted.statusCode, 200, posted.body);
  });

  it('says how to build it when it was not built', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-no-dashboard-'));
    const app = Fastify();
    const site = dashboard(empty);
    installErrorHandling(app, { page: site.deepLink });
    await site.register(app as unknown as Api);
    const r = await app.inject({ method: 'GET', url: '/calls', headers: { accept: 'text/html' } });
    assert.equal(r.statusCode, 200);
    assert.match(r.body, /npm run build:web/);
    await app.close();
    fs.rmSync(empty, { recursive: true });
  });
});
