import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { RESERVED_TOOL_WORDS } from '../../src/domain/tool-name.js';

const valid = { name: 'Book Appointment', description: 'Books a slot', url: 'https://api.example.com/book' };

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`custom tools (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ env: { OPENLINE_ALLOW_PRIVATE_URLS: 'false' }, postgres: storage === 'postgres' });
    });
    after(() => t.close());

    it('creates a tool and returns its TL- id, readable under /v1 and /api/v1', async () => {
      const created = await t.request('POST', '/v1/tools', {
        ...valid,
        method: 'post',
        body: { slot: '{{input.slot}}' },
      });
      assert.equal(created.status, 200);
      assert.equal(created.body.status, 'success');
      const id = String(created.body.tool_id);
      assert.match(id, /^TL-/);
      for (const prefix of ['/v1', '/api/v1']) {
        const got = await t.request('GET', `${prefix}/tools/${id}`);
        assert.equal(got.status, 200);
        assert.equal(got.body.tool_id, id);
        assert.equal(got.body.method, 'POST');
        assert.equal(got.body.timeout, 10000);
        assert.deepEqual(got.body.body, { slot: '{{input.slot}}' });
      }
    });

    it('rejects every reserved word and built-in name, naming the field', async () => {
      for (const word of RESERVED_TOOL_WORDS) {
        const r = await t.request('POST', '/v1/tools', { ...valid, name: `Lookup ${word}` });
        assert.equal(r.status, 400, word);
        assert.ok(
          (r.body.errors as string[]).some((e) => e.startsWith('name ') && e.includes(word)),
          word,
        );
      }
      for (const name of ['Speak', 'wait', 'TRANSFER', 'Finish']) {
        const r = await t.request('POST', '/v1/tools', { ...valid, name });
        assert.equal(r.status, 400, name);
      }
      const camel = await t.request('POST', '/v1/tools', { ...valid, name: 'PlayMusic' });
      assert.equal(camel.status, 400);
      const fine = await t.request('POST', '/v1/tools', { ...valid, name: 'Display Info' });
      assert.equal(fine.status, 200, 'a reserved word inside another word is allowed');
    });

    it('requires https URLs and reports all problems at once', async () => {
      const r = await t.request('POST', '/v1/tools', {
        name: 'Weather',
        url: 'http://api.example.com',
        method: 'PUT',
        timeout: -1,
      });
      assert.equal(r.status, 400);
      assert.equal(r.body.status, 'error');
      const errors = r.body.errors as string[];
      assert.ok(errors.includes('description is required'), String(errors));
      assert.ok(
        errors.some((e) => e.startsWith('url must begin with https://')),
        String(errors),
      );
      assert.ok(errors.includes('method must be GET or POST'), String(errors));
      assert.ok(
        errors.some((e) => e.startsWith('timeout must be >')),
        String(errors),
      );
      const notUrl = await t.request('POST', '/v1/tools', { ...valid, url: 'https://' });
      assert.equal(notUrl.status, 400);
    });

    it('takes a URL that starts with a prompt variable, checked once the call fills it in', async () => {
      for (const url of ['{{webhook_url}}', '{{ base_url }}/book', '{{api.base}}?slot={{input.slot}}']) {
        const r = await t.request('POST', '/v1/tools', { ...valid, name: 'Book Slot', url });
        assert.equal(r.status, 200, `${url}: ${JSON.stringify(r.body)}`);
        const stored = await t.request('GET', `/v1/tools/${String(r.body.tool_id)}`);
        assert.equal(stored.body.url, url);
      }
      for (const url of ['webhook_url', '{{webhook_url', 'ftp://{{host}}/x', '{{}}'])
        assert.equal((await t.request('POST', '/v1/tools', { ...valid, url })).status, 400, url);
      const created = await t.request('POST', '/v1/calls', {
        phone_number: '+14155550100',
        task: 'Book a slot.',
        dynamic_data: [{ url: '{{crm_url}}', response_data: [{ name: 'plan', data: '$.plan' }] }],
        start_time: '2099-01-01 00:00:00',
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
    });

    it('lists, updates and deletes', async () => {
      const { body } = await t.request('POST', '/v1/tools', { ...valid, name: 'Check Stock' });
      const id = String(body.tool_id);
      const updated = await t.request('POST', `/v1/tools/${id}`, { timeout: 5000 });
      assert.equal(updated.status, 200);
      assert.equal((updated.body.tool as Record<string, unknown>).timeout, 5000);
      assert.equal((updated.body.tool as Record<string, unknown>).name, 'Check Stock');
      const badUpdate = await t.request('POST', `/v1/tools/${id}`, { name: 'Press Button' });
      assert.equal(badUpdate.status, 400);
      const list = await t.request('GET', '/v1/tools');
      assert.ok((list.body.tools as { tool_id: string }[]).some((x) => x.tool_id === id));
      assert.equal((await t.request('DELETE', `/v1/tools/${id}`)).status, 200);
      assert.equal((await t.request('GET', `/v1/tools/${id}`)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/tools/${id}`)).status, 404);
    });

    it('hides tools from other accounts and requires a key', async () => {
      const { body } = await t.request('POST', '/v1/tools', { ...valid, name: 'Private Lookup' });
      const id = String(body.tool_id);
      assert.equal((await t.request('GET', `/v1/tools/${id}`, undefined, { as: t.otherKey })).status, 404);
      assert.equal((await t.request('POST', `/v1/tools/${id}`, { timeout: 1 }, { as: t.otherKey })).status, 404);
      assert.equal((await t.request('DELETE', `/v1/tools/${id}`, undefined, { as: t.otherKey })).status, 404);
      const others = await t.request('GET', '/v1/tools', undefined, { as: t.otherKey });
      assert.deepEqual(others.body.tools, []);
      const anonymous = await t.request('GET', '/v1/tools', undefined, { as: null });
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.body.status, 'error');
      assert.equal((await t.request('GET', '/v1/tools', undefined, { as: 'wrong' })).status, 401);
      assert.equal((await t.request('GET', '/v1/tools', undefined, { as: `Bearer ${t.key}` })).status, 200);
    });
  });
