import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import { sqlRateLimitStore } from '../../src/api/rate-limit.js';
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

describe('per-API-key rate limits: the shared window on PostgreSQL', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ postgres: true });
  });
  after(() => t.close());

  /** One request counted at `now` (ms since the epoch): the count and the ms left in its window. */
  function hit(store: FastifyRateLimitStore, key: string, now: number, ctx: TestContext) {
    const clock = ctx.mock.method(Date, 'now', () => now);
    return new Promise<{ current: number; ttl: number }>((resolve, reject) =>
      store.incr(
        key,
        (error, result) => {
          clock.mock.restore();
          if (error) reject(error);
          else resolve(result!);
        },
        60_000,
        5,
      ),
    );
  }

  it("opens a key's window at its first request, so a burst across the top of the minute is counted whole", async (ctx) => {
    const Store = sqlRateLimitStore(t.services.storage.db);
    const store = new Store({ timeWindow: 60_000 });
    const minute = Date.UTC(2026, 10, 27, 12, 0, 0);
    for (let i = 0; i < 5; i++) {
      const r = await hit(store, 'key:a', minute - 500 + i * 100, ctx);
      assert.equal(r.current, i + 1);
    }
    const over = await hit(store, 'key:a', minute + 100, ctx);
    assert.deepEqual(over, { current: 6, ttl: 59_400 });
    // Another key has its own window; the first one's ends a minute after it opened.
    assert.equal((await hit(store, 'key:b', minute + 100, ctx)).current, 1);
    assert.deepEqual(await hit(store, 'key:a', minute + 59_500, ctx), { current: 1, ttl: 60_000 });
    assert.equal((await hit(store, 'key:a', minute + 59_600, ctx)).current, 2);
  });
});
