import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`batches, v1 and v2 (${storage}, sandbox, clock 50x)`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ clock: new ScaledClock(50), postgres: storage === 'postgres' });
      await t.services.startWorkers();
    });
    after(() => t.close());

    const callsOf = async (batchId: string) =>
      ((await t.request('GET', `/v1/calls?batch_id=${batchId}`)).body.calls as Json[]) ?? [];

    it('POST /v1/batches: base_prompt for every call, call_data variables per call; the calls run and carry batch_id', async () => {
      const r = await t.request('POST', '/v1/batches', {
        base_prompt: 'Confirm the appointment of {{name}}.',
        label: 'Tuesday reminders',
        wait_for_greeting: true,
        call_data: [
          { phone_number: '+14155550100', name: 'Ada' },
          { phone_number: '(415) 555-0107', name: 'Bob' },
        ],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'success');
      const batchId = String(r.body.batch_id);
      const calls = await callsOf(batchId);
      assert.equal(calls.length, 2);
      const records = await Promise.all(calls.map((c) => waitForCall(t, String(c.call_id))));
      const byNumber = new Map(records.map((c) => [c.to, c]));
      const ada = byNumber.get('+14155550100')!;
      assert.equal(ada.batch_id, batchId);
      assert.equal((ada.request_data as Json).task, 'Confirm the appointment of {{name}}.');
      assert.deepEqual(((ada.request_data as Json).request_data as Json).name, 'Ada');
      assert.match(String(ada.concatenated_transcript), /Ada/);
      assert.equal(((byNumber.get('+14155550107')!.request_data as Json).request_data as Json).name, 'Bob');

      const details = await t.request('GET', `/v1/batches/${batchId}`);
      assert.equal(details.status, 200);
      const batch = details.body.batch as Json;
      assert.equal(batch.label, 'Tuesday reminders');
      assert.equal(batch.call_count, 2);
      assert.equal(batch.completed, 2);
      assert.equal(batch.status, 'completed');
      assert.equal((details.body.calls as Json[]).length, 2);
      const listed = (await t.request('GET', '/v1/batches')).body.batches as Json[];
      assert.ok(listed.some((b) => b.batch_id === batchId));
      // Stopping a batch whose calls have all ended stops nothing and leaves it completed.
      const late = await t.request('POST', `/v1/batches/${batchId}/stop`, {});
      assert.equal(late.status, 200, JSON.stringify(late.body));
      assert.equal(late.body.num_calls, 0);
      assert.equal(((await t.request('GET', `/v1/batches/${batchId}`)).body.batch as Json).status, 'completed');

      const analyzed = await t.request('POST', `/v1/batches/${batchId}/analyze`, {
        goal: 'Reminders',
        questions: [['Did they confirm?', 'boolean']],
      });
      assert.equal(analyzed.status, 200, JSON.stringify(analyzed.body));
      assert.deepEqual(Object.keys(analyzed.body.answers as Json).sort(), records.map((c) => c.call_id).sort());
    });

    it('GET /v1/batches answers the hosted {data, errors} too, and both lists take limit and offset', async () => {
      const made: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await t.request('POST', '/v2/batches/create', {
          call_objects: [{ phone_number: '+14155550100', start_time: '2099-01-01 10:00:00' }],
          global: { task: `Batch ${i}` },
        });
        made.push(String((r.body.data as Json).batch_id));
      }
      const v1 = await t.request('GET', '/v1/batches');
      assert.equal(v1.status, 200);
      assert.equal(v1.body.errors, null);
      assert.deepEqual(
        (v1.body.data as Json[]).map((b) => b.id),
        (v1.body.batches as Json[]).map((b) => b.id),
      );
      const newest = made.reverse();
      for (const path of ['/v1/batches', '/v2/batches/list']) {
        const page = await t.request('GET', `${path}?limit=2&offset=1`);
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.deepEqual(
          (page.body.data as Json[]).map((b) => b.id),
          newest.slice(1, 3),
          path,
        );
        const bad = await t.request('GET', `${path}?limit=0&offset=-1`);
        assert.deepEqual(
          (bad.body.errors as string[]).map((e) => e.split(' ')[0]),
          ['limit', 'offset'],
        );
      }
    });

    it('refuses the whole batch when one call is wrong, naming it; nothing is created', async () => {
      const before = ((await t.request('GET', '/v1/batches')).body.batches as Json[]).length;
      const r = await t.request('POST', '/v1/batches', {
        base_prompt: 'Hi',
        call_data: [{ phone_number: '+14155550100' }, { phone_number: '12' }],
      });
      assert.equal(r.status, 400);
      assert.ok(
        (r.body.errors as string[]).some((e) => e.startsWith('call_data[1]')),
        JSON.stringify(r.body),
      );
      const noTask = await t.request('POST', '/v2/batches/create', {
        call_objects: [{ phone_number: '+14155550100' }],
      });
      assert.equal(noTask.status, 400);
      assert.ok(
        (noTask.body.errors as string[]).some((e) => e.startsWith('call_objects[0]: task')),
        JSON.stringify(noTask.body),
      );
      // What the calls name must be the account's own: a pathway, a number to call from.
      const foreign = await t.request('POST', '/v2/batches/create', {
        global: { task: 'Hi', pathway_id: 'not-a-pathway' },
        call_objects: [{ phone_number: '+14155550100' }, { phone_number: '+14155550101', from: '+14155550999' }],
      });
      assert.equal(foreign.status, 400);
      assert.deepEqual(foreign.body.errors, [
        'call_objects[0]: pathway_id is not a pathway of this account',
        'call_objects[1]: pathway_id is not a pathway of this account',
        'call_objects[1]: from +14155550999 is not a number of this account (buy one with POST /v1/inbound/purchase, or leave from out)',
      ]);
      assert.equal(((await t.request('GET', '/v1/batches')).body.batches as Json[]).length, before);
    });

    it('POST /v2/batches/create: global settings, per-call overrides, {data, errors}; list, get, stop; other accounts see nothing', async () => {
      const r = await t.request('POST', '/v2/batches/create', {
        global: { task: 'Offer the spring discount.', max_duration: 5, request_data: { shop: 'Acme' } },
        call_objects: [
          { phone_number: '+14155550100', request_data: { name: 'Ada' } },
          { phone_number: '+14155550101', task: 'Leave a short message.', start_time: '2099-01-01 09:00:00 +00:00' },
        ],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.errors, null);
      const batchId = String((r.body.data as Json).batch_id);
      const calls = await callsOf(batchId);
      const scheduled = calls.find((c) => c.to === '+14155550101')!;
      const full = (await t.request('GET', `/v1/calls/${String(scheduled.call_id)}`)).body;
      assert.equal((full.request_data as Json).task, 'Leave a short message.');
      assert.equal((full.request_data as Json).max_duration, 5);
      assert.deepEqual((full.request_data as Json).request_data, { shop: 'Acme' });
      const first = (await t.request('GET', `/v1/calls/${String(calls.find((c) => c.to === '+14155550100')!.call_id)}`))
        .body;
      assert.deepEqual((first.request_data as Json).request_data, { shop: 'Acme', name: 'Ada' });

      const got = await t.request('GET', `/v2/batches/${batchId}`);
      assert.equal(got.status, 200);
      assert.equal((got.body.data as Json).call_count, 2);
      assert.ok(((await t.request('GET', '/v2/batches/list')).body.data as Json[]).some((b) => b.batch_id === batchId));

      assert.equal((await t.request('GET', `/v2/batches/${batchId}`, undefined, { as: t.otherKey })).status, 404);
      assert.equal((await t.request('POST', `/v1/batches/${batchId}/stop`, {}, { as: t.otherKey })).status, 404);

      const stopped = await t.request('POST', `/v2/batches/${batchId}/stop`, {});
      assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
      assert.ok(((stopped.body.data as Json).num_calls as number) >= 1, 'the scheduled call at least');
      const after = await t.request('GET', `/v1/calls/${String(scheduled.call_id)}`);
      assert.equal(after.body.status, 'canceled');
      await waitForCall(t, String(calls.find((c) => c.to === '+14155550100')!.call_id));
      assert.equal(((await t.request('GET', `/v2/batches/${batchId}`)).body.data as Json).status, 'stopped');
    });

    it('GET /v2/batches/{id}/logs: lifecycle then complete with the counts, newest first; take, skip, direction', async () => {
      const r = await t.request('POST', '/v2/batches/create', {
        global: { task: 'Say hello.' },
        call_objects: [{ phone_number: '+14155550100' }, { phone_number: '+14155550106' }],
      });
      const batchId = String((r.body.data as Json).batch_id);
      const open = await t.request('GET', `/v2/batches/${batchId}/logs`);
      assert.equal(open.status, 200, JSON.stringify(open.body));
      assert.equal(open.body.errors, null);
      for (const call of await callsOf(batchId)) await waitForCall(t, String(call.call_id));

      const logs = await t.request('GET', `/v2/batches/${batchId}/logs`);
      assert.equal(logs.status, 200, JSON.stringify(logs.body));
      const data = logs.body.data as Json[];
      assert.deepEqual(
        data.map((e) => e.event_type),
        ['complete', 'lifecycle'],
      );
      for (const e of data) {
        assert.equal(e.batch_id, batchId);
        assert.equal(typeof e.id, 'string');
        assert.equal(typeof e.org_id, 'string');
        assert.ok(!Number.isNaN(Date.parse(String(e.timestamp))));
      }
      assert.deepEqual(data[0]!.payload, { calls_total: 2, calls_failed: 1, calls_successful: 1 });
      assert.equal((data[1]!.payload as Json).state_change, 'in_progress');
      const asc = await t.request('GET', `/v2/batches/${batchId}/logs?direction=asc&skip=1&take=1`);
      assert.deepEqual(
        (asc.body.data as Json[]).map((e) => e.event_type),
        ['complete'],
      );
      assert.equal((await t.request('GET', `/v2/batches/${batchId}/logs`, undefined, { as: t.otherKey })).status, 404);
    });
  });
