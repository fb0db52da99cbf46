import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { buildServices, type Services } from '../../src/services.js';
import { postgresAvailable } from '../../src/testing/postgres.js';
import { outcomeOf } from '../../src/campaigns/dialer.js';
import { nextOpening, windowOpen } from '../../src/campaigns/window.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sandbox numbers: +1 NPA 555-01XX behaves by its last digits whatever the area code. */
const AREAS = ['415', '212', '213', '312', '617', '206', '303', '404', '512', '602', '702', '713'];
const num = (area: string, last: string) => `+1${area}55501${last}`;

async function createCampaign(t: TestApp, body: Record<string, unknown>): Promise<string> {
  const r = await t.request('POST', '/v1/campaigns', { name: 'c', task: 'Say hello.', ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.body.campaign_id);
}

async function state(t: TestApp, id: string): Promise<Record<string, unknown>> {
  const r = await t.request('GET', `/v1/campaigns/${id}`);
  return (r.body.campaigns as Record<string, unknown>[])[0]!;
}

async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface CallFacts {
  to_number: string;
  created_at: string;
  answered_by: string | null;
  queue_status: string;
}

function calls(services: Services, campaignId: string): Promise<CallFacts[]> {
  return services.storage.db
    .selectFrom('calls')
    .select(['to_number', 'created_at', 'answered_by', 'queue_status'])
    .where('campaign_id', '=', campaignId)
    .orderBy('created_at')
    .execute();
}

const perNumber = (list: CallFacts[]) => {
  const counts = new Map<string, number>();
  for (const c of list) counts.set(c.to_number, (counts.get(c.to_number) ?? 0) + 1);
  return counts;
};

describe('campaign dialer (SQLite)', () => {
  const apps: TestApp[] = [];
  const app = async (scale = 100): Promise<TestApp> => {
    const t = await createTestApp({ clock: new ScaledClock(scale) });
    apps.push(t);
    await t.services.startWorkers();
    return t;
  };
  after(async () => {
    for (const t of apps) await t.close();
  });

  it('runs a campaign of a person, a voicemail, no answer and busy to completed with the right counters', async () => {
    const t = await app();
    const numbers = ['00', '01', '04', '05'].map((x) => num('415', x));
    const id = await createCampaign(t, { numbers, answered_by_enabled: true, pacing: { max_concurrent: 4 } });
    await until('completed', async () => (await state(t, id)).campaign_state === 'completed');
    const placed = await calls(t.services, id);
    assert.deepEqual([...perNumber(placed).values()], [1, 1, 1, 1]);
    const c = await state(t, id);
    assert.equal(c.count, 4);
    assert.equal(c.human_answered, 1);
    assert.equal(c.voicemail_answered, 1);
    assert.equal(c.unknown_answered, 0);
    const noAnswer = placed.filter((x) => x.answered_by === 'no-answer').length;
    assert.equal(noAnswer, 2);
    // Every call placed is counted once by answered_by.
    assert.equal(Number(c.human_answered) + Number(c.voicemail_answered) + Number(c.unknown_answered) + noAnswer, 4);
    const states = await t.services.storage.db
      .selectFrom('campaign_numbers')
      .select('state')
      .where('campaign_id', '=', id)
      .execute();
    assert.deepEqual(
      states.map((s) => s.state),
      ['done', 'done', 'done', 'done'],
    );
    const list = await t.request('GET', '/v1/campaigns');
    const summary = (list.body.campaigns as Record<string, unknown>[]).find((x) => x.campaign_id === id)!;
    assert.equal(summary.human_answered, 1);
    assert.equal(summary.campaign_state, 'completed');
  });

  it('never has more live calls than max_concurrent', async () => {
    const t = await app();
    const numbers = AREAS.slice(0, 9).map((a) => num(a, '04'));
    const id = await createCampaign(t, { numbers, pacing: { max_concurrent: 3, calls_per_minute: 1000 } });
    let peak = 0;
    await until('completed', async () => {
      const live = (await calls(t.services, id)).filter(
        (c) => c.queue_status === 'queued' || c.queue_status === 'allocated' || c.queue_status === 'started',
      ).length;
      peak = Math.max(peak, live);
      return (await state(t, id)).campaign_state === 'completed';
    });
    assert.ok(peak <= 3, `peak ${peak}`);
    assert.ok(peak >= 2, `peak ${peak}: the dialer should use the places it has`);
    assert.equal((await calls(t.services, id)).length, 9);
  });

  it('starts at most calls_per_minute calls in any rolling minute, spread evenly', async () => {
    const t = await app();
    const numbers = AREAS.slice(0, 10).map((a) => num(a, '05'));
    const id = await createCampaign(t, { numbers, pacing: { max_concurrent: 50, calls_per_minute: 6 } });
    await until('completed', async () => (await state(t, id)).campaign_state === 'completed');
    const starts = (await calls(t.services, id)).map((c) => Date.parse(c.created_at));
    assert.equal(starts.length, 10);
    for (const s of starts) {
      const inMinute = starts.filter((x) => x >= s && x < s + 60_000).length;
      assert.ok(inMinute <= 6, `${inMinute} calls within a minute`);
    }
    // 10 calls 10 s apart take about 90 s; a burst would take far less.
    assert.ok(starts.at(-1)! - starts[0]! >= 60_000, `span ${starts.at(-1)! - starts[0]!} ms`);
  });

  it('stop_when_answer skips the later steps of a number a person answered', async () => {
    const t = await app();
    const numbers = [num('415', '00'), num('415', '04')];
    const id = await createCampaign(t, {
      numbers,
      answered_by_enabled: true,
      stop_when_answer: true,
      sequences: [{ task: 'First.' }, { task: 'Second.', delay: 0 }],
    });
    await until('completed', async () => (await state(t, id)).campaign_state === 'completed');
    const counts = perNumber(await calls(t.services, id));
    assert.equal(counts.get(num('415', '00')), 1);
    assert.equal(counts.get(num('415', '04')), 2);
  });

  it('retries an unanswered number after wait_period days (clock time)', async () => {
    const t = await app(1000);
    // 0.001 day = 86.4 s of clock time, under 0.1 s of real time at 1000x.
    const id = await createCampaign(t, { numbers: [num('415', '05')], sequence: { retries: 2, wait_period: 0.001 } });
    await until('completed', async () => (await state(t, id)).campaign_state === 'completed');
    const starts = (await calls(t.services, id)).map((c) => Date.parse(c.created_at));
    assert.equal(starts.length, 3);
    assert.ok(starts[1]! - starts[0]! >= 86_000 && starts[2]! - starts[1]! >= 86_000, JSON.stringify(starts));
  });

  it('pause places nothing new, resume continues, stop skips the rest', async () => {
    const t = await app();
    const numbers = AREAS.slice(0, 8).map((a) => num(a, '05'));
    const id = await createCampaign(t, { numbers, pacing: { calls_per_minute: 2 } });
    assert.equal((await t.request('POST', `/v1/campaigns/${id}/pause`)).status, 200);
    const before = (await calls(t.services, id)).length;
    await sleep(800); // 80 s of clock time: 2 or 3 calls had the campaign been active
    assert.equal((await calls(t.services, id)).length, before);
    await t.request('POST', `/v1/campaigns/${id}/resume`);
    await until('a call after resume', async () => (await calls(t.services, id)).length > before);
    assert.equal((await t.request('POST', `/v1/campaigns/${id}/stop`)).status, 200);
    const atStop = (await calls(t.services, id)).length;
    await sleep(800);
    assert.equal((await calls(t.services, id)).length, atStop);
    assert.ok(atStop < 8);
    assert.equal((await state(t, id)).campaign_state, 'stopped');
  });

  it('a calling window closed now places nothing', async () => {
    const t = await app();
    // A one-hour window starting two hours from now in the callees' zone (415: Los Angeles).
    const hour = Number(
      new Intl.DateTimeFormat('en-US', { timeZone: 'America/Los_Angeles', hour: '2-digit', hourCycle: 'h23' }).format(
        t.services.clock.now(),
      ),
    );
    const hh = (h: number) => String(h % 24).padStart(2, '0') + ':00';
    const id = await createCampaign(t, {
      numbers: [num('415', '00')],
      calling_window: { start: hh(hour + 2), end: hh(hour + 3), timezone: 'America/Los_Angeles' },
    });
    await sleep(600);
    assert.equal((await calls(t.services, id)).length, 0);
    assert.equal((await state(t, id)).campaign_state, 'active');
  });
});

describe('calling window and outcomes (units)', () => {
  const window = { start: '21:00', end: '02:00', days: ['fri'], timezone: 'UTC' };
  it('spans midnight and belongs to the day it opens on', () => {
    assert.equal(windowOpen(window, 'UTC', new Date('2024-05-03T22:00:00Z')), true); // Friday
    assert.equal(windowOpen(window, 'UTC', new Date('2024-05-04T01:30:00Z')), true); // Saturday early
    assert.equal(windowOpen(window, 'UTC', new Date('2024-05-04T22:00:00Z')), false); // Saturday night
    assert.equal(
      nextOpening(window, 'UTC', new Date('2024-05-04T22:00:00Z')).toISOString(),
      '2024-05-10T21:00:00.000Z',
    );
  });
  it('reads a person from answered_by, or from a completed conversation without detection', () => {
    assert.equal(outcomeOf({ status: 'completed', answered_by: 'human', call_ended_by: 'USER' }), 'human');
    assert.equal(outcomeOf({ status: 'completed', answered_by: null, call_ended_by: 'ASSISTANT' }), 'human');
    assert.equal(outcomeOf({ status: 'completed', answered_by: 'voicemail', call_ended_by: 'ASSISTANT' }), 'retry');
    assert.equal(outcomeOf({ status: 'completed', answered_by: 'no-answer', call_ended_by: null }), 'retry');
    assert.equal(outcomeOf({ status: 'queue_error', answered_by: null, call_ended_by: null }), 'retry');
  });
});

describe('campaign dialer crash safety', () => {
  it('a restart on the same SQLite file continues without a second call for any number', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-dialer-'));
    const first = await createTestApp({ env: { DATA_DIR: dir }, clock: new ScaledClock(100) });
    await first.services.startWorkers();
    const numbers = AREAS.map((a) => num(a, '04'));
    const id = await createCampaign(first, { numbers, pacing: { max_concurrent: 20, calls_per_minute: 30 } });
    await until('some calls', async () => (await calls(first.services, id)).length >= 3);
    await first.close();
    const second = await createTestApp({ env: { DATA_DIR: dir }, clock: new ScaledClock(100) });
    try {
      await second.services.startWorkers();
      await until('completed', async () => {
        const row = await second.services.storage.db
          .selectFrom('campaigns')
          .select('state')
          .where('id', '=', id)
          .executeTakeFirst();
        return row?.state === 'completed';
      });
      const placed = await calls(second.services, id);
      assert.equal(placed.length, numbers.length);
      assert.deepEqual([...new Set(perNumber(placed).values())], [1]);
    } finally {
      await second.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('two dialers on one PostgreSQL database place each number exactly once', async (ctx) => {
    if (!(await postgresAvailable())) return ctx.skip('no PostgreSQL server');
    const a = await createTestApp({ postgres: true, clock: new ScaledClock(100) });
    const b = await buildServices({ ...a.services.config }, { clock: new ScaledClock(100) });
    try {
      await a.services.startWorkers();
      await b.startWorkers();
      const numbers = AREAS.flatMap((area) => [num(area, '05'), num(area, '04')]);
      const id = await createCampaign(a, { numbers, pacing: { max_concurrent: 8, calls_per_minute: 600 } });
      await until('completed', async () => (await state(a, id)).campaign_state === 'completed', 60_000);
      const placed = await calls(a.services, id);
      assert.equal(placed.length, numbers.length);
      assert.deepEqual([...new Set(perNumber(placed).values())], [1]);
    } finally {
      await b.close();
      // pg-boss ends its connections shortly after stop() resolves; dropping the database first
      // would kill them mid-query.
      await sleep(3000);
      await a.close();
    }
  });

  it('a rolling restart of two processes, each drained, loses no call and places no number twice', async (ctx) => {
    if (!(await postgresAvailable())) return ctx.skip('no PostgreSQL server');
    // One clock for every process: leases written by one are read by the others.
    const clock = new ScaledClock(100);
    const a = await createTestApp({ postgres: true, clock });
    const config = { ...a.services.config };
    const b = await buildServices(config, { clock });
    let aNew: Services | undefined;
    let bNew: Services | undefined;
    try {
      await a.services.startWorkers();
      await b.startWorkers();
      // People who hang up after the first sentence, and numbers that ring out: short calls.
      const numbers = AREAS.flatMap((area) => [num(area, '07'), num(area, '04'), num(area, '05')]);
      const id = await createCampaign(a, { numbers, pacing: { max_concurrent: 6, calls_per_minute: 600 } });
      await until('some calls', async () => (await calls(a.services, id)).length >= 4);
      // Restart a: drained (its live calls finish), closed, started again.
      assert.deepEqual(await a.services.drain(20_000), { cut: 0 });
      aNew = await buildServices(config, { clock });
      await aNew.startWorkers();
      await until('more calls', async () => (await calls(a.services, id)).length >= 12);
      // Then b.
      assert.deepEqual(await b.drain(20_000), { cut: 0 });
      await b.close();
      bNew = await buildServices(config, { clock });
      await bNew.startWorkers();
      await until('completed', async () => (await state(a, id)).campaign_state === 'completed', 60_000);
      const placed = await calls(a.services, id);
      assert.equal(placed.length, numbers.length, 'every number was called');
      assert.deepEqual([...new Set(perNumber(placed).values())], [1], 'no number was called twice');
      const failed = await a.services.storage.db
        .selectFrom('calls')
        .select(['to_number', 'error_message'])
        .where('campaign_id', '=', id)
        .where('queue_status', '!=', 'complete')
        .execute();
      // Busy lines end as call_error "The line was busy": nothing else may fail.
      assert.deepEqual(
        failed.filter((c) => !/busy/i.test(c.error_message ?? '')),
        [],
        'no call was cut or lost',
      );
    } finally {
      await bNew?.close();
      await aNew?.close();
      await sleep(3000);
      await a.close();
    }
  });
});
