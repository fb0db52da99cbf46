import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, type FakeReply, type RecordedRequest, fakeLlmConfig } from '../../src/testing/fake-openai.js';
import { OFFLINE_SUMMARY_LABEL } from '../../src/postcall/summary.js';
import { startReceiver } from '../outbound/receiver.js';

type Row = { [k: string]: unknown };

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, tries = 800): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await probe();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function place(t: TestApp, body: Row): Promise<string> {
  const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.body.call_id);
}

/** Call details once post-call work has stored the summary (it runs after the call is complete). */
const summarized = (t: TestApp, id: string) =>
  until(`call ${id} to be summarized`, async () => {
    const r = await t.request('GET', `/v1/calls/${id}`);
    return r.body.summary !== null && r.body.completed === true ? r.body : undefined;
  });

/** Which of our requests the fake model received: a turn of the call, or post-call work. */
function kind(r: RecordedRequest): 'summary' | 'analysis' | 'analyze' | 'turn' {
  const system = String(r.body.messages[0]?.content ?? '');
  if (system.startsWith('You summarize phone calls')) return 'summary';
  if (system.startsWith('You extract structured data')) return 'analysis';
  if (system.startsWith('You answer questions about a phone call')) return 'analyze';
  return 'turn';
}

const assistantTurns = (r: RecordedRequest) => r.body.messages.filter((m) => m.role === 'assistant').length;

/** A short call: a greeting, the persona's answer, a goodbye with end_call. */
function conversation(r: RecordedRequest): FakeReply {
  return assistantTurns(r) === 0
    ? { text: 'Hi, this is Openline calling to confirm your appointment on May 3rd for two people. Still good?' }
    : { text: 'Wonderful, see you then. Goodbye.', toolCalls: [{ name: 'end_call' }] };
}

describe('post-call summary without a language model', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(200) });
    await t.services.startWorkers();
  });
  after(async () => t.close());

  it('stores a labelled extractive summary; analysis stays null', async () => {
    const id = await place(t, {
      task: 'Confirm the appointment.',
      first_sentence: 'Hello, this is Openline about your appointment.',
      analysis_schema: { confirmed: 'boolean' },
      summary_prompt: 'Mention the date.',
    });
    const call = await summarized(t, id);
    const summary = String(call.summary);
    assert.ok(summary.startsWith(OFFLINE_SUMMARY_LABEL), summary);
    assert.match(summary, /Outbound call to \+14155550100/);
    assert.match(summary, /The agent opened: "Hello, this is Openline about your appointment\."/);
    assert.match(summary, /The person said: "/);
    assert.match(summary, /Ended by (the person called|the agent)\./);
    assert.equal(call.analysis, null);
    assert.deepEqual(call.analysis_schema, { confirmed: 'boolean' });
  });

  it('a call that never connected gets no summary', async () => {
    const id = await place(t, { task: 'Confirm the appointment.', phone_number: '+14155550105' });
    const call = await until('the busy call to end', async () => {
      const r = await t.request('GET', `/v1/calls/${id}`);
      return r.body.completed === true || String(r.body.queue_status).endsWith('error') ? r.body : undefined;
    });
    // Post-call work runs before the webhook step, which runs right after the final state: give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await t.request('GET', `/v1/calls/${id}`)).body.summary, null);
    assert.equal(call.answered_by, 'no-answer');
  });

  it('analyze answers 200 with null answers, naming the settings that enable a model; 404 for unknown calls', async () => {
    const id = await place(t, { task: 'Confirm the appointment.' });
    await summarized(t, id);
    const body = {
      goal: 'Check',
      questions: [
        ['Did they confirm?', 'boolean'],
        ['When?', 'string'],
      ],
    };
    const r = await t.request('POST', `/v1/calls/${id}/analyze`, body);
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'success');
    assert.deepEqual(r.body.answers, [null, null]);
    assert.match(JSON.stringify(r.body), /OPENAI_API_KEY/);
    assert.match(JSON.stringify(r.body), /OPENLINE_LLM_BASE_URL/);
    const missing = await t.request('POST', `/v1/calls/00000000-0000-0000-0000-000000000000/analyze`, body);
    assert.equal(missing.status, 404);
  });
});

