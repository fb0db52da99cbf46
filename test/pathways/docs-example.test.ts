import fs from 'node:fs';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { jsonBlockAfter } from '../docs/shell.js';

/** The `pathway.json` of docs/api.md, as written there. */
function docsPathway(): Record<string, unknown> {
  const doc = fs.readFileSync('docs/api.md', 'utf8');
  return jsonBlockAfter(doc, 'save it as `pathway.json`') as Record<string, unknown>;
}

describe('the documented pathway example on the offline model (sandbox, clock 100x)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(100) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('a person who agrees is transferred to sales, as the example means', async () => {
    const created = await t.request('POST', '/v1/pathway/create', docsPathway());
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      pathway_id: created.body.pathway_id,
      wait_for_greeting: true,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const call = await waitForCall(t, String(sent.body.call_id));
    assert.equal(call.queue_status, 'complete', String(call.concatenated_transcript));
    assert.equal(call.transferred_to, '+14155550110', String(call.concatenated_transcript));
    assert.doesNotMatch(String(call.concatenated_transcript), /didn't quite catch that/);
  });
});
