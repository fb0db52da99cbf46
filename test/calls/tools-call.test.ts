import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, type FakeReply, fakeLlmConfig } from '../../src/testing/fake-openai.js';

type Row = { [k: string]: unknown };
interface Seen {
  method: string;
  url: string;
  body: string;
}

/** A local booking API: /book answers a booking, /customer a customer record. */
async function bookingServer() {
  const seen: Seen[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.startsWith('/customer')) res.end(JSON.stringify({ customer: { name: 'Sam Lee', plan: 'gold' } }));
      else
        res.end(
          JSON.stringify({ booking: { id: 'B-42', time: 'Friday at 3pm' }, message: 'Booked for Friday at 3pm' }),
        );
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  return {
    seen,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

const ended = waitForCall;

async function place(t: TestApp, body: Row): Promise<{ call: Row; lines: string }> {
  const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const call = await ended(t, String(r.body.call_id));
  const lines = (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`).join('\n');
  return { call, lines };
}

const bookTool = (url: string) => ({
  name: 'Book Appointment',
  description: 'Books an appointment for the person called',
  url: `${url}/book`,
  method: 'POST',
  speech: 'One moment while I book that for you.',
  body: { day: '{{input.day}}', phone: '{{phone_number}}' },
  input_schema: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] },
  response: { booking_id: '$.booking.id', booked_time: '$.booking.time' },
});

describe('custom tools and dynamic_data in sandbox calls', () => {
  let s: Awaited<ReturnType<typeof bookingServer>>;
  let t: TestApp;
  before(async () => {
    s = await bookingServer();
    t = await createTestApp({ clock: new ScaledClock(100) });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await s.close();
  });

  it('the offline model books through the tool the task names, says the result; dynamic_data fills variables', async () => {
    const before = s.seen.length;
    const { call, lines } = await place(t, {
      task: 'Book an appointment for {{day}} using Book Appointment.',
      // The person answers each of our lines, so the result could be talked over; keep it whole.
      block_interruptions: true,
      request_data: { day: 'Friday' },
      tools: [bookTool(s.url)],
      dynamic_data: [
        {
          url: `${s.url}/customer`,
          method: 'POST',
          body: { to: '{{short_to}}', call: '{{call_id}}' },
          response_data: [
            { name: 'customer_name', data: '$.customer.name', context: 'The customer is {{customer_name}}.' },
          ],
        },
      ],
    });
    assert.equal(call.queue_status, 'complete', lines);
    const requests = s.seen.slice(before);
    const customer = requests.find((r) => r.url === '/customer')!;
    assert.deepEqual(JSON.parse(customer.body), { to: '4155550100', call: call.call_id });
    const booking = requests.find((r) => r.url === '/book')!;
    assert.equal(booking.method, 'POST');
    assert.deepEqual(JSON.parse(booking.body), { day: 'Friday', phone: '+14155550100' });
    assert.equal(requests.filter((r) => r.url === '/book').length, 1, 'once per call');
    assert.match(lines, /agent-action: Tool Book Appointment called/);
    assert.match(lines, /assistant: One moment while I book that for you\./);
    assert.match(lines, /agent-action: Tool Book Appointment returned: booking id: B-42/);
    assert.match(lines, /assistant: All done\. booking id: B-42, booked time: Friday at 3pm\./);
    const variables = call.variables as Row;
    assert.equal(variables.booking_id, 'B-42');
    assert.equal(variables.booked_time, 'Friday at 3pm');
    assert.equal(variables.customer_name, 'Sam Lee');
  });

  it('a tool saved with POST /v1/tools is used by id; an input_schema mismatch skips it and the call goes on', async () => {
    const created = await t.request('POST', '/v1/tools', {
      ...bookTool(s.url),
      input_schema: { type: 'object', properties: { slot: { type: 'integer' } }, required: ['slot'] },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const before = s.seen.length;
    const { call, lines } = await place(t, {
      task: 'Use book appointment to book a visit.',
      request_data: { day: 'Friday' },
      tools: [created.body.tool_id],
    });
    assert.equal(call.queue_status, 'complete', lines);
    assert.match(lines, /agent-action: Tool Book Appointment skipped: input does not match input_schema/);
    assert.equal(s.seen.slice(before).filter((r) => r.url === '/book').length, 0);
    // The call's events (webhook_events, GET /v1/calls/{id}/events) say what its transcript says.
    const events = (await t.request('GET', `/v1/calls/${String(call.call_id)}/events`)).body as unknown as Row[];
    const toolEvents = events.filter((e) => e.level === 'tool').map((e) => String(e.message));
    const notes = (call.transcripts as { user: string; text: string }[])
      .filter((x) => x.user === 'agent-action' && x.text.startsWith('Tool '))
      .map((x) => x.text);
    assert.deepEqual(toolEvents, notes);
    assert.match(toolEvents[1] ?? '', /^Tool Book Appointment skipped: input does not match input_schema/);
    assert.match(lines, /assistant: I'm sorry, I couldn't get that done right now/);
  });
});

describe('custom tools called by a language model (fake OpenAI server)', () => {
  let s: Awaited<ReturnType<typeof bookingServer>>;
  let fake: FakeOpenAi;
  let t: TestApp;
  before(async () => {
    s = await bookingServer();
    fake = await FakeOpenAi.start();
    t = await createTestApp({
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
    await s.close();
  });

  it('a function call with arguments reaches the tool server and the result is fed back as a tool message', async () => {
    const seen = fake.requests.length;
    // Decided from what the request carries, not from a turn count: the person may talk over
    // the agent, which adds turns.
    fake.handler = (r): FakeReply => {
      const tool = r.body.messages.find((m) => m.role === 'tool');
      const booked = r.body.messages.some((m) => /Tool Book Appointment returned/.test(String(m.content)));
      if (tool || booked) return { text: "You're booked, reference B-42. Goodbye!", toolCalls: [{ name: 'end_call' }] };
      if (r.body.messages.some((m) => m.role === 'user'))
        return { toolCalls: [{ name: 'Book_Appointment', arguments: { day: 'Friday' } }] };
      return { text: 'Hi, this is Openline. Shall I book your appointment for Friday?' };
    };
    const before = s.seen.length;
    const { call, lines } = await place(t, {
      task: 'Book an appointment for Friday.',
      block_interruptions: true,
      tools: [bookTool(s.url)],
      dynamic_data: [
        {
          url: `${s.url}/customer`,
          response_data: [{ name: 'plan', data: '$.customer.plan', context: 'The customer has the {{plan}} plan.' }],
        },
      ],
    });
    assert.equal(call.queue_status, 'complete', lines);
    const booking = s.seen.slice(before).find((r) => r.url === '/book');
    assert.ok(booking, lines);
    assert.equal(JSON.parse(booking.body).day, 'Friday');
    const sent = fake.requests.slice(seen);
    const offered = sent[0]!.body.tools!.find((x) => x.function.name === 'Book_Appointment');
    assert.ok(offered, 'the custom tool is offered as a function');
    assert.deepEqual((offered.function.parameters as Row).required, ['day']);
    assert.match(String(sent[0]!.body.messages[0]!.content), /The customer has the gold plan\./);
    const fed = sent.find((r) => r.body.messages.some((m) => m.role === 'tool'))!;
    assert.ok(fed, 'the result was fed back');
    const toolMessage = fed.body.messages.find((m) => m.role === 'tool')!;
    assert.deepEqual(JSON.parse(String(toolMessage.content)), { booking_id: 'B-42', booked_time: 'Friday at 3pm' });
    assert.ok(fed.body.messages.some((m) => m.role === 'assistant' && Array.isArray(m.tool_calls)));
    assert.match(lines, /agent-action: Tool Book Appointment called/);
    assert.match(lines, /assistant: You're booked, reference B-42/);
    assert.equal((call.variables as Row).booking_id, 'B-42');
    assert.equal((call.variables as Row).plan, 'gold');
  });
});
