import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

describe("an account's concurrent-call limit", () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(10), env: { OPENLINE_MAX_CONCURRENT_CALLS: '2' } });
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('keeps the calls beyond it queued until a place frees, and places them all', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Confirm the order.' });
      assert.equal(r.status, 200);
      ids.push(String(r.body.call_id));
    }
    let most = 0;
    let sawQueued = false;
    const watching = (async () => {
      for (;;) {
        const rows = await t.services.storage.db
          .selectFrom('calls')
          .select('queue_status')
          .where('id', 'in', ids)
          .execute();
        const live = rows.filter((r) => r.queue_status === 'allocated' || r.queue_status === 'started').length;
        most = Math.max(most, live);
        if (live === 2 && rows.some((r) => r.queue_status === 'queued')) sawQueued = true;
        if (rows.every((r) => r.queue_status === 'complete' || r.queue_status.endsWith('error'))) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const calls = await Promise.all(ids.map((id) => waitForCall(t, id)));
    await watching;
    assert.equal(most, 2, 'never more than two at once');
    assert.ok(sawQueued, 'the others waited queued');
    assert.deepEqual(
      calls.map((c) => c.status),
      ['completed', 'completed', 'completed', 'completed', 'completed'],
    );
  });

  it("lets an account's own limit replace the server's", async () => {
    const me = await t.request('GET', '/v1/me', undefined, { as: t.otherKey });
    const accountId = String((me.body.account as { id: string }).id);
    await t.services.accounts.setLimits(accountId, { max_concurrent_calls: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await t.request(
        'POST',
        '/v1/calls',
        { phone_number: '+14155550100', task: 'Confirm the order.' },
        { as: t.otherKey },
      );
      ids.push(String(r.body.call_id));
    }
    let most = 0;
    for (let i = 0; i < 100 && most < 4; i++) {
      const rows = await t.services.storage.db
        .selectFrom('calls')
        .select('queue_status')
        .where('id', 'in', ids)
        .execute();
      most = Math.max(most, rows.filter((r) => r.queue_status === 'started').length);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(most, 4, 'no limit: all four at once');
    await Promise.all(ids.map((id) => waitForCall(t, id, t.otherKey)));
  });
});
