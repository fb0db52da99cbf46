import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import type { Clock } from '../../src/clock.js';
import { CampaignDialer } from '../../src/campaigns/dialer.js';

/** A clock that moves only when told: every dispatch sees exactly the time the test sets. */
class ManualClock implements Clock {
  readonly scale = 1;
  constructor(private ms: number) {}
  now(): Date {
    return new Date(this.ms);
  }
  set(ms: number): void {
    this.ms = ms;
  }
  sleep(): Promise<void> {
    return new Promise(() => undefined);
  }
  setTimer(): () => void {
    return () => undefined;
  }
}

const T = Date.parse('2026-05-04T15:00:00.000Z');

/**
 * The pacing slots, with time under the test's control: the workers are not started, so calls
 * stay queued (their numbers stay `dialing`) and only the dialer's own decisions are counted.
 */
describe('campaign pacing slots (manual clock)', () => {
  let t: TestApp;
  let dialer: CampaignDialer;
  const clock = new ManualClock(T);

  const placed = async (id: string) =>
    (
      await t.services.storage.db
        .selectFrom('calls')
        .select('created_at')
        .where('campaign_id', '=', id)
        .orderBy('created_at')
        .execute()
    ).map((c) => Date.parse(c.created_at) - T);

  async function at(ms: number): Promise<void> {
    clock.set(T + ms);
    await dialer.tick();
  }

  async function create(body: Record<string, unknown>): Promise<string> {
    const numbers = Array.from({ length: 200 }, (_, i) => `+1415${String(2_000_000 + i).padStart(7, '0')}`);
    const r = await t.request('POST', '/v1/campaigns', { name: 'p', task: 'Hi.', numbers, ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return String(r.body.campaign_id);
  }

  before(async () => {
    t = await createTestApp({ clock });
    const { db, dialect } = t.services.storage;
    dialer = new CampaignDialer({ db, dialect, clock, queue: t.services.queue });
  });
  after(async () => {
    await dialer.stop();
    await t.close();
  });

  it('starts the first call at once, then one per slot, catching up late slots', async () => {
    clock.set(T);
    const id = await create({ pacing: { max_concurrent: 1000, calls_per_minute: 60 } });
    await at(0);
    assert.deepEqual(await placed(id), [0]);
    await at(400);
    assert.equal((await placed(id)).length, 1, 'no slot before 1 s');
    await at(1000);
    assert.equal((await placed(id)).length, 2);
    // A dispatch 3.5 s late takes the slots it missed (2, 3, 4 and 5 s), so the rate holds.
    await at(5500);
    assert.equal((await placed(id)).length, 6);
    await at(5900);
    assert.equal((await placed(id)).length, 6);
    await at(6000);
    assert.equal((await placed(id)).length, 7);
    // 30 s late: only the slots of the last 10 s are caught up (11 of them: 26 s ... 36 s).
    await at(36_000);
    assert.equal((await placed(id)).length, 18);
    // Then one per slot again.
    for (let s = 37; s <= 66; s++) await at(s * 1000);
    const starts = await placed(id);
    assert.equal(starts.length, 48);
    // The rolling-minute cap: never more than 60 in any minute, catch-up included.
    for (const s of starts) assert.ok(starts.filter((x) => x >= s && x < s + 60_000).length <= 60);
    await t.request('POST', `/v1/campaigns/${id}/stop`);
  });

  it('saves up no burst across a pause, nor while max_concurrent is reached', async () => {
    clock.set(T + 100_000);
    const id = await create({ pacing: { max_concurrent: 3, calls_per_minute: 60 } });
    await at(100_000);
    await at(101_000);
    await at(102_000);
    assert.equal((await placed(id)).length, 3);
    // At max_concurrent for 20 s: the slots pass unused.
    await at(122_000);
    assert.equal((await placed(id)).length, 3);
    // A place frees up (the call ended): one call, not the 20 missed slots' worth.
    await t.services.storage.db
      .updateTable('campaigns')
      .set({ config: JSON.stringify({ ...(await config(id)), pacing: { max_concurrent: 100, calls_per_minute: 60 } }) })
      .where('id', '=', id)
      .execute();
    await at(122_500);
    assert.equal((await placed(id)).length, 4);
    await at(123_500);
    assert.equal((await placed(id)).length, 5);
    // Paused for a minute, then resumed: the first slot is the resume, and no catch-up.
    assert.equal((await t.request('POST', `/v1/campaigns/${id}/pause`)).status, 200);
    await at(150_000);
    assert.equal((await placed(id)).length, 5);
    clock.set(T + 184_000);
    assert.equal((await t.request('POST', `/v1/campaigns/${id}/resume`)).status, 200);
    await at(184_000);
    assert.equal((await placed(id)).length, 6);
    await at(184_900);
    assert.equal((await placed(id)).length, 6);
    await at(185_000);
    assert.equal((await placed(id)).length, 7);
    await t.request('POST', `/v1/campaigns/${id}/stop`);
  });

  it('dials a fractional rate: 0.5 calls a minute is one call every two minutes', async () => {
    clock.set(T + 300_000);
    const id = await create({ pacing: { max_concurrent: 10, calls_per_minute: 0.5 } });
    await at(300_000);
    await at(360_000);
    assert.equal((await placed(id)).length, 1);
    await at(420_000);
    assert.equal((await placed(id)).length, 2);
    await t.request('POST', `/v1/campaigns/${id}/stop`);
  });

  async function config(id: string): Promise<Record<string, unknown>> {
    const row = await t.services.storage.db
      .selectFrom('campaigns')
      .select('config')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    return JSON.parse(row.config) as Record<string, unknown>;
  }
});
