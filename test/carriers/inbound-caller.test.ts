import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';

/** The README's inbound demo: the sandbox person calls a pizza shop's number and orders, one turn at a time. */
describe('sandbox inbound caller with a purpose (offline model, clock 10x)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(10) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('waits for the greeting, orders, gives the order and address, and says goodbye', async () => {
    const bought = await t.request('POST', '/v1/inbound/purchase', {
      area_code: '415',
      prompt: 'You answer calls for a pizza shop. Take orders.',
    });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    const r = await t.request('POST', '/v1/sandbox/inbound', {
      from: '+14155550100',
      to: String(bought.body.phone_number),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const call = await waitForCall(t, String(r.body.call_id));
    const lines = (call.transcripts as { user: string; text: string }[]).filter(
      (x) => x.user === 'user' || x.user === 'assistant',
    );
    const said = lines.map((x) => `${x.user}: ${x.text}`).join('\n');
    assert.equal(call.queue_status, 'complete', said);
    assert.equal(call.inbound, true);
    // Turns alternate, the agent first: nobody talks over the other.
    lines.forEach((x, i) => assert.equal(x.user, i % 2 === 0 ? 'assistant' : 'user', said));
    assert.match(lines[1]!.text, /order a pizza/, said);
    assert.ok(
      lines.some((x) => x.user === 'user' && /large pepperoni pizza, for delivery to 12 Main Street/.test(x.text)),
      said,
    );
    assert.doesNotMatch(said, /You called me/);
    assert.match(lines.at(-1)!.text, /goodbye|bye/i, said);
  });
});
