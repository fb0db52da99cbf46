import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { verifyWebhook } from '../../src/outbound/signing.js';
import { MAX_EVENT_BACKLOG } from '../../src/outbound/webhooks.js';
import { startReceiver, type Received } from './receiver.js';

type Obj = { [k: string]: unknown };

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, tries = 400): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await probe();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function place(t: TestApp, body: Obj): Promise<string> {
  const r = await t.request('POST', '/v1/calls', { task: 'Confirm the appointment.', ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.body.call_id);
}

const ended = (t: TestApp, id: string) =>
  until(`call ${id} to end`, async () => {
    const r = await t.request('GET', `/v1/calls/${id}`);
    return r.body.completed === true || String(r.body.queue_status).endsWith('error') ? r.body : undefined;
  });

const log = async (t: TestApp, id: string) => (await t.request('GET', `/v1/postcall/webhooks/${id}`)).body;
const records = (received: Received[], id: string) =>
  received.filter((r) => (JSON.parse(r.body) as Obj).call_id === id && !('category' in (JSON.parse(r.body) as Obj)));

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`end-of-call webhooks (${storage})`, () => {
    let t: TestApp;
    let secret: string;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const clock = new ScaledClock(200);
    before(async () => {
      receiver = await startReceiver();
      t = await createTestApp({ postgres: storage === 'postgres', clock });
      await t.services.startWorkers();
      const me = await t.request('GET', '/v1/me');
      secret = await t.services.accounts.webhookSecret(String((me.body.account as Obj | undefined)?.id ?? me.body.id));
    });
    after(async () => {
      await t.close();
      await receiver.close();
    });

    it('delivers the call record, signed both ways, and logs the attempt', async () => {
      receiver.handle = (_req, res) => res.end('ok');
      const id = await place(t, {
        phone_number: '+14155550100',
        webhook: `${receiver.url}/hook`,
        metadata: { order: 42 },
      });
      const call = await ended(t, id);
      const [hook] = await until(
        'the webhook',
        async () => records(receiver.received, id).length > 0 && records(receiver.received, id),
      );
      assert.ok(hook);
      assert.equal(hook.method, 'POST');
      assert.equal(hook.headers['content-type'], 'application/json');
      assert.equal(verifyWebhook(hook.headers, hook.body, secret, { now: clock.now() }), true);
      const body = JSON.parse(hook.body) as Obj;
      assert.deepEqual(body.metadata, { order: 42 });
      assert.equal(body.queue_status, 'complete');
      assert.ok(Array.isArray(body.transcripts) && body.transcripts.length > 0);
      assert.deepEqual(body.transcripts, call.transcripts);
      const entry = await until('the log', async () => {
        const b = await log(t, id);
        return ((b.data as Obj).metadata as Obj[]).length > 0 && b;
      });
      const data = entry.data as Obj;
      assert.equal(entry.errors, null);
      assert.equal(data.url, `${receiver.url}/hook`);
      assert.equal(data.call_id, id);
      assert.deepEqual(data.payload, body);
      const [attempt] = data.metadata as Obj[];
      assert.equal(attempt?.response_code, 200);
      assert.equal(attempt?.send_type, 'automatic');
      assert.equal(typeof attempt?.response_time, 'number');
      assert.equal(typeof attempt?.sent_at, 'string');
      // Another account sees nothing; a call without a webhook has no log.
      assert.equal((await t.request('GET', `/v1/postcall/webhooks/${id}`, undefined, { as: t.otherKey })).status, 404);
      const plain = await place(t, { phone_number: '+14155550104' });
      await ended(t, plain);
      assert.equal((await t.request('GET', `/v1/postcall/webhooks/${plain}`)).status, 404);
    });

    it('a call that never connected (busy, no answer) gets its webhook too', async () => {
      const id = await place(t, { phone_number: '+14155550105', webhook: `${receiver.url}/busy` });
      await ended(t, id);
      const [hook] = await until(
        'the webhook',
        async () => records(receiver.received, id).length > 0 && records(receiver.received, id),
      );
      assert.equal((JSON.parse(hook?.body ?? '{}') as Obj).answered_by, 'no-answer');
    });

    it('a failing receiver makes the call complete_error; a later retry brings it back to complete', async () => {
      receiver.handle = (req, res) => {
        res.statusCode = req.url === '/flaky' ? 500 : 200;
        res.end();
      };
      const id = await place(t, { phone_number: '+14155550104', webhook: `${receiver.url}/flaky` });
      const failed = await until('complete_error', async () => {
        const r = await t.request('GET', `/v1/calls/${id}`);
        return r.body.queue_status === 'complete_error' && r.body;
      });
      assert.equal(failed.error_message, 'End-of-call webhook failed: HTTP 500');
      assert.equal(failed.status, 'complete_error');
      await until('a second failed attempt', async () => records(receiver.received, id).length >= 2);
      receiver.handle = (_req, res) => res.end('ok');
      const back = await until('complete again', async () => {
        const r = await t.request('GET', `/v1/calls/${id}`);
        return r.body.queue_status === 'complete' && r.body;
      });
      assert.equal(back.error_message, null);
      assert.equal(back.status, 'completed');
      const attempts = ((await log(t, id)).data as Obj).metadata as Obj[];
      assert.ok(attempts.length >= 3);
      assert.deepEqual(
        attempts.map((a) => a.response_code),
        [...attempts.slice(0, -1).map(() => 500), 200],
      );
      // Every attempt carries the same webhook-id, and the same body.
      const sent = records(receiver.received, id);
      assert.equal(new Set(sent.map((r) => r.headers['webhook-id'])).size, 1);
      assert.equal(new Set(sent.map((r) => r.body)).size, 1);
    });

    it('a receiver that times out counts as a failure and is retried', async () => {
      t.services.webhooks.deliveryTimeoutMs = 150;
      let first = true;
      receiver.handle = (req, res) => {
        if (req.url === '/slow' && first) {
          first = false;
          setTimeout(() => res.end(), 1000);
        } else res.end('ok');
      };
      const id = await place(t, { phone_number: '+14155550104', webhook: `${receiver.url}/slow` });
      const attempts = await until('a success after a timeout', async () => {
        const list = ((await log(t, id)).data as Obj | undefined)?.metadata as Obj[] | undefined;
        return list?.some((a) => a.response_code === 200) && list;
      });
      assert.equal(attempts[0]?.response_code, null);
      assert.match(String(attempts[0]?.error), /no response .* within 150 ms/);
      t.services.webhooks.deliveryTimeoutMs = 10_000;
    });

    it('resends on request (send_type resend); foreign and unknown calls are not found', async () => {
      receiver.handle = (_req, res) => res.end('ok');
      const id = await place(t, { phone_number: '+14155550104', webhook: `${receiver.url}/again` });
      await until('first delivery', async () => records(receiver.received, id).length === 1);
      const r = await t.request('POST', '/v1/postcall/webhooks/resend', { call_ids: [id, 'nope'] });
      assert.equal(r.status, 200);
      assert.deepEqual([r.body.resent, r.body.not_found], [[id], ['nope']]);
      // The hosted answer: the log of each call resent, and an error per call that was not.
      assert.deepEqual(
        (r.body.data as Obj[]).map((d) => [d.call_id, d.url]),
        [[id, `${receiver.url}/again`]],
      );
      assert.deepEqual(r.body.errors, [{ error: 'not_found', message: 'No end-of-call webhook for call nope' }]);
      await until('resent delivery', async () => records(receiver.received, id).length === 2);
      const attempts = await until('resend logged', async () => {
        const list = ((await log(t, id)).data as Obj).metadata as Obj[];
        return list.length === 2 && list;
      });
      assert.deepEqual(
        attempts.map((a) => a.send_type),
        ['automatic', 'resend'],
      );
      const other = await t.request('POST', '/v1/postcall/webhooks/resend', { call_ids: [id] }, { as: t.otherKey });
      assert.deepEqual([other.body.resent, other.body.not_found, other.body.data], [[], [id], []]);
      assert.equal((await t.request('POST', '/v1/postcall/webhooks/resend', { call_ids: 'x' })).status, 400);
    });

    it('create sets a webhook on an ended call and sends it', async () => {
      const id = await place(t, { phone_number: '+14155550104' });
      await ended(t, id);
      const r = await t.request('POST', '/v1/postcall/webhooks/create', {
        call_ids: [id, 'nope'],
        webhook_url: `${receiver.url}/late`,
      });
      assert.deepEqual([r.body.updated, r.body.not_found], [[id], ['nope']]);
      assert.deepEqual(
        (r.body.data as Obj[]).map((d) => [d.call_id, d.url]),
        [[id, `${receiver.url}/late`]],
      );
      const [hook] = await until(
        'the webhook',
        async () => records(receiver.received, id).length > 0 && records(receiver.received, id),
      );
      assert.equal(hook?.url, '/late');
      assert.equal(((await log(t, id)).data as Obj).url, `${receiver.url}/late`);
    });

    it('streams the chosen event categories to the webhook, signed', async () => {
      const id = await place(t, {
        phone_number: '+14155550100',
        webhook: `${receiver.url}/events`,
        webhook_events: ['queue', 'call'],
      });
      await ended(t, id);
      const events = await until('the ended events', async () => {
        const list = receiver.received
          .filter((r) => r.url === '/events')
          .map((r) => ({ r, body: JSON.parse(r.body) as Obj }));
        const mine = list.filter((e) => e.body.call_id === id && 'category' in e.body);
        return mine.some((e) => e.body.message === 'Closing call stream.') && mine;
      });
      for (const { r, body } of events) {
        assert.deepEqual(Object.keys(body).sort(), ['call_id', 'category', 'log_level', 'message']);
        assert.ok(['queue', 'call'].includes(String(body.category)));
        // Signed when sent: the call's first events are minutes old on this 200x clock by its end
        // (more on a loaded machine), so their age is not what this checks.
        assert.equal(verifyWebhook(r.headers, r.body, secret, { now: clock.now(), toleranceSeconds: 86_400 }), true);
      }
      const messages = events.map((e) => `${String(e.body.category)}: ${String(e.body.message)}`);
      for (const expected of ['queue: Call allocated', 'queue: Call started', 'call: Call connected'])
        assert.ok(messages.includes(expected), `${expected} in ${messages.join(' | ')}`);
      assert.ok(messages.some((m) => /^call: Call ended/.test(m)));
      // Last, the hosted API's closing event that webhook receivers wait for.
      assert.equal(messages.at(-1), 'call: Closing call stream.');
      // A receiver that stops answering holds at most MAX_EVENT_BACKLOG of a call's events; the rest are dropped.
      const held: http.ServerResponse[] = [];
      receiver.handle = (_req, res) => void held.push(res);
      const slow = await place(t, {
        phone_number: '+14155550104',
        webhook: `${receiver.url}/slow`,
        webhook_events: ['tool'],
      });
      await ended(t, slow);
      // The call's own events (not of the chosen categories, so not sent) are through first.
      await t.services.webhooks.drain();
      for (let i = 0; i < MAX_EVENT_BACKLOG + 10; i++) t.services.webhooks.event(slow, 'tool', `event ${i}`);
      await until('the first held', async () => held.some((res) => res.req.url === '/slow'));
      // Shutdown waits for what is still to be sent (drain): not done while the receiver holds it.
      let drained = false;
      const draining = t.services.webhooks.drain().then(() => (drained = true));
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(drained, false, 'drain waits for the events still to be sent');
      receiver.handle = (_req, res) => res.end('ok');
      for (const res of held.splice(0)) res.end('ok');
      await draining;
      const streamed = receiver.received.filter((r) => r.url === '/slow' && /event \d+/.test(r.body));
      assert.equal(streamed.length, MAX_EVENT_BACKLOG);
      // Only the chosen categories: a call without webhook_events streams nothing.
      const quiet = await place(t, { phone_number: '+14155550104', webhook: `${receiver.url}/quiet` });
      await until('its webhook', async () => records(receiver.received, quiet).length > 0);
      assert.equal(receiver.received.filter((r) => r.url === '/quiet').length, 1);
    });
  });

describe('end-of-call webhook retries survive a restart (SQLite)', () => {
  it('a retry pending when the server stops is delivered by the next one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-webhooks-'));
    const receiver = await startReceiver((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    // Slow enough that attempt 3 (35 s after the first) is still pending when the first server stops.
    const clock = new ScaledClock(20);
    let t = await createTestApp({ env: { DATA_DIR: dir }, clock });
    try {
      await t.services.startWorkers();
      const id = await place(t, { phone_number: '+14155550104', webhook: receiver.url });
      await until('a failed attempt', async () => receiver.received.length >= 1, 2000);
      await t.close();
      const failures = receiver.received.length;
      receiver.handle = (_req, res) => res.end('ok');
      t = await createTestApp({ env: { DATA_DIR: dir }, clock: new ScaledClock(2000, clock.now()) });
      await t.services.startWorkers();
      // The call belongs to the first run's test account: read it from the store.
      const call = await until('complete again', async () => {
        const row = await t.services.calls.byId(id);
        return row?.queue_status === 'complete' && row;
      });
      assert.equal(call.error_message, null);
      assert.equal(receiver.received.length, failures + 1);
    } finally {
      await t.close();
      await receiver.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
