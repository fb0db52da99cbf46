import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { OpenAPIV3_1 } from 'openapi-types';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { bodyOperations, largeBodies, type BodyOperation } from '../../src/testing/large-bodies.js';
import { CAMPAIGN_BODY_LIMIT } from '../../src/api/campaigns.js';

/**
 * Generous bounds, far above what these requests take (tens of milliseconds; `npm run bench:dos`
 * prints the figures), far below the seconds a quadratic step or an unbounded loop takes: they
 * fail only when one request can hold the server for everybody.
 */
const ANSWER_WITHIN_MS = 3000;
const HEALTHZ_WITHIN_MS = 1000;

/**
 * Every operation of the OpenAPI document fed its largest allowed body of wrong items (and just
 * over its bounds): it is refused with a 4xx in the error shape, soon, while /healthz is answered.
 */
describe('denial of service: the largest bodies of wrong items', () => {
  let t: TestApp;
  let operations: BodyOperation[] = [];
  before(async () => {
    t = await createTestApp();
    await t.app.ready();
    operations = bodyOperations(t.app.swagger() as OpenAPIV3_1.Document);
  });
  after(() => t.close());

  it('finds the operations that take a body', () => {
    assert.ok(operations.length >= 15, `only ${operations.length} operations`);
  });

  it('answers each with a 4xx soon, and /healthz meanwhile', async () => {
    const failures: string[] = [];
    for (const op of operations) {
      const limit = op.path === '/v1/campaigns' ? CAMPAIGN_BODY_LIMIT : t.services.config.bodyLimitBytes;
      for (const body of largeBodies(op, limit)) {
        let healthzWorst = 0;
        let done = false;
        const pinger = (async () => {
          while (!done) {
            const start = performance.now();
            const r = await t.app.inject({ method: 'GET', url: '/healthz' });
            assert.equal(r.statusCode, 200);
            healthzWorst = Math.max(healthzWorst, performance.now() - start);
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        })();
        const start = performance.now();
        const r = await t.app.inject({
          method: op.method as 'POST',
          url: op.url,
          headers: { authorization: t.key, 'content-type': 'application/json' },
          payload: body.payload,
        });
        const took = performance.now() - start;
        done = true;
        await pinger;
        const what = `${op.method} ${op.path} (${body.label})`;
        if (r.statusCode < 400 || r.statusCode >= 500)
          failures.push(`${what}: ${r.statusCode} ${r.body.slice(0, 200)}`);
        else if ((JSON.parse(r.body) as { status?: string }).status !== 'error')
          failures.push(`${what}: no error shape`);
        if (r.body.length > 64 * 1024) failures.push(`${what}: a ${r.body.length}-byte answer`);
        if (took > ANSWER_WITHIN_MS) failures.push(`${what}: answered after ${took.toFixed(0)} ms`);
        if (healthzWorst > HEALTHZ_WITHIN_MS) failures.push(`${what}: /healthz waited ${healthzWorst.toFixed(0)} ms`);
      }
    }
    assert.deepEqual(failures, []);
  });

  it('names the array and its bound when a body holds too many items', async () => {
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Say hello.',
      tools: Array.from({ length: 10_000 }, (_, i) => i),
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.errors, ['tools must have at most 1000 items']);
  });

  it('lists the first problems of a long array and counts the rest', async () => {
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Say hello.',
      tools: Array.from({ length: 500 }, (_, i) => i),
    });
    assert.equal(r.status, 400);
    const errors = r.body.errors as string[];
    assert.equal(errors.length, 11);
    assert.equal(errors[0], 'tools[0] must be a string or an object');
    assert.equal(errors[10], 'tools: 490 more problems not listed');
  });

  it('still names the field inside a union that fits the value', async () => {
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Say hello.',
      tools: [{ name: 'lookup', description: 'Looks up', url: 'ftp://example.com', input_schema: {} }],
    });
    assert.equal(r.status, 400);
    assert.ok(
      (r.body.errors as string[]).some((e) => e.startsWith('tools[0].')),
      JSON.stringify(r.body.errors),
    );
  });
});

describe("Fastify's own errors in the contract's shape", () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  for (const [url, status, code] of [
    ['/v1/calls/%E0%A4%A', 400, 'BAD_URL'],
    ['/v1/tools/%zz', 400, 'BAD_URL'],
    [`/v1/calls/${'a'.repeat(1000)}`, 414, 'URI_TOO_LONG'],
  ] as const) {
    it(`${url.slice(0, 30)} answers ${status} ${code}`, async () => {
      const r = await t.request('GET', url);
      assert.equal(r.status, status);
      assert.equal(r.body.status, 'error');
      assert.equal(r.body.code, code);
      assert.equal(typeof r.body.message, 'string');
    });
  }

  it('drops a __proto__ key as any unknown field, and names a compressed body instead of calling it bad JSON', async () => {
    const raw = (payload: string, headers: Record<string, string> = {}) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/calls',
        headers: { authorization: t.key, 'content-type': 'application/json', ...headers },
        payload,
      });
    const r = await raw(
      '{"phone_number":"+14155550100","task":"Hi","metadata":{"__proto__":{"admin":true},"crm":"7"}}',
    );
    assert.equal(r.statusCode, 200, r.body);
    const record = (await t.request('GET', `/v1/calls/${String(r.json<{ call_id: string }>().call_id)}`)).body;
    assert.deepEqual(record.metadata, { crm: '7' });
    assert.equal(({} as Record<string, unknown>).admin, undefined);
    const gz = await raw('\u001f\u008b', { 'content-encoding': 'gzip' });
    assert.equal(gz.statusCode, 415);
    const gzBody = gz.json<{ message: string }>();
    assert.match(gzBody.message, /Content-Encoding gzip is not supported/);
  });

  it('answers headers over the limit with a 431 in the error shape, from a real socket', async () => {
    const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const r = await fetch(`${origin}/v1/calls?to_number=${'1'.repeat(70_000)}`, { headers: { authorization: t.key } });
    assert.equal(r.status, 431);
    const body = (await r.json()) as Record<string, unknown>;
    assert.deepEqual([body.status, body.code], ['error', 'HEADERS_TOO_LARGE']);
  });
});
