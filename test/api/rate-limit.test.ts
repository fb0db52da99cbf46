import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

for (const postgres of [false, true]) {
  describe(`per-API-key rate limits (${postgres ? 'postgres' : 'sqlite'})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres, env: { OPENLINE_RATE_LIMIT_PER_MINUTE: '5' } });
    });
    after(() => t.close());

    it('answers 429 with Retry-After in the error shape past the limit, per key', async () => {
      for (let i = 0; i < 5; i++) assert.equal((await t.request('GET', '/v1/tools')).status, 200);
      const over = await t.request('GET', '/v1/tools');
      assert.equal(over.status, 429);
      assert.equal(over.body.status, 'error');
      assert.equal(over.body.code, 'RATE_LIMITED');
      assert.match(String(over.body.message), /5 a minute/);
      assert.ok(Number(over.headers['retry-after']) > 0, String(over.headers['retry-after']));
      // Another account's key has its own count.
      assert.equal((await t.request('GET', '/v1/tools', undefined, { as: t.otherKey })).status, 200);
      // Routes that need no key are not limited.
      assert.equal((await t.request('GET', '/healthz')).status, 200);
    });

    it('lets an account have its own limit', async () => {
      const me = await t.request('GET', '/v1/me', undefined, { as: t.otherKey });
      const accountId = String((me.body.account as { id: string }).id);
      assert.equal(await t.services.accounts.setLimits(accountId, { rate_limit_per_minute: 100 }), true);
      for (let i = 0; i < 10; i++) {
        assert.equal((await t.request('GET', '/v1/tools', undefined, { as: t.otherKey })).status, 200);
      }
    });

    it('does not count requests without a valid key', async () => {
      for (let i = 0; i < 8; i++)
        assert.equal((await t.request('GET', '/v1/tools', undefined, { as: 'nope' })).status, 401);
    });
  });
}