describe('post-call summary and analysis with a language model (fake OpenAI server, clock 25x)', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  /** What the fake answers to analysis requests, in order; then an empty object. */
  let analysisReplies: string[] = [];
  const valid = JSON.stringify({
    confirmed: true,
    day: '2026-05-03',
    party_size: 2,
    notes: 'Wants a window seat',
    topics: ['appointment'],
  });
  const hints = {
    confirmed: 'boolean',
    day: 'YYYY-MM-DD',
    party_size: 'integer',
    notes: 'Anything the customer asked for',
    topics: ['string'],
  };

  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (r) => {
      switch (kind(r)) {
        case 'summary':
          return { text: 'The customer confirmed the appointment on May 3rd for two people.' };
        case 'analysis':
          return { text: analysisReplies.shift() ?? '{}' };
        case 'analyze':
          return { text: JSON.stringify({ answer_1: 'yes', answer_2: '2 people', answer_3: 'human', answer_4: 'no' }) };
        default:
          return conversation(r);
      }
    };
    receiver = await startReceiver();
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
    await receiver.close();
  });

  const requestsOf = (from: number, k: ReturnType<typeof kind>) =>
    fake.requests.slice(from).filter((r) => kind(r) === k);

  it('summary_prompt reaches the model; hints become a schema; the validated analysis is stored', async () => {
    const seen = fake.requests.length;
    analysisReplies = [valid];
    const id = await place(t, {
      task: 'Confirm the appointment.',
      model: 'base',
      summary_prompt: 'Always mention the date of the appointment.',
      analysis_prompt: 'The party size counts adults only.',
      analysis_schema: hints,
    });
    const call = await summarized(t, id);
    assert.equal(call.summary, 'The customer confirmed the appointment on May 3rd for two people.');
    assert.deepEqual(call.analysis, JSON.parse(valid));

    const [summary] = requestsOf(seen, 'summary');
    assert.ok(summary);
    assert.equal(summary.body.model, 'm-base');
    assert.match(String(summary.body.messages[0]!.content), /Always mention the date of the appointment\./);
    // The transcript of the call is what gets summarized.
    assert.match(String(summary.body.messages[1]!.content), /assistant: Hi, this is Openline calling/);

    const analysis = requestsOf(seen, 'analysis');
    assert.equal(analysis.length, 1);
    assert.deepEqual(analysis[0]!.body.response_format, { type: 'json_object' });
    const system = String(analysis[0]!.body.messages[0]!.content);
    assert.match(system, /The party size counts adults only\./);
    const schema = JSON.parse(system.split('\n')[2]!) as { properties: Record<string, Record<string, unknown>> };
    assert.deepEqual(schema.properties.confirmed, { type: ['boolean', 'null'] });
    assert.equal(schema.properties.day!.format, 'date');
    assert.deepEqual(schema.properties.party_size, { type: ['integer', 'null'] });
    assert.equal(schema.properties.notes!.description, 'Anything the customer asked for');
    assert.deepEqual(schema.properties.topics!.type, ['array', 'null']);
  });

  it('an invalid answer is retried once with the errors; a corrected answer is kept', async () => {
    const seen = fake.requests.length;
    analysisReplies = ['Sure! The customer confirmed.', valid.replace('"2026-05-03"', '"May 3rd"'), valid];
    // The first reply is not JSON: retried; the second has a bad date: discarded after the one retry.
    const id = await place(t, { task: 'Confirm the appointment.', analysis_schema: hints });
    const call = await summarized(t, id);
    assert.equal(call.analysis, null);
    const analysis = requestsOf(seen, 'analysis');
    assert.equal(analysis.length, 2);
    const retry = analysis[1]!.body.messages;
    assert.equal(retry.at(-2)!.role, 'assistant');
    assert.match(String(retry.at(-1)!.content), /is not a JSON object/);
    // The call itself is unaffected and still has its summary.
    assert.equal(call.queue_status, 'complete');
    assert.match(String(call.summary), /confirmed/);

    const seen2 = fake.requests.length;
    analysisReplies = [JSON.stringify({ confirmed: 'yes' }), valid];
    const id2 = await place(t, { task: 'Confirm the appointment.', analysis_schema: hints });
    const call2 = await summarized(t, id2);
    assert.deepEqual(call2.analysis, JSON.parse(valid));
    const second = requestsOf(seen2, 'analysis');
    assert.equal(second.length, 2);
    assert.match(String(second[1]!.body.messages.at(-1)!.content), /does not match the schema: .*confirmed/);
  });

  it('analyze answers the questions in order, each typed as asked', async () => {
    const id = await place(t, { task: 'Confirm the appointment.' });
    await summarized(t, id);
    const seen = fake.requests.length;
    const r = await t.request('POST', `/v1/calls/${id}/analyze`, {
      goal: 'Find out whether the appointment is confirmed.',
      questions: [
        ['Did the customer confirm?', 'boolean'],
        ['How many people are coming?', 'number'],
        ['Who answered the call?', 'human or voicemail'],
        ['Did they ask to reschedule?', 'boolean'],
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      status: 'success',
      message: 'Call analyzed successfully',
      answers: [true, 2, 'human', false],
      credits_used: 0,
    });
    const [asked] = requestsOf(seen, 'analyze');
    assert.ok(asked);
    const system = String(asked.body.messages[0]!.content);
    assert.match(system, /Find out whether the appointment is confirmed\./);
    assert.match(system, /answer_3: Who answered the call\? — answer as string \(human or voicemail\)/);

    // Clients that send each question as a bare string: a question answered as a string.
    const seenPlain = fake.requests.length;
    const plain = await t.request('POST', `/v1/calls/${id}/analyze`, {
      goal: 'Find out whether the appointment is confirmed.',
      questions: ['Did the customer confirm?', ['How many people are coming?', 'number']],
    });
    assert.equal(plain.status, 200, JSON.stringify(plain.body));
    assert.equal((plain.body.answers as unknown[]).length, 2);
    const [askedPlain] = requestsOf(seenPlain, 'analyze');
    assert.match(
      String(askedPlain!.body.messages[0]!.content),
      /answer_1: Did the customer confirm\? — answer as string\n/,
    );

    const other = await t.request(
      'POST',
      `/v1/calls/${id}/analyze`,
      { goal: 'x', questions: [['q', 'string']] },
      {
        as: t.otherKey,
      },
    );
    assert.equal(other.status, 404);
    // A model that fails is the provider's trouble, said as such: 503, not a server error.
    fake.script({ status: 500, message: 'down' }, { status: 500, message: 'down' });
    const failed = await t.request('POST', `/v1/calls/${id}/analyze`, { goal: 'x', questions: [['q', 'string']] });
    assert.equal(failed.status, 503, JSON.stringify(failed.body));
    assert.match(String(failed.body.message), /^Call analysis failed/);
    const running = await place(t, { task: 'Confirm the appointment.' });
    const early = await t.request('POST', `/v1/calls/${running}/analyze`, { goal: 'x', questions: [['q', 'string']] });
    assert.equal(early.status, 409);
    await summarized(t, running);
  });

  it('the end-of-call webhook body carries the summary and the analysis', async () => {
    analysisReplies = [valid];
    const id = await place(t, {
      task: 'Confirm the appointment.',
      analysis_schema: hints,
      webhook: `${receiver.url}/hook`,
    });
    const hook = await until('the webhook', async () =>
      receiver.received.find((r) => {
        const body = JSON.parse(r.body) as Row;
        return body.call_id === id && !('category' in body);
      }),
    );
    const body = JSON.parse(hook.body) as Row;
    assert.equal(body.summary, 'The customer confirmed the appointment on May 3rd for two people.');
    assert.deepEqual(body.analysis, JSON.parse(valid));
    assert.deepEqual(body.analysis_schema, hints);
  });

  it('citation_schema_ids: the citation schemas named on Send Call are filled after the call into analysis, with analysis_schema', async () => {
    const created = await t.request('POST', '/v1/citation_schemas', {
      name: 'Follow-up',
      schema: { wants_follow_up: 'boolean' },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const schemaId = String((created.body.data as Row).id);
    // An id that is not a citation schema of the account is named, as a tool id is.
    for (const [ids, as] of [
      [['CS-unknown'], undefined],
      [[schemaId], t.otherKey],
    ] as const) {
      const refused = await t.request(
        'POST',
        '/v1/calls',
        { phone_number: '+14155550100', task: 'Confirm the appointment.', citation_schema_ids: ids },
        as ? { as } : {},
      );
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.match(
        JSON.stringify(refused.body.errors),
        /citation_schema_ids\[0\] .*not a citation schema of this account/,
      );
    }

    const seen = fake.requests.length;
    analysisReplies = [JSON.stringify({ ...(JSON.parse(valid) as Row), wants_follow_up: true })];
    const id = await place(t, {
      task: 'Confirm the appointment.',
      analysis_schema: hints,
      citation_schema_ids: [schemaId],
    });
    const call = await summarized(t, id);
    assert.deepEqual(call.analysis, { ...(JSON.parse(valid) as Row), wants_follow_up: true });
    assert.deepEqual((call.request_data as Row).citation_schema_ids, [schemaId]);
    const [asked] = requestsOf(seen, 'analysis');
    assert.ok(asked);
    const schema = JSON.parse(String(asked.body.messages[0]!.content).split('\n')[2]!) as {
      properties: Record<string, unknown>;
    };
    assert.deepEqual(Object.keys(schema.properties).sort(), [...Object.keys(hints), 'wants_follow_up'].sort());

    // A call with no analysis_schema of its own is analysed for the schema alone.
    analysisReplies = [JSON.stringify({ wants_follow_up: false })];
    const alone = await summarized(
      t,
      await place(t, { task: 'Confirm the appointment.', citation_schema_ids: [schemaId] }),
    );
    assert.deepEqual(alone.analysis, { wants_follow_up: false });
  });

  it('a failing model costs the summary, never the webhook', async () => {
    const handler = fake.handler;
    fake.handler = (r) => (kind(r) === 'turn' ? handler(r) : { status: 500, message: 'down' });
    try {
      const id = await place(t, { task: 'Confirm the appointment.', webhook: `${receiver.url}/hook` });
      const hook = await until('the webhook', async () =>
        receiver.received.find((r) => (JSON.parse(r.body) as Row).call_id === id && !r.body.includes('"category"')),
      );
      const body = JSON.parse(hook.body) as Row;
      assert.equal(body.queue_status, 'complete');
      assert.equal(body.summary, null);
      assert.equal(body.analysis, null);
    } finally {
      fake.handler = handler;
    }
  });
});

describe('an endpoint without JSON mode (fake OpenAI server refusing response_format)', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (r) => {
      if (r.body.response_format) return { status: 400, message: 'response_format is not supported by this model' };
      if (kind(r) === 'summary') return { text: 'Confirmed.' };
      if (kind(r) === 'analysis') return { text: 'Here is the data:\n```json\n{"confirmed": true}\n```' };
      return conversation(r);
    };
    t = await createTestApp({
      clock: new ScaledClock(25),
      config: {
        llm: {
          apiKey: undefined,
          baseUrl: fake.url,
          models: { base: 'local', enhanced: 'local', turbo: 'local' },
          timeoutMs: 2000,
        },
      },
    });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('asks again without response_format and takes the JSON from the text', async () => {
    const id = await place(t, { task: 'Confirm the appointment.', analysis_schema: { confirmed: 'boolean' } });
    const call = await summarized(t, id);
    assert.deepEqual(call.analysis, { confirmed: true });
    const analysis = fake.requests.filter((r) => kind(r) === 'analysis');
    assert.equal(analysis.length, 2);
    assert.deepEqual(analysis[0]!.body.response_format, { type: 'json_object' });
    assert.equal(analysis[1]!.body.response_format, undefined);
  });
});
