import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

describe('a global node on the offline model (sandbox, clock 100x)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(100) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('a bare yes to a question its edges do not expect never jumps to a topic such as "wants to speak to a person"', async () => {
    const created = await t.request('POST', '/v1/pathway/create', {
      name: 'Visit',
      nodes: [
        { id: 'ask', type: 'Default', data: { name: 'Ask', isStart: true, text: 'Is tomorrow at nine good for you?' } },
        { id: 'bye', type: 'End Call', data: { name: 'Bye', text: 'See you then. Goodbye!' } },
        {
          id: 'person',
          type: 'Transfer Call',
          data: {
            name: 'Person',
            isGlobal: true,
            globalLabel: 'wants to speak to a person',
            transferNumber: '+14155550110',
            text: 'Connecting you.',
          },
        },
      ],
      edges: [{ id: 'time', source: 'ask', target: 'bye', label: 'gave a day and time' }],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      pathway_id: created.body.pathway_id,
      wait_for_greeting: true,
    });
    const call = await waitForCall(t, String(sent.body.call_id));
    // Sam agrees ("Yes, ...") without giving a day: no edge fits, and a yes is no topic.
    assert.equal(call.transferred_to, null, String(call.concatenated_transcript));
    assert.doesNotMatch(JSON.stringify(call.pathway_logs), /global:person/);
  });
});
