import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { OpenAPI } from 'openapi-types';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { operationsHtml } from '../../src/api/reference-page.js';

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: OpenAPI.Document & { openapi?: string; paths?: Record<string, Record<string, unknown>> };
  before(async () => {
    t = await createTestApp();
    const r = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(r.statusCode, 200);
    doc = JSON.parse(r.body) as typeof doc;
  });
  after(() => t.close());

  it('is a valid OpenAPI 3.1 document (checked by an OpenAPI validator)', async () => {
    assert.equal(doc.openapi, '3.1.0');
    await SwaggerParser.validate(structuredClone(doc) as OpenAPI.Document);
  });

  it('documents every endpoint of the seed and of CONTRACT.md section 9, once, under /v1', () => {
    const operations = Object.entries(doc.paths ?? {}).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const expected = [
      'POST /v1/calls',
      'GET /v1/calls',
      'GET /v1/calls/{id}',
      'POST /v1/calls/{id}/stop',
      'POST /v1/calls/active/stop',
      'GET /v1/calls/{id}/recording',
      'POST /v1/calls/{id}/analyze',
      'GET /v1/inbound',
      'POST /v1/inbound/purchase',
      'POST /v1/tools',
      'GET /v1/tools',
      'GET /v1/agents',
      'POST /v1/agents',
      'GET /v1/voices',
      'GET /v1/campaigns',
      'POST /v1/campaigns',
      'POST /v1/pathway/create',
      'GET /v1/pathway',
      'POST /v1/sms/register',
      'POST /v1/sms/register/status',
      'POST /v1/sms/webhook/update',
      'GET /v1/me',
      'POST /v1/accounts',
      'POST /v1/webhook-secret',
    ];
    for (const op of expected) assert.ok(operations.includes(op), `${op} is not documented`);
    assert.ok(
      operations.some((op) => /^POST \/v1\/inbound\/\{/.test(op)),
      'Update Inbound Details',
    );
    assert.ok(
      operations.some((op) => /^POST \/v1\/pathway\/\{[^}]+\}\/version$/.test(op)),
      'Create Pathway Version',
    );
    assert.ok(
      operations.some((op) => /^POST \/v1\/campaigns\/\{[^}]+\}$/.test(op)),
      'Campaign Details',
    );
    assert.ok(!operations.some((op) => op.includes(' /api/v1/')), 'the /api/v1 copies are not documented twice');
    assert.equal(new Set(operations).size, operations.length);
  });

  it('names the server as the reader reached it', async () => {
    const r = await t.app.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { host: 'voice.example.com', 'x-forwarded-proto': 'https' },
    });
    assert.deepEqual((JSON.parse(r.body) as { servers: unknown }).servers, [{ url: 'https://voice.example.com' }]);
  });

  it('serves the rendered documentation at /docs without a key', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(r.statusCode, 200);
    assert.match(String(r.headers['content-type']), /html/);
  });

  it('/docs lists every operation as plain HTML, for a browser that does not run its scripts', async () => {
    for (const url of ['/docs', '/docs/']) {
      const r = await t.app.inject({ method: 'GET', url });
      assert.equal(r.statusCode, 200);
      const page = r.body;
      assert.match(page, /<title>Openline API reference<\/title>/);
      // Inside the element Swagger UI draws into (and replaces once its scripts have run).
      const listing = /<div id="swagger-ui">([\s\S]*?)<\/div>/.exec(page)?.[1] ?? '';
      assert.match(listing, /<a href="\/openapi\.json">\/openapi\.json<\/a>/);
      assert.match(listing, /docs\/api\.md/);
      for (const [path, operations] of Object.entries(doc.paths ?? {})) {
        for (const method of Object.keys(operations).filter((m) => /^(get|post|put|patch|delete)$/.test(m))) {
          assert.ok(listing.includes(`<code>${method.toUpperCase()} ${path}</code>`), `${method} ${path} is listed`);
        }
      }
      assert.match(listing, /<li><code>POST \/v1\/calls<\/code>: Send Call<\/li>/);
      // Nothing a content security policy without 'unsafe-inline' would refuse: scripts come from
      // files, and the listing has no script, style or event handler of its own.
      assert.deepEqual(
        [...page.matchAll(/<script\b[^>]*>/g)].filter((m) => !/\ssrc="/.test(m[0])),
        [],
        'no inline script',
      );
      assert.doesNotMatch(listing, /<script|<style|\sstyle=|\son[a-z]+=/i);
    }
  });

  it('the listing escapes what it shows', () => {
    const html = operationsHtml({
      info: { title: 'A <b> API' },
      paths: { '/v1/x': { get: { summary: 'Read <x> & "y"', tags: ['T'] } } },
    });
    assert.match(html, /<h1>A &lt;b&gt; API<\/h1>/);
    assert.match(html, /<li><code>GET \/v1\/x<\/code>: Read &lt;x&gt; &amp; &quot;y&quot;<\/li>/);
  });
});
