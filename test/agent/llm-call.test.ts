import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, type FakeReply, type RecordedRequest, fakeLlmConfig } from '../../src/testing/fake-openai.js';
import { FALLBACK_LINE } from '../../src/agent/llm.js';
import { startReceiver } from '../outbound/receiver.js';

type Row = { [k: string]: unknown };

const ended = waitForCall;

async function place(t: TestApp, body: Row): Promise<{ call: Row; lines: string }> {
  const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const call = await ended(t, String(r.body.call_id));
  const lines = (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`).join('\n');
  return { call, lines };
}

const assistantTurns = (r: RecordedRequest) => r.body.messages.filter((m) => m.role === 'assistant').length;

describe('calls conducted by a language model (fake OpenAI server, sandbox, clock 25x)', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  before(async () => {
    fake = await FakeOpenAi.start();
    t = await createTestApp({
      // 25x, not 100x: the fake model answers in real milliseconds, and at 100x a slow first
      // request (connection set-up under a loaded test run) is already 15 s of silence to the person.
      clock: new ScaledClock(25),
      config: {
        llm: fakeLlmConfig(fake, 300),
      },
    });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('greets, answers, and ends the call with end_call', async () => {
    const seen = fake.requests.length;
    fake.handler = (r): FakeReply =>
      assistantTurns(r) === 0
        ? { text: 'Hi, this is Openline calling to confirm your appointment tomorrow at 3pm. Does that still work?' }
        : { text: 'Wonderful, we will see you then. Take care.', toolCalls: [{ name: 'end_call' }] };
    const { call, lines } = await place(t, {
      task: 'Confirm the appointment for {{day}} at 3pm.',
      request_data: { day: 'tomorrow' },
    });
    assert.equal(call.queue_status, 'complete', lines);
    assert.equal(call.call_ended_by, 'ASSISTANT', lines);
    assert.equal(call.error_message, null);
    assert.match(
      lines,
      /assistant: Hi, this is Openline calling[^]*user: Yes[^]*assistant: Wonderful, we will see you then/,
    );
    const sent = fake.requests.slice(seen);
    assert.ok(sent.length >= 2);
    assert.equal(sent[0]!.body.model, 'm-enhanced');
    assert.match(String(sent[0]!.body.messages[0]!.content), /Confirm the appointment for tomorrow at 3pm\./);
    // The second request carries the conversation so far.
    assert.ok(sent.at(-1)!.body.messages.some((m) => m.role === 'user' && /Yes/.test(String(m.content))));
  });

  it('a transfer tool call transfers the call to the transfer_list number', async () => {
    fake.handler = (r): FakeReply =>
      assistantTurns(r) === 0
        ? { text: 'Hi! Would you like to talk to our sales team?' }
        : {
            text: 'Let me put you through to sales.',
            toolCalls: [{ name: 'transfer', arguments: { label: 'sales' } }],
          };
    const { call, lines } = await place(t, {
      task: 'Offer a call with sales and transfer them if they agree.',
      transfer_list: { sales: '+14155550110' },
      model: 'base',
    });
    assert.equal(call.queue_status, 'complete', lines);
    assert.equal(call.transferred_to, '+14155550110', lines);
    assert.match(lines, /agent-action: Transferring to \+14155550110/);
    assert.equal(fake.requests.at(-1)!.body.model, 'm-base');
  });

  for (const [name, reply] of [
    ['answers 500', { status: 500 }],
    ['hangs past the timeout', { hang: 'mid-stream' }],
  ] as const) {
    it(`a model that ${name}: the caller hears the fallback line and the call still ends cleanly`, async () => {
      fake.handler = () => reply;
      const { call, lines } = await place(t, { task: 'Confirm the appointment.' });
      assert.equal(call.queue_status, 'complete', lines);
      assert.equal(call.completed, true);
      assert.equal(call.error_message, null, lines);
      if (name === 'answers 500') {
        assert.ok(lines.includes(`assistant: ${FALLBACK_LINE}`), lines);
        assert.match(
          lines,
          /agent-action: Language model failed \(.+\): (fallback line said|gave up)/,
          'the record says what failed',
        );
        // Three failed turns in a row: the agent ends the call itself rather than apologising forever.
        assert.match(lines, /assistant: .*technical difficulties/, lines);
        assert.equal(call.call_ended_by, 'ASSISTANT');
        // Each failed request is counted for the operator (GET /metrics).
        const scrape = await t.app.inject({ method: 'GET', url: '/metrics' });
        assert.match(scrape.body, /openline_provider_errors_total\{provider="[^"]+",kind="http_500"\} [1-9]/);
      } else {
        // 300 ms of real time is 7.5 s of call time at 25x: the sandbox person gives up and hangs
        // up while the agent apologises (the line is cut where they hung up).
        assert.match(lines, /assistant: Sorry,/, lines);
      }
    });
  }

  it('a custom tool called with arguments that are not JSON never reaches its URL; the transcript says why', async () => {
    const tool = await startReceiver((_req, res) => res.end('{"ok":true}'));
    try {
      fake.handler = (r): FakeReply => {
        if (assistantTurns(r) === 0) return { text: 'Hi! Shall I check the order status for you?' };
        const told = r.body.messages.filter((m) => m.role === 'system' && /was not run/.test(String(m.content)));
        // Truncated arguments, then (once told) a goodbye without the tool.
        return told.length === 0
          ? { toolCalls: [{ name: 'Order_Status', arguments: '{"order_id": "A-1' }] }
          : { text: 'Sorry, I could not check it now. Goodbye!', toolCalls: [{ name: 'end_call' }] };
      };
      const { call, lines } = await place(t, {
        task: 'Check the order status with Order Status.',
        tools: [
          {
            name: 'Order Status',
            description: 'Looks an order up',
            url: `${tool.url}/orders`,
            method: 'POST',
            body: { id: '{{input.order_id}}' },
          },
        ],
      });
      assert.equal(call.queue_status, 'complete', lines);
      assert.equal(tool.received.length, 0, 'the tool URL was not called');
      assert.match(lines, /agent-action: Tool Order Status not called: its arguments were not valid JSON/);
      assert.doesNotMatch(lines, /Tool Order Status called with/);
    } finally {
      await tool.close();
    }
  });
});
