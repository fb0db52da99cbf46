import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;

describe('POST /v1/sms/send on the sandbox', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('needs a number of the account to send from, and names the fields it misses', async () => {
    const none = await t.request('POST', '/v1/sms/send', { phone_number: '+14155550100', message: 'Hi' });
    assert.equal(none.status, 400);
    assert.match((none.body.errors as string[])[0]!, /^from is required: this account holds no number/);
    const missing = await t.request('POST', '/v1/sms/send', { phone_number: 'abc' });
    assert.equal(missing.status, 400);
    const errors = missing.body.errors as string[];
    assert.ok(
      errors.some((e) => e.startsWith('phone_number ')),
      JSON.stringify(errors),
    );
    assert.ok(errors.includes('message is required'), JSON.stringify(errors));
  });

  it('sends in both body shapes from the account’s numbers, and lists what was sent', async () => {
    const first = String((await t.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body.phone_number);
    const second = String((await t.request('POST', '/v1/inbound/purchase', { area_code: '212' })).body.phone_number);
    const plain = await t.request('POST', '/v1/sms/send', {
      phone_number: '(415) 555-0100',
      message: 'See you at 3pm.',
    });
    assert.equal(plain.status, 200, JSON.stringify(plain.body));
    assert.deepEqual([plain.body.to, plain.body.from, plain.body.carrier], ['+14155550100', first, 'sandbox']);
    const agent = await t.request('POST', '/v1/sms/send', {
      user_number: '+14155550101',
      agent_number: second,
      agent_message: 'Your order is ready.',
    });
    assert.equal(agent.status, 200, JSON.stringify(agent.body));
    assert.equal(agent.body.from, second);
    const wrong = await t.request('POST', '/v1/sms/send', {
      user_number: '+14155550101',
      agent_number: '+12125550999',
      agent_message: 'x',
    });
    assert.equal(wrong.status, 400);
    assert.match((wrong.body.errors as string[])[0]!, /^agent_number \+12125550999 is not a number of this account/);
    const theirs = await t.request(
      'POST',
      '/v1/sms/send',
      { phone_number: '+14155550100', message: 'x', from: first },
      { as: t.otherKey },
    );
    assert.equal(theirs.status, 400, 'another account cannot send from this number');

    const sent = (await t.request('GET', '/v1/sms/messages?direction=outbound')).body.messages as Json[];
    assert.deepEqual(sent.map((m) => m.body).sort(), ['See you at 3pm.', 'Your order is ready.']);
    const fromSecond = (
      await t.request('GET', `/v1/sms/messages?direction=outbound&phone_number=${encodeURIComponent(second)}`)
    ).body.messages as Json[];
    assert.deepEqual(
      fromSecond.map((m) => m.body),
      ['Your order is ready.'],
    );
    const received = (await t.request('GET', '/v1/sms/messages')).body.messages as Json[];
    assert.equal(received.length, 0, 'sent messages are not listed as received');
  });
});
