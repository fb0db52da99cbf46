import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { A2P_REGISTRATION } from '../../src/testing/a2p.js';
import { CUSTOMER, SERVER, startTwilioTest, type TwilioTest } from './setup.js';

const registration = A2P_REGISTRATION;
const bundles = { twilio_customer_profile_sid: `BU${'a'.repeat(32)}`, twilio_a2p_profile_sid: `BU${'b'.repeat(32)}` };

describe('A2P brand registration on Twilio (Messaging v1 BrandRegistrations through the emulator)', () => {
  let env: TwilioTest;
  before(async () => {
    env = await startTwilioTest();
  });
  after(() => env.close());

  it('asks for the Trust Hub bundles Twilio needs, naming the fields', async () => {
    const r = await env.t.request('POST', '/v1/sms/register', registration);
    assert.equal(r.status, 400);
    const errors = (r.body.errors as string[]).join('\n');
    assert.match(errors, /twilio_customer_profile_sid must be a Twilio Trust Hub bundle SID/);
    assert.match(errors, /twilio_a2p_profile_sid must be/);
    assert.equal(env.emulator.brands.length, 0);
  });

  it('registers the brand with Twilio, pending until Twilio approves it', async () => {
    const r = await env.t.request('POST', '/v1/sms/register', { ...registration, ...bundles });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const data = r.body.data as { registration_id: string; status: string };
    assert.equal(data.status, 'pending');
    const brand = env.emulator.brands.at(-1)!;
    assert.equal(brand.accountSid, SERVER.accountSid);
    assert.equal(brand.customerProfileBundleSid, bundles.twilio_customer_profile_sid);
    assert.equal(brand.a2pProfileBundleSid, bundles.twilio_a2p_profile_sid);
    const status = await env.t.request('POST', '/v1/sms/register/status', { registration_id: data.registration_id });
    assert.equal(status.status, 200);
    assert.deepEqual(status.body, {
      status: 'approved',
      registration_id: data.registration_id,
      brandType: 'STANDARD',
      failureReason: null,
    });
  });

  it("reports Twilio's failure reason, on the customer's own account with encrypted_key", async () => {
    const stored = await env.t.request('POST', '/v1/accounts', {
      provider: 'twilio',
      account_sid: CUSTOMER.accountSid,
      auth_token: CUSTOMER.authToken,
    });
    env.emulator.brandDecision = () => ({
      status: 'FAILED',
      failureReason: 'The EIN does not match the business name',
    });
    const r = await env.t.request(
      'POST',
      '/v1/sms/register',
      { ...registration, ...bundles },
      { headers: { encrypted_key: String(stored.body.encrypted_key) } },
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(env.emulator.brands.at(-1)!.accountSid, CUSTOMER.accountSid);
    const id = (r.body.data as { registration_id: string }).registration_id;
    const status = await env.t.request('POST', '/v1/sms/register/status', { registration_id: id });
    assert.equal(status.body.status, 'failed');
    assert.equal(status.body.failureReason, 'The EIN does not match the business name');
    // Decided once: asked again, the stored verdict stands without another fetch.
    const fetches = env.emulator.requests.filter(
      (q) => q.method === 'GET' && q.path.includes('/BrandRegistrations/'),
    ).length;
    await env.t.request('POST', '/v1/sms/register/status', { registration_id: id });
    assert.equal(
      env.emulator.requests.filter((q) => q.method === 'GET' && q.path.includes('/BrandRegistrations/')).length,
      fetches,
    );
  });
});
