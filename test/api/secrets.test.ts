import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';

type Row = Record<string, unknown>;
const data = (r: { body: Row }) => r.body.data as Row;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`secrets (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
    });
    after(() => t.close());

    it('creates a name many clients send at once for one of them: the others are a 409', async () => {
      const sent = await Promise.all(
        Array.from({ length: 30 }, () => t.request('POST', '/v1/secrets', { name: 'raced', secret: 'x' })),
      );
      assert.deepEqual(sent.map((r) => r.status).sort(), [200, ...Array<number>(29).fill(409)]);
    });

    it('keeps a static secret sealed, shows it without its value, renames and deletes it', async () => {
      const created = await t.request('POST', '/v1/secrets', { name: 'crm_token', secret: 'tok-1234-plain' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.errors, null);
      const id = String(data(created).secret_id);

      const got = await t.request('GET', `/v1/secrets/${id}`);
      const secret = data(got).secret as Row;
      assert.deepEqual(
        { ...secret, created_at: undefined, updated_at: undefined },
        {
          id,
          name: 'crm_token',
          static: true,
          reference: '{{secrets.crm_token}}',
          created_at: undefined,
          updated_at: undefined,
        },
      );
      assert.ok(!JSON.stringify(got.body).includes('tok-1234-plain'));
      const rows = await sql<{ sealed: string }>`select sealed from account_secrets`.execute(t.services.storage.db);
      assert.ok(rows.rows.length > 0);
      for (const row of rows.rows) assert.ok(!row.sealed.includes('tok-1234'), 'stored sealed, not as given');

      const listed = (await t.request('GET', '/v1/secrets')).body.data as Row[];
      assert.ok(listed.some((s) => s.id === id));

      const taken = await t.request('POST', '/v1/secrets', { name: 'crm_token', secret: 'other' });
      assert.equal(taken.status, 409);
      const renamed = await t.request('PATCH', `/v1/secrets/${id}`, { name: 'crm_key' });
      assert.equal((data(renamed).secret as Row).reference, '{{secrets.crm_key}}');

      assert.equal((await t.request('DELETE', `/v1/secrets/${id}`)).status, 200);
      assert.equal((await t.request('GET', `/v1/secrets/${id}`)).status, 404);
    });

    it('shows a refreshed secret\u2019s config with what it sends masked', async () => {
      const created = await t.request('POST', '/v1/secrets', {
        name: 'oauth_token',
        config: {
          url: 'https://auth.example.com/token?client_secret=abc',
          method: 'POST',
          headers: { Authorization: 'Basic c2VjcmV0' },
          body: 'grant_type=client_credentials',
          refresh_interval: 30,
          response: '$.access_token',
        },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const got = data(await t.request('GET', `/v1/secrets/${String(data(created).secret_id)}`)).secret as Row;
      assert.equal(got.static, false);
      assert.deepEqual(got.config, {
        url: 'https://auth.example.com/token?client_secret=********',
        method: 'POST',
        headers: { Authorization: '********' },
        body: '********',
        refresh_interval: 30,
        response: '$.access_token',
      });
    });

    it('checks a body field by field', async () => {
      const cases: [Row, RegExp][] = [
        [{ name: 'has space', secret: 'x' }, /^name must be 1 to 64 letters/],
        [{ name: 'both', secret: 'x', config: { url: 'https://a.example.com', response: 'token' } }, /not both/],
        [{ name: 'neither' }, /^secret or config is required/],
        [{ name: 'bad_url', config: { url: 'not a url', response: 'token' } }, /config\.url/],
        [{ name: 'interval', config: { url: 'https://a.example.com', response: 't', refresh_interval: 0 } }, /refresh/],
        [{ secret: 'x' }, /name/],
      ];
      for (const [body, error] of cases) {
        const r = await t.request('POST', '/v1/secrets', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.ok(
          (r.body.errors as string[]).some((e) => error.test(e)),
          JSON.stringify(r.body),
        );
      }
    });

    it('keeps each account to its own secrets', async () => {
      const id = String(data(await t.request('POST', '/v1/secrets', { name: 'private', secret: 'p' })).secret_id);
      const as = { as: t.otherKey };
      assert.equal((await t.request('GET', `/v1/secrets/${id}`, undefined, as)).status, 404);
      assert.equal((await t.request('PATCH', `/v1/secrets/${id}`, { name: 'mine' }, as)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/secrets/${id}`, undefined, as)).status, 404);
      // Another account may use the same name for its own secret.
      assert.equal((await t.request('POST', '/v1/secrets', { name: 'private', secret: 'q' }, as)).status, 200);
    });
  });

