import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { verifyWebhook } from '../../src/outbound/signing.js';
import { deliverInboundSms, listInboundSms } from '../../src/sms/inbound.js';
import { startReceiver, type Received } from '../outbound/receiver.js';

type Obj = { [k: string]: unknown };

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, tries = 400): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await probe();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const bodyOf = (r: Received) => JSON.parse(r.body) as Obj;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`inbound SMS on the sandbox (${storage})`, () => {
    let t: TestApp;
    let secret: string;
    let otherSecret: string;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let mine: string;
    let theirs: string;
    const clock = new ScaledClock(200);

    async function buy(as?: string): Promise<string> {
      const r = await t.request('POST', '/v1/inbound/purchase', { prompt: 'Answer texts' }, as ? { as } : {});
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return String(r.body.phone_number);
    }

    async function setWebhook(phone: string, webhook: string | null, as?: string): Promise<void> {
      const r = await t.request('POST', '/v1/sms/webhook/update', { phone_number: phone, webhook }, as ? { as } : {});
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }

    const forMessage = (id: string) => receiver.received.filter((r) => bodyOf(r).message_id === id);

    before(async () => {
      receiver = await startReceiver();
      t = await createTestApp({ clock, postgres: storage === 'postgres' });
      await t.services.startWorkers();
      const accounts = await t.services.accounts.list();
      secret = await t.services.accounts.webhookSecret(accounts[0]!.id);
      otherSecret = await t.services.accounts.webhookSecret(accounts[1]!.id);
      mine = await buy();
      theirs = await buy(t.otherKey);
    });
    after(async () => {
      await t.close();
      await receiver.close();
    });

    it("forwards the message to the number's SMS webhook, signed, with the documented payload", async () => {
      receiver.handle = (_req, res) => res.end('ok');
      await setWebhook(mine, `${receiver.url}/sms`);
      const r = await t.request('POST', '/v1/sandbox/sms', {
        from: '(415) 555-0100',
        to: mine,
        body: 'Can I move my appointment to 3pm?',
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'success');
      assert.equal(r.body.delivery, 'scheduled');
      assert.equal(r.body.webhook, `${receiver.url}/sms`);
      assert.equal(r.body.from, '+14155550100');
      assert.equal(r.body.to, mine);
      const id = String(r.body.message_id);
      assert.match(id, /^sms_/);

      const [hook] = await until('the SMS webhook', async () => forMessage(id).length > 0 && forMessage(id));
      assert.ok(hook);
      assert.equal(hook.method, 'POST');
      assert.equal(hook.url, '/sms');
      assert.equal(hook.headers['content-type'], 'application/json');
      assert.equal(verifyWebhook(hook.headers, hook.body, secret, { now: clock.now() }), true);
      // Signed with this account's secret, not another's.
      assert.equal(verifyWebhook(hook.headers, hook.body, otherSecret, { now: clock.now() }), false);
      assert.deepEqual(bodyOf(hook), {
        event: 'sms.received',
        message_id: id,
        from: '+14155550100',
        to: mine,
        body: 'Can I move my appointment to 3pm?',
        received_at: r.body.received_at,
        carrier: 'sandbox',
        carrier_message_id: null,
      });
      assert.ok(!Number.isNaN(Date.parse(String(r.body.received_at))));

      // The attempt is in the delivery log, like every webhook's.
      const log = await until('the delivery log', async () => {
        const l = await t.request('GET', `/v1/postcall/webhooks/${id}`);
        const data = l.body.data as Obj;
        return l.status === 200 && data.delivered === true && data;
      });
      const attempts = log.metadata as Obj[];
      assert.equal(attempts.length, 1);
      assert.equal(attempts[0]?.response_code, 200);
    });

    it('retries a webhook that answers 500, then succeeds, with the same webhook-id', async () => {
      let failures = 0;
      receiver.handle = (req, res) => {
        const message = bodyOf(req);
        if (message.body === 'retry me' && failures < 2) {
          failures++;
          res.statusCode = 500;
          res.end('down');
          return;
        }
        res.end('ok');
      };
      await setWebhook(mine, `${receiver.url}/sms`);
      const r = await t.request('POST', '/v1/sandbox/sms', { from: '+14155550100', to: mine, body: 'retry me' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const id = String(r.body.message_id);
      // Generous: on PostgreSQL each retry waits for pg-boss to pick it up, slower on a busy machine.
      const hooks = await until('three attempts', async () => forMessage(id).length >= 3 && forMessage(id), 2400);
      assert.equal(hooks.length, 3);
      const ids = new Set(hooks.map((h) => h.headers['webhook-id']));
      assert.equal(ids.size, 1);
      for (const h of hooks) assert.equal(verifyWebhook(h.headers, h.body, secret, { now: clock.now() }), true);
      const log = await until('the log of three attempts', async () => {
        const l = await t.request('GET', `/v1/postcall/webhooks/${id}`);
        const data = l.body.data as Obj;
        // The attempt is logged, then the message marked delivered.
        return (data.metadata as Obj[]).length === 3 && data.delivered === true && data;
      });
      assert.deepEqual(
        (log.metadata as Obj[]).map((a) => a.response_code),
        [500, 500, 200],
      );
      assert.equal(log.delivered, true);
    });

    it('stores a message for a number without a webhook and reports it, sending nothing', async () => {
      await setWebhook(mine, null);
      const before = receiver.received.length;
      const r = await t.request('POST', '/v1/sandbox/sms', { from: '4155550100', to: mine, body: 'Anyone there?' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.delivery, 'no_webhook');
      assert.equal(r.body.webhook, null);
      const id = String(r.body.message_id);
      const accountId = (await t.services.accounts.list())[0]!.id;
      const stored = await listInboundSms(t.services.storage.db, accountId, { to: mine });
      const message = stored.find((m) => m.message_id === id);
      assert.ok(message);
      assert.equal(message.body, 'Anyone there?');
      assert.equal(message.webhook, null);
      assert.equal((await t.request('GET', `/v1/postcall/webhooks/${id}`)).status, 404);
      // The account reads it back through the API.
      const listed = await t.request('GET', `/v1/sms/messages?phone_number=${encodeURIComponent(mine)}&limit=5`);
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      const [newest] = listed.body.messages as Obj[];
      assert.deepEqual(newest, {
        message_id: id,
        from: '+14155550100',
        to: mine,
        body: 'Anyone there?',
        received_at: r.body.received_at,
        carrier: 'sandbox',
        webhook: null,
      });
      const badNumber = await t.request('GET', '/v1/sms/messages?phone_number=abc');
      assert.equal(badNumber.status, 400);
      assert.match((badNumber.body.errors as string[]).join('\n'), /phone_number/);
      const badLimit = await t.request('GET', '/v1/sms/messages?limit=0');
      assert.equal(badLimit.status, 400);
      assert.match((badLimit.body.errors as string[]).join('\n'), /limit/);
      // Give the queue time to have sent something, were it (wrongly) going to.
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(receiver.received.length, before);
    });

    it('answers 404 naming `to` for a number nobody holds and for another account’s number', async () => {
      const unknown = await t.request('POST', '/v1/sandbox/sms', {
        from: '+14155550100',
        to: '+14155550999',
        body: 'hi',
      });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.status, 'error');
      assert.match(String(unknown.body.message), /^to: /);
      const foreign = await t.request('POST', '/v1/sandbox/sms', { from: '+14155550100', to: theirs, body: 'hi' });
      assert.equal(foreign.status, 404);
      assert.match(String(foreign.body.message), /^to: /);
      // Nothing was stored for the other account either.
      const other = (await t.services.accounts.list())[1]!.id;
      assert.deepEqual(await listInboundSms(t.services.storage.db, other), []);
    });

    it('takes the number as a JSON number too, as other endpoints do', async () => {
      const digits = Number(mine.replace(/^\+1/, ''));
      const hook = await t.request('POST', '/v1/sms/webhook/update', { phone_number: digits, webhook: false });
      assert.equal(hook.status, 200, JSON.stringify(hook.body));
      assert.equal(hook.body.phone_number, mine);
      const agent = await t.request('POST', '/v1/sms/number/update', {
        phone_number: digits,
        objective: 'Answer texts',
      });
      assert.equal(agent.status, 200, JSON.stringify(agent.body));
      const wrong = await t.request('POST', '/v1/sms/webhook/update', { phone_number: 12345, webhook: false });
      assert.equal(wrong.status, 400);
      assert.match((wrong.body.errors as string[]).join('\n'), /^phone_number /);
    });

    it('rejects invalid bodies with errors naming each field', async () => {
      const missing = await t.request('POST', '/v1/sandbox/sms', {});
      assert.equal(missing.status, 400);
      const errors = (missing.body.errors as string[]).join('\n');
      for (const field of ['from', 'to', 'body']) assert.match(errors, new RegExp(`\\b${field}\\b`), errors);

      const bad = await t.request('POST', '/v1/sandbox/sms', { from: 'not a number', to: mine, body: 'x' });
      assert.equal(bad.status, 400);
      assert.match((bad.body.errors as string[]).join('\n'), /\bfrom\b/);

      const badTo = await t.request('POST', '/v1/sandbox/sms', { from: '+14155550100', to: '12345', body: 'x' });
      assert.equal(badTo.status, 400);
      assert.match((badTo.body.errors as string[]).join('\n'), /\bto\b/);

      const empty = await t.request('POST', '/v1/sandbox/sms', { from: '+14155550100', to: mine, body: '' });
      assert.equal(empty.status, 400);
      assert.match((empty.body.errors as string[]).join('\n'), /\bbody\b/);

      const long = await t.request('POST', '/v1/sandbox/sms', {
        from: '+14155550100',
        to: mine,
        body: 'x'.repeat(1601),
      });
      assert.equal(long.status, 400);
      assert.match((long.body.errors as string[]).join('\n'), /\bbody\b/);

      const noKey = await t.request(
        'POST',
        '/v1/sandbox/sms',
        { from: '+14155550100', to: mine, body: 'x' },
        { as: null },
      );
      assert.equal(noKey.status, 401);
    });

    it("keeps accounts apart: each number's messages go to its own account's webhook and log", async () => {
      receiver.handle = (_req, res) => res.end('ok');
      await setWebhook(mine, `${receiver.url}/mine`);
      await setWebhook(theirs, `${receiver.url}/theirs`, t.otherKey);
      const a = await t.request('POST', '/v1/sandbox/sms', { from: '+14155550100', to: mine, body: 'for me' });
      const b = await t.request(
        'POST',
        '/v1/sandbox/sms',
        { from: '+14155550100', to: theirs, body: 'for them' },
        { as: t.otherKey },
      );
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      const [toThem] = await until('their webhook', async () => {
        const hooks = forMessage(String(b.body.message_id));
        return hooks.length > 0 && hooks;
      });
      assert.ok(toThem);
      assert.equal(toThem.url, '/theirs');
      assert.equal(verifyWebhook(toThem.headers, toThem.body, otherSecret, { now: clock.now() }), true);
      assert.equal(verifyWebhook(toThem.headers, toThem.body, secret, { now: clock.now() }), false);
      // Neither account sees the other's message or its log.
      assert.equal((await t.request('GET', `/v1/postcall/webhooks/${String(b.body.message_id)}`)).status, 404);
      const theirLog = await t.request('GET', `/v1/postcall/webhooks/${String(a.body.message_id)}`, undefined, {
        as: t.otherKey,
      });
      assert.equal(theirLog.status, 404);
      const accounts = await t.services.accounts.list();
      const mineStored = await listInboundSms(t.services.storage.db, accounts[0]!.id);
      assert.ok(mineStored.every((m) => m.to === mine));
      const theirList = await t.request('GET', '/v1/sms/messages', undefined, { as: t.otherKey });
      assert.deepEqual(
        (theirList.body.messages as Obj[]).map((m) => m.body),
        ['for them'],
      );
      const myList = await t.request('GET', '/v1/sms/messages');
      assert.ok((myList.body.messages as Obj[]).every((m) => m.to === mine));
      const theirsStored = await listInboundSms(t.services.storage.db, accounts[1]!.id);
      assert.deepEqual(
        theirsStored.map((m) => m.body),
        ['for them'],
      );
    });

    it('sends a repeated carrier message whose first attempt was lost in a crash', async () => {
      receiver.handle = (_req, res) => res.end('ok');
      await setWebhook(mine, `${receiver.url}/sms`);
      const sms = { to: mine, from: '+14155550100', body: 'lost', carrier: 'twilio', carrierMessageId: 'SM-crash' };
      // The process stops after storing the message, before its first attempt is enqueued.
      const crashing = {
        ...t.services,
        queue: {
          ...t.services.queue,
          enqueue: () => Promise.reject(new Error('process stopped')),
        },
      };
      await assert.rejects(deliverInboundSms(crashing, sms), /process stopped/);
      const stored = await t.services.storage.db
        .selectFrom('sms_messages')
        .select('id')
        .where('carrier_message_id', '=', 'SM-crash')
        .executeTakeFirstOrThrow();
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(forMessage(stored.id).length, 0);
      // The carrier repeats its webhook: the stored message is sent, once.
      const again = await deliverInboundSms(t.services, sms);
      assert.equal(again?.message_id, stored.id);
      assert.equal(again?.duplicate, true);
      await until('the webhook', async () => forMessage(stored.id).length > 0);
      await deliverInboundSms(t.services, sms);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(forMessage(stored.id).length, 1);
    });

    it('delivers a carrier message once however often the carrier repeats it', async () => {
      receiver.handle = (_req, res) => res.end('ok');
      await setWebhook(mine, `${receiver.url}/sms`);
      const sms = { to: mine, from: '+14155550100', body: 'repeated', carrier: 'sandbox', carrierMessageId: 'SM123' };
      const [first, second] = await Promise.all([
        deliverInboundSms(t.services, sms),
        deliverInboundSms(t.services, sms),
      ]);
      assert.ok(first && second);
      assert.equal(first.message_id, second.message_id);
      assert.equal([first.duplicate, second.duplicate].filter(Boolean).length, 1);
      const third = await deliverInboundSms(t.services, sms);
      assert.equal(third?.message_id, first.message_id);
      assert.equal(third?.duplicate, true);
      await until('the webhook', async () => forMessage(first.message_id).length > 0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(forMessage(first.message_id).length, 1);
      // A number nobody holds, or held by another account than the one named: undefined.
      assert.equal(
        await deliverInboundSms(t.services, { ...sms, to: '+14155550998', carrierMessageId: null }),
        undefined,
      );
      const other = (await t.services.accounts.list())[1]!.id;
      assert.equal(
        await deliverInboundSms(t.services, { ...sms, carrierMessageId: 'SM124', accountId: other }),
        undefined,
      );
    });
  });
