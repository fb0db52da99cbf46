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

describe('inbound calls on the sandbox', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(100) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('a sandbox person calls an inbound number and its agent answers with the configured prompt', async () => {
    const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: '415' });
    const number = String(bought.body.phone_number);
    const configured = await t.request('POST', `/v1/inbound/${encodeURIComponent(number)}`, {
      prompt: 'Take a message for the dental office.',
      first_sentence: 'Smile Dental, how can I help?',
    });
    assert.equal(configured.status, 200, JSON.stringify(configured.body));
    const r = await t.request('POST', '/v1/sandbox/inbound', { from: '+12125550100', to: number });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.caller_call_id, null);
    const call = await ended(t, String(r.body.call_id));
    assert.equal(call.inbound, true);
    assert.equal(call.to, number);
    assert.equal(call.from, '+12125550100');
    assert.equal(call.queue_status, 'complete');
    const lines = roles(call);
    assert.ok(
      lines[0]?.startsWith('assistant: Smile Dental') || lines.includes('assistant: Smile Dental, how can I help?'),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => l.startsWith('user: ')),
      lines.join('\n'),
    );
  });

  it('a call between two numbers of the account connects agent to agent, each with its record', async () => {
    const a = String((await t.request('POST', '/v1/inbound/purchase', {})).body.phone_number);
    const b = String((await t.request('POST', '/v1/inbound/purchase', {})).body.phone_number);
    await t.request('POST', `/v1/inbound/${encodeURIComponent(a)}`, { prompt: 'Confirm the order for tomorrow.' });
    await t.request('POST', `/v1/inbound/${encodeURIComponent(b)}`, { prompt: 'Answer questions about orders.' });
    const r = await t.request('POST', '/v1/sandbox/inbound', { from: a, to: b });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const callee = await ended(t, String(r.body.call_id));
    const caller = await ended(t, String(r.body.caller_call_id));
    assert.equal(callee.inbound, true);
    assert.equal(caller.inbound, false);
    assert.equal(caller.from, a);
    assert.equal(caller.to, b);
    assert.ok(
      roles(callee).some((l) => l.startsWith('user: ')),
      roles(callee).join('\n'),
    );
    assert.ok(
      roles(caller).some((l) => l.startsWith('user: ')),
      roles(caller).join('\n'),
    );
  });

  it('refuses numbers the account does not hold', async () => {
    const r = await t.request('POST', '/v1/sandbox/inbound', { from: '+12125550100', to: '+14155550999' });
    assert.equal(r.status, 404);
    const other = String((await t.request('POST', '/v1/inbound/purchase', {}, { as: t.otherKey })).body.phone_number);
    assert.equal((await t.request('POST', '/v1/sandbox/inbound', { from: '+12125550100', to: other })).status, 404);
  });
});
