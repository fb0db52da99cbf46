import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;

describe('blocked numbers', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('are listed, refused by Send Call, batches and campaigns, their inbound calls rejected, and unblocked', async () => {
    const added = await t.request('POST', '/v1/blocked_numbers', {
      phone_number: '(415) 555-0109',
      reason: 'asked not to be called',
    });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.equal((added.body.blocked_number as Json).phone_number, '+14155550109');
    const listed = (await t.request('GET', '/v1/blocked_numbers')).body.blocked_numbers as Json[];
    assert.deepEqual(
      listed.map((b) => [b.phone_number, b.reason]),
      [['+14155550109', 'asked not to be called']],
    );
    assert.deepEqual(
      (await t.request('GET', '/v1/blocked_numbers', undefined, { as: t.otherKey })).body.blocked_numbers,
      [],
    );

    const call = await t.request('POST', '/v1/calls', { phone_number: '+14155550109', task: 'Hi.' });
    assert.equal(call.status, 400);
    assert.match((call.body.errors as string[])[0]!, /^phone_number \+14155550109 is on this account's blocked list/);
    const other = await t.request(
      'POST',
      '/v1/calls',
      { phone_number: '+14155550109', task: 'Hi.' },
      { as: t.otherKey },
    );
    assert.equal(other.status, 200, "another account's list does not apply");

    const batch = await t.request('POST', '/v2/batches/create', {
      global: { task: 'Hi.' },
      call_objects: [{ phone_number: '+14155550100' }, { phone_number: '+14155550109' }],
    });
    assert.equal(batch.status, 400);
    assert.ok(
      (batch.body.errors as string[]).includes(
        "call_objects[1]: phone_number +14155550109 is on this account's blocked list",
      ),
    );
    const campaign = await t.request('POST', '/v1/campaigns', {
      name: 'c',
      task: 'Hi.',
      numbers: ['+14155550100', '4155550109'],
    });
    assert.equal(campaign.status, 400);
    assert.ok((campaign.body.errors as string[]).some((e) => e.includes('+14155550109')));

    const mine = String(
      (await t.request('POST', '/v1/inbound/purchase', { area_code: '415', prompt: 'Take orders.' })).body.phone_number,
    );
    const ring = await t.request('POST', '/v1/sandbox/inbound', { from: '+14155550109', to: mine });
    assert.equal(ring.status, 409);
    assert.match(String(ring.body.message), /blocked list/);

    assert.equal(
      (await t.request('DELETE', '/v1/blocked_numbers/+14155550109', undefined, { as: t.otherKey })).status,
      404,
    );
    assert.equal((await t.request('DELETE', '/v1/blocked_numbers/%2B14155550109')).status, 200);
    assert.equal((await t.request('POST', '/v1/calls', { phone_number: '+14155550109', task: 'Hi.' })).status, 200);
    assert.equal((await t.request('POST', '/v1/blocked_numbers', { phone_number: 'nope' })).status, 400);
  });
});
