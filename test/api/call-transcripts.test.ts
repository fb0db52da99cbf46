import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;

describe('the corrected transcript and the active calls (sandbox, clock 50x)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(50) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('GET /v1/calls/{id}/correct: the lines as timed segments, speaker 1 the person and 2 the agent', async () => {
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the appointment.',
      wait_for_greeting: true,
    });
    const call = await waitForCall(t, String(sent.body.call_id));
    // Seed 2.1: a call that names no from comes from the service's pool; the record says which.
    assert.match(String(call.from), /^\+1415555120\d$/);
    const r = await t.request('GET', `/v1/calls/${String(call.call_id)}/correct`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'success');
    const corrected = r.body.corrected as Json[];
    const spoken = (call.transcripts as Json[]).filter((x) => x.user === 'user' || x.user === 'assistant');
    assert.deepEqual(
      corrected.map((c) => c.text),
      spoken.map((x) => x.text),
    );
    assert.equal(corrected[0]!.speaker_label, 'user', 'Sam says hello first');
    assert.equal(corrected[0]!.speaker, 1);
    assert.ok(corrected.some((c) => c.speaker === 2 && c.speaker_label === 'assistant' && c.confidence === 1));
    for (let i = 0; i < corrected.length; i++) {
      const c = corrected[i]!;
      assert.ok((c.end as number) >= (c.start as number), JSON.stringify(c));
      if (i > 0) assert.ok((c.start as number) >= (corrected[i - 1]!.start as number), 'in order');
    }
    const aligned = r.body.aligned as Json[];
    assert.deepEqual(Object.keys(aligned[0]!).sort(), ['c_id', 'created_at', 'id', 'speaker', 'text', 'user']);
    assert.deepEqual(
      aligned.map((a) => [a.id, a.user, a.c_id]),
      spoken.map((x) => [x.id, x.user, call.call_id]),
    );
    assert.equal((await t.request('GET', '/v1/calls/00000000-0000-0000-0000-000000000000/correct')).status, 404);
    assert.equal(
      (await t.request('GET', `/v1/calls/${String(call.call_id)}/correct`, undefined, { as: t.otherKey })).status,
      404,
    );
  });

  it('GET /v1/calls/active lists the queued and live calls of the account only', async () => {
    const later = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Call later.',
      start_time: '2099-01-01 09:00:00 +00:00',
    });
    const mine = await t.request('GET', '/v1/calls/active');
    assert.equal(mine.status, 200);
    const ids = (mine.body.calls as Json[]).map((c) => c.call_id);
    assert.ok(ids.includes(later.body.call_id));
    assert.equal(mine.body.count, ids.length);
    for (const c of mine.body.calls as Json[])
      assert.ok(['queued', 'allocated', 'started', 'new'].includes(String(c.queue_status)));
    const theirs = await t.request('GET', '/v1/calls/active', undefined, { as: t.otherKey });
    assert.ok(!(theirs.body.calls as Json[]).some((c) => c.call_id === later.body.call_id));
  });
});
