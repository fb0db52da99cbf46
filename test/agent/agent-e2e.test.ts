import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, type FakeReply, type RecordedRequest, fakeLlmConfig } from '../../src/testing/fake-openai.js';
import { verifyWebhook } from '../../src/outbound/signing.js';
import { startReceiver } from '../outbound/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

type Row = { [k: string]: unknown };

/**
 * Issue "the agent's mind", done when: a sandbox call with a fake LLM books an appointment through
 * a custom tool, uses dynamic data, and yields a summary, an analysis object and a verified,
 * signed webhook. One call, all of it.
 */
describe('a call conducted by a language model, end to end', () => {
  let fake: FakeOpenAi;
  let api: Awaited<ReturnType<typeof startReceiver>>;
  let hooks: Awaited<ReturnType<typeof startReceiver>>;
  let t: TestApp;

  const system = (r: RecordedRequest) => String(r.body.messages[0]?.content ?? '');

  before(async () => {
    api = await startReceiver((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url.startsWith('/customer')) res.end(JSON.stringify({ customer: { name: 'Sam Lee', plan: 'gold' } }));
      else res.end(JSON.stringify({ booking: { id: 'B-42', time: 'Friday at 3pm' } }));
    });
    hooks = await startReceiver();
    fake = await FakeOpenAi.start();
    fake.handler = (r): FakeReply => {
      if (system(r).startsWith('You summarize phone calls')) {
        return { text: 'Sam Lee (gold plan) booked an appointment for Friday at 3pm, reference B-42.' };
      }
      if (system(r).startsWith('You extract structured data')) {
        return { text: JSON.stringify({ booked: true, booking_id: 'B-42' }) };
      }
      const messages = r.body.messages;
      if (messages.some((m) => m.role === 'tool')) {
        return {
          text: 'You are booked for Friday at 3pm, reference B-42. Goodbye!',
          toolCalls: [{ name: 'end_call' }],
        };
      }
      if (messages.some((m) => m.role === 'user')) {
        return { toolCalls: [{ name: 'Book_Appointment', arguments: { day: 'Friday' } }] };
      }
      return { text: 'Hi Sam, this is Openline. Shall I book your appointment for Friday?' };
    };
    t = await createTestApp({
      clock: new ScaledClock(25),
      config: {
        llm: fakeLlmConfig(fake, 2000),
      },
    });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
    await api.close();
    await hooks.close();
  });

  it('books through a custom tool with dynamic data, then sends a signed webhook with summary and analysis', async () => {
    const placed = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Book an appointment for Friday for {{name}}.',
      request_data: { name: 'Sam' },
      block_interruptions: true,
      tools: [
        {
          name: 'Book Appointment',
          description: 'Books an appointment',
          url: `${api.url}/book`,
          method: 'POST',
          body: { day: '{{input.day}}', phone: '{{phone_number}}' },
          input_schema: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] },
          response: { booking_id: '$.booking.id' },
        },
      ],
      dynamic_data: [
        {
          url: `${api.url}/customer?to={{to}}`,
          response_data: [{ name: 'plan', data: '$.customer.plan', context: 'The customer has the {{plan}} plan.' }],
        },
      ],
      analysis_schema: { booked: 'boolean', booking_id: 'string' },
      webhook: `${hooks.url}/end-of-call`,
      webhook_events: ['tool', 'dynamic_data'],
      metadata: { crm_id: 7 },
    });
    assert.equal(placed.status, 200, JSON.stringify(placed.body));
    const id = String(placed.body.call_id);

    let hook: (typeof hooks.received)[number] | undefined;
    for (let i = 0; i < 800 && !hook; i++) {
      hook = hooks.received.find((r) => {
        const sent = JSON.parse(r.body) as Row;
        // Streamed events go to the same URL; the end-of-call body is the record.
        return sent.call_id === id && !('category' in sent);
      });
      if (!hook) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.ok(hook, 'the end-of-call webhook arrived');
    const body = JSON.parse(hook.body) as Row;

    // The tool was called with the model's arguments, and dynamic data reached the model.
    const booking = api.received.find((r) => r.url === '/book');
    assert.equal((JSON.parse(booking!.body) as Row).day, 'Friday');
    assert.ok(api.received.some((r) => r.url === '/customer?to=%2B14155550100' || r.url.startsWith('/customer')));
    assert.ok(fake.requests.some((r) => /The customer has the gold plan\./.test(system(r))));
    assert.ok(fake.requests.some((r) => /Book an appointment for Friday for Sam\./.test(system(r))));

    // The record, as the webhook carries it.
    assert.equal(body.queue_status, 'complete');
    assert.equal((body.variables as Row).booking_id, 'B-42');
    assert.equal((body.variables as Row).plan, 'gold');
    assert.equal(body.summary, 'Sam Lee (gold plan) booked an appointment for Friday at 3pm, reference B-42.');
    assert.deepEqual(body.analysis, { booked: true, booking_id: 'B-42' });
    assert.deepEqual(body.metadata, { crm_id: 7 });
    assert.equal((body.request_data as Row).model_provider, 'm-enhanced');
    const lines = (body.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`).join('\n');
    assert.match(lines, /agent-action: Tool Book Appointment called/);
    assert.match(lines, /assistant: You are booked for Friday at 3pm, reference B-42/);

    // Signed both ways, with the account's secret.
    const accountId = (await t.services.accounts.authenticate(t.key))!.id;
    const secret = await t.services.accounts.webhookSecret(accountId);
    assert.ok(verifyWebhook(hook.headers, hook.body, secret), 'signature verifies');
    assert.ok(!verifyWebhook(hook.headers, hook.body.replace('B-42', 'B-43'), secret), 'a changed body does not');

    // Streamed during the call: the chosen categories only, in the seed's event shape.
    const events = hooks.received
      .map((r) => JSON.parse(r.body) as Row)
      .filter((e) => e.call_id === id && 'category' in e);
    const said = events.map((e) => `${String(e.category)}: ${String(e.message)}`);
    assert.ok(
      said.some((x) => x.startsWith('tool: Tool Book Appointment called with {')),
      said.join('\n'),
    );
    assert.ok(
      said.some((x) => x.startsWith('tool: Tool Book Appointment returned')),
      said.join('\n'),
    );
    assert.ok(said.includes('dynamic_data: dynamic_data fetched: plan'), said.join('\n'));
    assert.ok(
      events.every((e) => ['tool', 'dynamic_data'].includes(String(e.category)) && typeof e.log_level === 'string'),
    );

    // The attempt is logged once its answer is in, a moment after the receiver saw the request.
    await waitFor('the delivery in the webhook log', async () => {
      const log = await t.request('GET', `/v1/postcall/webhooks/${id}`);
      assert.equal(log.status, 200);
      const entries = ((log.body.data as Row).metadata as { response_code: number }[]).map((m) => m.response_code);
      return entries.includes(200);
    });
  });
});