describe('secrets in requests (dynamic_data, sandbox, clock 50x)', () => {
  let t: TestApp;
  let server: http.Server;
  let base: string;
  const seen: { path: string; authorization: string | undefined }[] = [];
  let tokenFetches = 0;
  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/token') {
        tokenFetches++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: { access_token: 'fresh-token-1' } }));
        return;
      }
      seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ tier: 'gold' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await createTestApp({ clock: new ScaledClock(50) });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it('a request gets the secret it names; the call record never holds it', async () => {
    await t.request('POST', '/v1/secrets', { name: 'crm_token', secret: 's3cr3t-value' });
    await t.request('POST', '/v1/secrets', {
      name: 'oauth',
      config: { url: `${base}/token`, response: 'data.access_token', refresh_interval: 60 },
    });
    for (let i = 0; i < 2; i++) {
      const placed = await t.request('POST', '/v1/calls', {
        phone_number: '+14155550100',
        task: 'Say hello.',
        dynamic_data: [
          {
            url: `${base}/static`,
            headers: { Authorization: 'Bearer {{secrets.crm_token}}' },
            response_data: [{ name: 'tier', data: '$.tier' }],
          },
          {
            url: `${base}/refreshed`,
            headers: { Authorization: 'Bearer {{secrets.oauth}}' },
            response_data: [{ name: 'tier2', data: '$.tier' }],
          },
        ],
      });
      assert.equal(placed.status, 200, JSON.stringify(placed.body));
      const call = await waitForCall(t, String(placed.body.call_id));
      assert.equal((call.variables as Row).tier, 'gold');
      const everything = JSON.stringify(call);
      assert.ok(!everything.includes('s3cr3t-value') && !everything.includes('fresh-token-1'), 'not in the record');
    }
    assert.deepEqual(
      seen.filter((s) => s.path === '/static').map((s) => s.authorization),
      ['Bearer s3cr3t-value', 'Bearer s3cr3t-value'],
    );
    assert.deepEqual(
      seen.filter((s) => s.path === '/refreshed').map((s) => s.authorization),
      ['Bearer fresh-token-1', 'Bearer fresh-token-1'],
    );
    assert.equal(tokenFetches, 1, 'fetched once, then kept for its refresh interval');
  });

  it('POST /v1/tools/{id}/test runs a stored tool once, its secret filled in, and answers what a call would get', async () => {
    await t.request('POST', '/v1/secrets', { name: 'shop_key', value: 'k-12345' });
    const created = await t.request('POST', '/v1/tools', {
      name: 'Stock',
      description: 'Looks up stock',
      url: `${base}/stock?sku={{input.sku}}`,
      method: 'GET',
      headers: { Authorization: 'Bearer {{secrets.shop_key}}' },
      input_schema: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] },
      response: { tier: '$.tier' },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = String(created.body.tool_id);
    const ran = await t.request('POST', `/v1/tools/${id}/test`, { input: { sku: 'A-7' } });
    assert.equal(ran.status, 200, JSON.stringify(ran.body));
    assert.deepEqual(ran.body.data, {
      ok: true,
      response: { tier: 'gold' },
      spoken_result: 'tier: gold',
      error: null,
      skipped: false,
    });
    assert.deepEqual(seen.at(-1), { path: '/stock?sku=A-7', authorization: 'Bearer k-12345' });
    const skipped = await t.request('POST', `/v1/tools/${id}/test`, { input: {} });
    assert.equal((skipped.body.data as Row).skipped, true);
    assert.match(String((skipped.body.data as Row).error), /input_schema/);
    assert.equal((await t.request('POST', `/v1/tools/${id}/test`, {}, { as: t.otherKey })).status, 404);
  });
});
