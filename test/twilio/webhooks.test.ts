import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { waitForCall } from '../../src/testing/harness.js';
import { execFileSync } from 'node:child_process';
import { twilioSignature } from '../../src/carriers/twilio/signature.js';
import { parseTwiml } from '../../src/testing/twilio-emulator.js';
import { CUSTOMER, SERVER, startTwilioTest, type TwilioTest } from './setup.js';

function speech(text: string): Buffer {
  return execFileSync('espeak-ng', ['--stdout', '-v', 'en-us', text], { maxBuffer: 16 << 20 });
}

describe('Twilio webhooks, inbound calls, numbers and SMS through the emulator', () => {
  let env: TwilioTest;
  before(async () => {
    env = await startTwilioTest();
  });
  after(() => env.close());

  async function post(path: string, params: Record<string, string>, signature?: string) {
    const url = `${env.publicUrl}${path}`;
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(signature === undefined ? {} : { 'x-twilio-signature': signature }),
      },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, body: await response.text(), type: response.headers.get('content-type') };
  }

  it('refuses webhooks with a missing or wrong X-Twilio-Signature with 403', async () => {
    const params = { CallSid: 'CA1', AccountSid: SERVER.accountSid, From: '+14155550123', To: '+12025550999' };
    assert.equal((await post('/twilio/voice', params)).status, 403);
    assert.equal((await post('/twilio/voice', params, 'bm90IGEgc2lnbmF0dXJl')).status, 403);
    // Signed by another account's token.
    const wrong = twilioSignature(CUSTOMER.authToken, `${env.publicUrl}/twilio/voice`, params);
    assert.equal((await post('/twilio/voice', params, wrong)).status, 403);
    // Signed for another URL.
    const elsewhere = twilioSignature(SERVER.authToken, `${env.publicUrl}/twilio/sms`, params);
    assert.equal((await post('/twilio/voice', params, elsewhere)).status, 403);
    // Callbacks for a call that does not exist: no account to check against.
    const status = { CallSid: 'CA1', CallStatus: 'completed' };
    const url = `${env.publicUrl}/twilio/status?call_id=nope`;
    assert.equal(
      (await post('/twilio/status?call_id=nope', status, twilioSignature(SERVER.authToken, url, status))).status,
      403,
    );
    assert.equal((await post('/twilio/amd', status)).status, 403);
    assert.equal((await post('/twilio/sms', { To: '+12025550999', From: '+1', Body: 'x' })).status, 403);
  });

  it('rejects a signed call to a number nobody holds', async () => {
    const params = { CallSid: 'CA1', AccountSid: SERVER.accountSid, From: '+14155550123', To: '+12025550999' };
    const reply = await post(
      '/twilio/voice',
      params,
      twilioSignature(SERVER.authToken, `${env.publicUrl}/twilio/voice`, params),
    );
    assert.equal(reply.status, 200);
    assert.match(reply.type ?? '', /text\/xml/);
    assert.equal(parseTwiml(reply.body).verb, 'reject');
  });

  it('closes a media stream whose start carries an unknown token', async () => {
    const socket = new WebSocket(`${env.publicUrl.replace('http', 'ws')}/twilio/media`);
    await new Promise((resolve) => socket.on('open', resolve));
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    socket.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    socket.send(
      JSON.stringify({
        event: 'start',
        sequenceNumber: '1',
        start: {
          accountSid: SERVER.accountSid,
          streamSid: 'MZ1',
          callSid: 'CA1',
          customParameters: { token: 'guess' },
        },
        streamSid: 'MZ1',
      }),
    );
    assert.equal(await closed, 1008);
  });

  it('buys a number through AvailablePhoneNumbers and IncomingPhoneNumbers, pointing it at Openline', async () => {
    const bought = await env.t.request('POST', '/v1/inbound/purchase', {
      area_code: '202',
      country_code: 'US',
      prompt: 'You answer for the Openline test shop. Help the caller.',
      first_sentence: 'Openline test shop, how can I help?',
    });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    const phone = String(bought.body.phone_number);
    assert.equal(phone, '+12025550300');
    assert.equal(bought.body.carrier, 'twilio');
    const search = env.emulator.requests.find((r) => r.path.includes('/AvailablePhoneNumbers/US/Local.json'))!;
    assert.equal(search.params.AreaCode, '202');
    const number = env.emulator.numbers.find((n) => n.phoneNumber === phone)!;
    assert.equal(number.accountSid, SERVER.accountSid);
    assert.equal(number.voiceUrl, `${env.publicUrl}/twilio/voice`);
    assert.equal(number.smsUrl, `${env.publicUrl}/twilio/sms`);
    const listed = await env.t.request('GET', `/v1/inbound/${encodeURIComponent(phone)}`);
    assert.equal(listed.status, 200);
  });

  it("inserts numbers the customer's own Twilio account holds (encrypted_key), pointing them at Openline", async () => {
    const stored = await env.t.request('POST', '/v1/accounts', {
      provider: 'twilio',
      account_sid: CUSTOMER.accountSid,
      auth_token: CUSTOMER.authToken,
    });
    const headers = { encrypted_key: String(stored.body.encrypted_key) };
    // Numbers the customer bought on Twilio before, pointing elsewhere; one held by the server's account.
    env.emulator.numbers.push(
      {
        sid: 'PN01',
        accountSid: CUSTOMER.accountSid,
        phoneNumber: '+13125550410',
        voiceUrl: 'https://old.example/v',
        smsUrl: '',
      },
      { sid: 'PN02', accountSid: CUSTOMER.accountSid, phoneNumber: '+13125550411', voiceUrl: '', smsUrl: '' },
      { sid: 'PN03', accountSid: SERVER.accountSid, phoneNumber: '+13125550412', voiceUrl: '', smsUrl: '' },
    );
    const r = await env.t.request(
      'POST',
      '/v1/inbound/insert',
      { numbers: ['+13125550410', '(312) 555-0411', '+13125550412', 'not a number'] },
      { headers },
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.inserted, ['+13125550410', '+13125550411']);
    assert.deepEqual(
      (r.body.failed as { phone_number: string; reason: string }[]).map((f) => f.reason),
      ['numbers[2] is not a number of this Twilio account', 'numbers[3] must not contain letters or an extension'],
    );
    for (const sid of ['PN01', 'PN02']) {
      const number = env.emulator.numbers.find((n) => n.sid === sid)!;
      assert.deepEqual(
        [number.voiceUrl, number.smsUrl],
        [`${env.publicUrl}/twilio/voice`, `${env.publicUrl}/twilio/sms`],
      );
    }
    assert.equal(
      env.emulator.numbers.find((n) => n.sid === 'PN03')!.voiceUrl,
      '',
      "another account's number untouched",
    );
    const listed = await env.t.request('GET', '/v1/inbound/+13125550410');
    assert.equal(listed.body.carrier, 'twilio');

    const again = await env.t.request('POST', '/v1/inbound/insert', { numbers: ['+13125550410'] }, { headers });
    assert.equal(again.status, 400);
    assert.deepEqual(again.body.errors, ['numbers[0] is already held']);
    const unknownKey = await env.t.request(
      'POST',
      '/v1/inbound/insert',
      { numbers: ['+13125550411'] },
      { headers: { encrypted_key: 'nope' } },
    );
    assert.equal(unknownKey.status, 400);
    const none = await env.t.request('POST', '/v1/inbound/insert', { numbers: [] }, { headers });
    assert.equal(none.status, 400);

    // Removed from Openline (as the hosted API's Delete Inbound Phone Number, and by DELETE): the
    // Twilio account keeps it.
    assert.equal(
      (await env.t.request('POST', '/v1/inbound/+13125550410/delete', {}, { as: env.t.otherKey })).status,
      404,
    );
    const removed = await env.t.request('POST', '/v1/inbound/+13125550410/delete', {}, { headers });
    assert.deepEqual(removed.body, {
      status: 'success',
      message: 'Successfully deleted number from database: +13125550410',
    });
    assert.equal((await env.t.request('GET', '/v1/inbound/+13125550410')).status, 404);
    assert.equal((await env.t.request('DELETE', '/v1/inbound/13125550411')).status, 200);
    assert.equal((await env.t.request('DELETE', '/v1/inbound/13125550411')).status, 404);
    assert.ok(
      env.emulator.numbers.some((n) => n.sid === 'PN01'),
      'still on the Twilio account',
    );
    // And it can come back.
    const back = await env.t.request('POST', '/v1/inbound/insert', { numbers: ['+13125550410'] }, { headers });
    assert.deepEqual(back.body.inserted, ['+13125550410']);
  });

  it('inserts a number attached to a TwiML App or a SIP trunk by detaching it, so its calls reach Openline', async () => {
    const stored = await env.t.request('POST', '/v1/accounts', {
      provider: 'twilio',
      account_sid: CUSTOMER.accountSid,
      auth_token: CUSTOMER.authToken,
    });
    const headers = { encrypted_key: String(stored.body.encrypted_key) };
    const numbers = [
      { sid: 'PN21', phoneNumber: '+13125550421', voiceApplicationSid: `AP${'a'.repeat(32)}` },
      { sid: 'PN22', phoneNumber: '+13125550422', trunkSid: `TK${'b'.repeat(32)}` },
      { sid: 'PN23', phoneNumber: '+13125550423', smsApplicationSid: `AP${'c'.repeat(32)}` },
      { sid: 'PN24', phoneNumber: '+13125550424', smsApplicationSid: `MG${'d'.repeat(32)}` },
    ];
    for (const n of numbers)
      env.emulator.numbers.push({ accountSid: CUSTOMER.accountSid, voiceUrl: '', smsUrl: '', ...n });
    const r = await env.t.request(
      'POST',
      '/v1/inbound/insert',
      { numbers: numbers.map((n) => n.phoneNumber) },
      { headers },
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      r.body.inserted,
      numbers.map((n) => n.phoneNumber),
    );
    const held = (sid: string) => env.emulator.numbers.find((n) => n.sid === sid)!;
    assert.equal(held('PN21').voiceApplicationSid, '');
    assert.equal(held('PN22').trunkSid, '');
    assert.equal(held('PN23').smsApplicationSid, '');
    // A Messaging Service (A2P 10DLC needs the number in one) is left as it is.
    assert.equal(held('PN24').smsApplicationSid, `MG${'d'.repeat(32)}`);
    // Calls and messages now come to Openline.
    for (const to of ['+13125550421', '+13125550422']) {
      const inbound = await env.emulator.placeInbound({ from: '+14155550177', to, script: { hangupAfterMs: 300 } });
      assert.equal(parseTwiml(inbound.twiml).verb, 'stream');
      await inbound.call.ended;
    }
    const sms = await env.emulator.sendSms({ from: '+14155550177', to: '+13125550423', body: 'hello' });
    assert.equal(sms.status, 200);
  });

  it('rejects a call from a number the account blocked', async () => {
    await env.t.request('POST', '/v1/blocked_numbers', { phone_number: '+14155550177' });
    const params = { CallSid: 'CA2', AccountSid: SERVER.accountSid, From: '+14155550177', To: '+12025550300' };
    const reply = await post(
      '/twilio/voice',
      params,
      twilioSignature(SERVER.authToken, `${env.publicUrl}/twilio/voice`, params),
    );
    assert.equal(parseTwiml(reply.body).verb, 'reject');
    await env.t.request('DELETE', '/v1/blocked_numbers/+14155550177');
  });

  it('sends an SMS from a Twilio number through the Messages resource', async () => {
    const r = await env.t.request('POST', '/v1/sms/send', {
      user_number: '+14155550142',
      agent_number: '+12025550300',
      agent_message: 'Your kettle ships today.',
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.carrier, 'twilio');
    const sent = env.emulator.messages.find((m) => m.body === 'Your kettle ships today.')!;
    assert.deepEqual([sent.to, sent.from, sent.accountSid], ['+14155550142', '+12025550300', SERVER.accountSid]);
    assert.equal(r.body.carrier_message_id, sent.sid);
  });

  it('answers an inbound call: voice webhook, Connect Stream TwiML, media stream, a call record with a transcript', async () => {
    const phone = '+12025550300';
    env.hear(['Hi, do you have the blue kettle in stock']);
    const {
      call: far,
      status,
      twiml,
    } = await env.emulator.placeInbound({
      from: '+14155550177',
      to: phone,
      // The caller's words as espeak-ng speaks them (a WAV, streamed as 20 ms mu-law frames).
      script: { say: [{ atMs: 2000, wav: speech('Hi, do you have the blue kettle in stock?') }], hangupAfterMs: 6000 },
    });
    assert.equal(status, 200);
    const verb = parseTwiml(twiml);
    assert.equal(verb.verb, 'stream');
    await far.ended;
    let record: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !record; i++) {
      const list = await env.t.request('GET', '/v1/calls?inbound=true');
      const calls = (list.body.calls ?? []) as Record<string, unknown>[];
      const found = calls.find((c) => c.to === phone || c.from === phone);
      if (found) record = await waitForCall(env.t, String(found.call_id));
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(record, 'an inbound call record exists');
    assert.equal(record.inbound, true);
    const row = await env.t.services.calls.byId(String(record.call_id));
    assert.equal(row?.carrier, 'twilio');
    assert.equal(row?.carrier_call_id, far.sid);
    assert.equal(record.status, 'completed');
    const transcripts = (record.transcripts as { user: string; text: string }[]).map((t) => `${t.user}: ${t.text}`);
    assert.equal(transcripts[0], 'assistant: Openline test shop, how can I help?');
    assert.ok(transcripts.includes('user: Hi, do you have the blue kettle in stock'), transcripts.join('\n'));
    assert.deepEqual(env.emulator.webhookFailures, []);
  });

  it('refuses an inbound call signed with the wrong token', async () => {
    const { status } = await env.emulator.placeInbound({ from: '+14155550177', to: '+12025550300', signWith: 'wrong' });
    assert.equal(status, 403);
  });

  it("forwards an SMS from Twilio's messaging webhook to the number's SMS webhook", async () => {
    const phone = '+12025550300';
    const received: { body: string }[] = [];
    const { createServer } = await import('node:http');
    const hook = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ body });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    try {
      const port = (hook.address() as { port: number }).port;
      const set = await env.t.request('POST', '/v1/sms/webhook/update', {
        phone_number: phone,
        webhook: `http://127.0.0.1:${port}/sms`,
      });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      const reply = await env.emulator.sendSms({
        from: '+14155550177',
        to: phone,
        body: 'Is the shop open on Sunday?',
      });
      assert.equal(reply.status, 200);
      assert.match(reply.body, /<Response\/>/);
      for (let i = 0; i < 200 && received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      assert.equal(received.length, 1);
      const payload = JSON.parse(received[0]!.body) as Record<string, unknown>;
      assert.equal(payload.body, 'Is the shop open on Sunday?');
      assert.equal(payload.from, '+14155550177');
      assert.equal(payload.to, phone);
      assert.equal(payload.carrier, 'twilio');
      assert.equal(payload.carrier_message_id, reply.messageSid);
      // Signed with the wrong token: refused, nothing forwarded.
      const forged = await env.emulator.sendSms({ from: '+14155550177', to: phone, body: 'forged', signWith: 'x' });
      assert.equal(forged.status, 403);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(received.length, 1);
    } finally {
      await new Promise<void>((resolve) => hook.close(() => resolve()));
    }
  });
});
