import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';

type Record = { [k: string]: unknown };

/** Polls call details until the call has ended (real time is short: the clock runs 100x). */
async function ended(t: TestApp, id: string, key = t.key): Promise<Record> {
  for (let i = 0; i < 600; i++) {
    const r = await t.request('GET', `/v1/calls/${id}`, undefined, { as: key });
    if (r.body.completed === true || String(r.body.queue_status).endsWith('error')) return r.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`call ${id} did not end`);
}

async function place(t: TestApp, body: Record): Promise<Record> {
  const r = await t.request('POST', '/v1/calls', body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return ended(t, String(r.body.call_id));
}

const roles = (call: Record) =>
  (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`);

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`call engine on the sandbox (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres', clock: new ScaledClock(100) });
      await t.services.startWorkers();
    });
    after(() => t.close());

    it('0100: a person answers, the offline model states the task, they agree and both say goodbye', async () => {
      const call = await place(t, {
        phone_number: '+14155550100',
        task: 'Confirm the dentist appointment for tomorrow at 3pm.',
        answered_by_enabled: true,
      });
      assert.equal(call.queue_status, 'complete', JSON.stringify(call));
      assert.equal(call.status, 'completed');
      assert.equal(call.answered_by, 'human');
      assert.ok(['USER', 'ASSISTANT'].includes(String(call.call_ended_by)));
      assert.ok(Number(call.call_length) > 0);
      assert.ok(Number(call.corrected_duration) > 0);
      assert.ok(call.started_at && call.end_at);
      const lines = roles(call);
      assert.ok(
        lines.some((l) => l.startsWith('user: ')),
        lines.join('\n'),
      );
      assert.ok(
        lines.some((l) => l.startsWith('assistant: ') && l.includes('confirm the dentist appointment')),
        lines.join('\n'),
      );
      assert.ok(String(call.concatenated_transcript).includes('assistant: '));
      assert.equal((call.request_data as Record).model, 'offline');
      assert.equal((call.variables as Record).call_id, call.call_id);
    });
  });
