import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { LlmAgent, FALLBACK_LINE, toolsFor } from '../../src/agent/llm.js';
import type { AgentContext, Turn } from '../../src/agent/types.js';
import type { CallRequest } from '../../src/schemas/call-request.js';
import { callRequest } from '../../src/testing/call-request.js';
import { OpenAiProvider, ToolCallAssembler } from '../../src/providers/llm/openai.js';
import { complete, LlmError, type LlmEvent } from '../../src/providers/llm/types.js';
import { FakeOpenAi } from '../../src/testing/fake-openai.js';
import { loadConfig } from '../../src/config.js';
import { stdSerializers } from 'pino';

function context(request: Partial<CallRequest> = {}, transcript: Turn[] = []): AgentContext {
  const r = callRequest(request);
  return {
    callId: 'call-1',
    request: r,
    inbound: false,
    variables: { call_id: 'call-1', phone_number: '+14155550100', ...r.request_data },
    transcript,
  };
}

async function failure(promise: Promise<unknown>): Promise<LlmError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof LlmError, String(error));
    return error;
  }
  throw new Error('expected a failure');
}

describe('LLM configuration', () => {
  it('is off without a base URL or API key, and the model names default to OPENLINE_LLM_MODEL', () => {
    assert.equal(loadConfig({}).llm, undefined);
    const llm = loadConfig({ OPENLINE_LLM_BASE_URL: 'http://localhost:11434/v1', OPENLINE_LLM_MODEL: 'llama3.1' }).llm;
    assert.deepEqual(llm?.models, { base: 'llama3.1', enhanced: 'llama3.1', turbo: 'llama3.1' });
    assert.equal(llm?.timeoutMs, 8000);
    const openai = loadConfig({ OPENAI_API_KEY: 'sk-x', OPENLINE_LLM_MODEL_TURBO: 'gpt-4.1-nano' }).llm;
    assert.deepEqual(openai?.models, { base: 'gpt-4o-mini', enhanced: 'gpt-4o-mini', turbo: 'gpt-4.1-nano' });
  });

  it('names the variable of a bad value', () => {
    assert.throws(
      () => loadConfig({ OPENLINE_LLM_BASE_URL: 'localhost:11434' }),
      /OPENLINE_LLM_BASE_URL must start with http/,
    );
    assert.throws(
      () => loadConfig({ OPENAI_API_KEY: 'k', OPENLINE_LLM_TIMEOUT_MS: 'soon' }),
      /OPENLINE_LLM_TIMEOUT_MS/,
    );
    assert.throws(() => loadConfig({ OPENAI_API_KEY: 'k', OPENLINE_LLM_MODEL: 'a b' }), /OPENLINE_LLM_MODEL /);
  });
});

describe('OpenAI-compatible adapter (official SDK against the fake server)', () => {
  let fake: FakeOpenAi;
  let provider: OpenAiProvider;
  before(async () => {
    fake = await FakeOpenAi.start();
    provider = new OpenAiProvider({ apiKey: 'sk-test', baseUrl: fake.url, timeoutMs: 400 });
  });
  after(() => fake.close());

  it('streams text deltas and assembles split, parallel tool calls', async () => {
    fake.script({
      text: 'Let me do two things.',
      chunkSize: 3,
      toolCalls: [
        { name: 'press_buttons', arguments: { digits: '1234#' } },
        { name: 'transfer', arguments: { label: 'sales' } },
      ],
    });
    const events: LlmEvent[] = [];
    for await (const e of provider.stream({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }))
      events.push(e);
    assert.ok(events.filter((e) => e.type === 'text').length > 3, 'text came in several deltas');
    const text = events.map((e) => (e.type === 'text' ? e.delta : '')).join('');
    assert.equal(text, 'Let me do two things.');
    const calls = events.flatMap((e) => (e.type === 'tool_call' ? [e.call] : []));
    assert.deepEqual(
      calls.map((c) => [c.name, JSON.parse(c.arguments)]),
      [
        ['press_buttons', { digits: '1234#' }],
        ['transfer', { label: 'sales' }],
      ],
    );
    assert.ok(calls.every((c) => c.id.startsWith('call_')));
    assert.deepEqual(events.at(-1), { type: 'done', finishReason: 'tool_calls' });
    const sent = fake.requests.at(-1)!;
    assert.equal(sent.body.stream, true);
    assert.equal(sent.authorization, 'Bearer sk-test');
  });

  it("a model that takes no temperature (OpenAI's reasoning models) is asked again without one, and from then on", async () => {
    const reasoning = await FakeOpenAi.start();
    reasoning.handler = (r) =>
      r.body.temperature !== undefined && r.body.temperature !== 1
        ? {
            status: 400,
            message: `Unsupported value: 'temperature' does not support ${r.body.temperature} with this model. Only the default (1) value is supported.`,
            param: 'temperature',
            code: 'unsupported_value',
          }
        : { text: 'Sure.' };
    try {
      const model = new OpenAiProvider({ apiKey: 'k', baseUrl: reasoning.url, timeoutMs: 2000 });
      const ask = () =>
        complete(model, { model: 'o4-mini', messages: [{ role: 'user', content: 'x' }], temperature: 0.7 });
      assert.equal((await ask()).text, 'Sure.');
      assert.equal((await ask()).text, 'Sure.');
      assert.deepEqual(
        reasoning.requests.map((r) => r.body.temperature),
        [0.7, undefined, undefined],
      );
      // Another 400 is still a failure of its own.
      reasoning.script({ status: 400, message: 'bad', param: 'messages' });
      const error = await failure(ask());
      assert.equal(error.status, 400);
    } finally {
      await reasoning.close();
    }
  });

  it('a 500 is a retryable LlmError after one retry; a 400 is not retryable (and not retried)', async () => {
    const before = fake.requests.length;
    fake.script({ status: 500 }, { status: 500 });
    const error = await failure(complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
    assert.equal(error.status, 500);
    assert.equal(error.retryable, true);
    assert.equal(fake.requests.length - before, 2);
    fake.script({ status: 400, message: 'bad' });
    const beforeBad = fake.requests.length;
    const bad = await failure(complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
    assert.equal(bad.retryable, false);
    assert.equal(fake.requests.length - beforeBad, 1);
  });

  it('a request that failed before its first token is retried once and the reply comes whole', async () => {
    const retries: number[] = [];
    fake.script({ status: 503 }, { text: 'Here I am.' });
    const reply = await complete(
      provider,
      { model: 'm', messages: [{ role: 'user', content: 'x' }] },
      { onRetry: (_error, attempt) => retries.push(attempt) },
    );
    assert.equal(reply.text, 'Here I am.');
    assert.deepEqual(retries, [1]);
  });

  it('a stream that stops sending after its first words fails at the stall timeout, long before the deadline, and is not retried', async () => {
    const stalling = new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 60_000, stallMs: 150 });
    fake.script({ hang: 'mid-stream', text: 'Let me check' });
    const before = fake.requests.length;
    const started = Date.now();
    let heard = '';
    const error = await failure(
      complete(stalling, { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { onText: (d) => (heard += d) }),
    );
    assert.match(error.message, /sent nothing for 150 ms/);
    assert.equal(error.retryable, true);
    assert.ok(heard.length > 0, 'words came before the stall');
    assert.equal(fake.requests.length - before, 1, 'words were heard: no second request');
    assert.ok(Date.now() - started < 30_000);
  });

  it('a chunk that is not JSON before the first token is tried again; after words were heard it is a failure', async () => {
    fake.script({ malformed: true }, { text: 'Still here.' });
    const reply = await complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(reply.text, 'Still here.');
    fake.script({ malformed: true, text: 'Let me' });
    const before = fake.requests.length;
    const error = await failure(complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
    assert.match(error.message, /not JSON/);
    assert.equal(fake.requests.length - before, 1, 'words were heard: no second request');
  });

  it('a connection that breaks before the first token is tried again; after words were heard it is not', async () => {
    const retries: string[] = [];
    fake.script({ drop: 'mid-stream' }, { text: 'Still here.' });
    const reply = await complete(
      provider,
      { model: 'm', messages: [{ role: 'user', content: 'x' }] },
      { onRetry: (error) => retries.push(error.message) },
    );
    assert.equal(reply.text, 'Still here.');
    assert.equal(retries.length, 1);
    assert.match(retries[0]!, /broke off/);
    fake.script({ drop: 'mid-stream', text: 'Let me' });
    const before = fake.requests.length;
    const error = await failure(complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
    assert.match(error.message, /broke off/);
    assert.equal(fake.requests.length - before, 1, 'words were heard: no second request');
  });

  it('a refused key appears neither in the error nor in its log line, whether the server masks it or echoes it', async () => {
    const guarded = await FakeOpenAi.start({ apiKey: 'sk-right-key' });
    const key = 'sk-wrong-0123456789abcdef';
    const wrong = new OpenAiProvider({ apiKey: key, baseUrl: guarded.url, timeoutMs: 2000 });
    const logged = (error: LlmError) => JSON.stringify({ ...stdSerializers.err(error), raw: undefined });
    try {
      const refused = await failure(complete(wrong, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
      assert.equal(refused.status, 401);
      assert.match(refused.message, /check OPENAI_API_KEY/);
      assert.match(guarded.requests[0]!.authorization!, /cdef$/, 'the fake quotes the key it got');
      for (const text of [refused.message, logged(refused)]) assert.doesNotMatch(text, /sk-wrong|cdef|\*\*\*/);
      // A server that quotes the whole key in its message.
      fake.script({ status: 403, message: `Key ${key} is not allowed here` });
      const echoing = new OpenAiProvider({ apiKey: key, baseUrl: fake.url, timeoutMs: 2000 });
      const echoed = await failure(complete(echoing, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
      assert.match(echoed.message, /not allowed here/);
      for (const text of [echoed.message, logged(echoed)]) assert.ok(!text.includes(key), text);
    } finally {
      await guarded.close();
    }
  });

  it("a reasoning model's thinking is never part of the reply, in its own field or between <think> tags", async () => {
    for (const as of ['reasoning_content', 'reasoning', 'think-tags'] as const) {
      for (const chunkSize of [1, 3, 64]) {
        fake.script({ reasoning: { text: 'The user <wants> a time. Say noon.', as }, text: 'It is noon.', chunkSize });
        const texts: string[] = [];
        const reply = await complete(
          provider,
          { model: 'm', messages: [{ role: 'user', content: 'x' }] },
          { onText: (delta) => texts.push(delta) },
        );
        assert.equal(reply.text.trim(), 'It is noon.', `${as}, ${chunkSize} characters a delta`);
        assert.equal(texts.join(''), reply.text);
      }
    }
    // A reply that only mentions the tag, not at its start, is said as written.
    fake.script({ text: 'Type <think> in the box.', chunkSize: 2 });
    const plain = await complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(plain.text, 'Type <think> in the box.');
  });

  it('a 429 is retried after the wait it names (retry-after-ms or Retry-After), a 5xx that names none after the backoff', async () => {
    const waits: (number | undefined)[] = [];
    const onRetry = (error: LlmError) => waits.push(error.retryAfterMs);
    fake.script({ status: 429, retryAfterMs: 20 }, { text: 'Back again.' });
    const reply = await complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { onRetry });
    assert.equal(reply.text, 'Back again.');
    fake.script({ status: 429, retryAfterS: 1 }, { text: 'Back again.' }, { status: 502 }, { text: 'Back again.' });
    for (let i = 0; i < 2; i++)
      assert.equal(
        (await complete(provider, { model: 'm', messages: [{ role: 'user', content: 'x' }] }, { onRetry })).text,
        'Back again.',
      );
    assert.deepEqual(waits, [20, 1000, undefined]);
  });

  it('a slow model that keeps streaming is heard to the end: the deadline runs only until its first word', async () => {
    const slow = new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 300, stallMs: 300, maxRetries: 0 });
    const text = 'Sure, let me read the whole order back to you, item by item, so that nothing is missed.';
    fake.script({ text, chunkSize: 4, streamMs: 1500 });
    const reply = await complete(slow, { model: 'm', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(reply.text, text);
  });

  it('a server that hangs, before or in the middle of the stream, times out as a retryable error', async () => {
    const quick = new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 200, maxRetries: 0 });
    for (const hang of ['before-headers', 'mid-stream'] as const) {
      fake.script({ hang }, { hang });
      const started = Date.now();
      const error = await failure(complete(quick, { model: 'm', messages: [{ role: 'user', content: 'x' }] }));
      assert.match(error.message, /in time/, hang);
      assert.equal(error.retryable, true);
      assert.ok(Date.now() - started < 2000, `${hang} took ${Date.now() - started} ms`);
    }
  });
});

describe('streamed tool calls put back together', () => {
  it('calls by index, pieces in any order; a repeated id or name is the same call; a new id at an index is a new call', () => {
    const assembler = new ToolCallAssembler();
    assembler.add([{ index: 0, id: 'a', type: 'function', function: { name: 'wait', arguments: '' } }]);
    assembler.add([{ index: 1, id: 'b', type: 'function', function: { name: 'press_buttons', arguments: '{"dig' } }]);
    assembler.add([{ index: 0, id: 'a', function: { name: 'wait', arguments: '{}' } }]);
    assembler.add([{ index: 1, function: { arguments: 'its":"1"}' } }]);
    // Servers that number every parallel call 0: each new id starts a call of its own.
    assembler.add([{ index: 0, id: 'c', type: 'function', function: { name: 'end_call', arguments: '{' } }]);
    assembler.add([{ index: 0, function: { arguments: '}' } }]);
    assert.deepEqual(assembler.finish(), [
      { id: 'a', name: 'wait', arguments: '{}' },
      { id: 'b', name: 'press_buttons', arguments: '{"digits":"1"}' },
      { id: 'c', name: 'end_call', arguments: '{}' },
    ]);
  });
});

describe('LlmAgent', () => {
  let fake: FakeOpenAi;
  let agent: LlmAgent;
  const now = new Date('2025-03-04T17:30:00Z');
  before(async () => {
    fake = await FakeOpenAi.start();
    agent = new LlmAgent({
      provider: new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 300, maxRetries: 0 }),
      model: 'gpt-test',
      now: () => now,
    });
  });
  after(() => fake.close());

  it('is labelled with the model id', () => {
    assert.equal(agent.label, 'gpt-test');
  });

  it('prompts with the task rendered with variables, language, timezone, time, request_data; sends temperature and model', async () => {
    fake.script({ text: 'Hi Alice, this is Dr. Smith’s office.' });
    const reply = await agent.respond(
      { kind: 'start' },
      context({
        task: 'Confirm the appointment of {{name}} on {{day}}.',
        request_data: { name: 'Alice', day: 'Tuesday' },
        language: 'es-ES',
        timezone: 'Europe/Madrid',
        temperature: 0.2,
        transfer_list: { sales: '+14155550110' },
      }),
    );
    assert.deepEqual(reply, { say: 'Hi Alice, this is Dr. Smith’s office.', action: null });
    const { body } = fake.requests.at(-1)!;
    const system = String(body.messages[0]!.content);
    assert.equal(body.messages[0]!.role, 'system');
    assert.match(system, /Confirm the appointment of Alice on Tuesday\./);
    assert.match(system, /es-ES/);
    assert.match(system, /Europe\/Madrid/);
    assert.match(system, /Tuesday, March 4, 2025 at 6:30:00/);
    assert.match(system, /"name":"Alice"/);
    assert.equal(body.temperature, 0.2);
    assert.equal(body.model, 'gpt-test');
    assert.deepEqual(
      body.tools?.map((t) => t.function.name),
      ['end_call', 'wait', 'press_buttons', 'transfer'],
    );
  });

  it('turbo gets no transfer and no press_buttons', () => {
    const names = toolsFor(callRequest({ model: 'turbo', transfer_list: { sales: '+14155550110' } })).map(
      (t) => t.name,
    );
    assert.deepEqual(names, ['end_call', 'wait']);
  });

  it('says first_sentence verbatim without asking the model', async () => {
    const before = fake.requests.length;
    const reply = await agent.respond(
      { kind: 'start' },
      context({ first_sentence: 'Hello {{name}}!', request_data: { name: 'Bo' } }),
    );
    assert.deepEqual(reply, { say: 'Hello Bo!', action: null });
    assert.equal(fake.requests.length, before);
  });

  it('maps the conversation to chat roles and the tool calls to actions', async () => {
    fake.script({ text: 'Transferring you now.', toolCalls: [{ name: 'transfer', arguments: { label: 'sales' } }] });
    const transcript: Turn[] = [
      { role: 'assistant', text: 'Hello!' },
      { role: 'robot', text: 'Please hold.' },
      { role: 'agent-action', text: 'Pressed buttons: 1' },
      { role: 'user', text: 'Put me through to sales.' },
    ];
    const reply = await agent.respond(
      { kind: 'heard', text: 'Put me through to sales.' },
      context({ transfer_list: { sales: '+14155550110' } }, transcript),
    );
    assert.deepEqual(reply, { say: 'Transferring you now.', action: { type: 'transfer', target: 'sales' } });
    const roles = fake.requests.at(-1)!.body.messages.map((m) => `${m.role}: ${m.content}`);
    assert.deepEqual(roles.slice(1), [
      'assistant: Hello!',
      'user: [automated voice] Please hold.',
      'system: Note: Pressed buttons: 1',
      'user: Put me through to sales.',
    ]);
  });

  it('answers a transfer that failed (the caller is back) with its result, paired with the transfer call', async () => {
    fake.script({ text: 'One moment.', toolCalls: [{ name: 'transfer', arguments: {} }] });
    const ctx = context({ transfer_phone_number: '+14155550110' }, [{ role: 'user', text: 'Billing, please.' }]);
    const asked = await agent.respond({ kind: 'heard', text: 'Billing, please.' }, ctx);
    assert.deepEqual(asked.action, { type: 'transfer' });
    fake.script({ text: "Sorry, billing isn't answering. Can I help you instead?" });
    const reply = await agent.respond(
      { kind: 'tool_result', name: 'transfer', ok: false, result: {}, error: 'The transfer target is busy' },
      ctx,
    );
    assert.equal(reply.say, "Sorry, billing isn't answering. Can I help you instead?");
    const messages = fake.requests.at(-1)!.body.messages as unknown as Record<string, unknown>[];
    const [call, result] = messages.slice(-2);
    const calls = call!.tool_calls as { id: string; function: { name: string } }[];
    assert.deepEqual([call!.role, calls[0]!.function.name], ['assistant', 'transfer']);
    assert.deepEqual(result, {
      role: 'tool',
      tool_call_id: calls[0]!.id,
      content: JSON.stringify({ error: 'The transfer target is busy' }),
    });
  });

  it('chooses on an IVR menu with one tool call over the parsed options, and ends on end_call', async () => {
    fake.script({ toolCalls: [{ name: 'choose_menu_option', arguments: '{"option": "2"}' }] });
    const ivr = await agent.respond({ kind: 'ivr_menu', text: 'Press 1 for sales, press 2 for support.' }, context());
    assert.deepEqual(ivr, { say: null, action: { type: 'press_buttons', digits: '2' } });
    const asked = fake.requests.at(-1)!.body;
    assert.deepEqual(
      asked.tools!.map((x) => x.function.name),
      ['choose_menu_option'],
    );
    assert.deepEqual(
      (asked.tools![0]!.function.parameters as { properties: { option: { enum: string[] } } }).properties.option.enum,
      ['1', '2', 'none'],
    );
    assert.match(String(asked.messages.at(-1)!.content), /- key 1: sales\n- key 2: support/);
    // A key the menu did not offer is never pressed; "none" presses nothing.
    fake.script({ toolCalls: [{ name: 'choose_menu_option', arguments: '{"option": "5"}' }] });
    const offMenu = await agent.respond(
      { kind: 'ivr_menu', text: 'Press 1 for sales, press 2 for support.' },
      context(),
    );
    assert.equal(offMenu.action, null);
    assert.match(offMenu.note ?? '', /did not offer/);
    fake.script({ toolCalls: [{ name: 'choose_menu_option', arguments: '{"option": "none"}' }] });
    const none = await agent.respond({ kind: 'ivr_menu', text: 'Press 1 for sales, press 2 for support.' }, context());
    assert.equal(none.action, null);
    // A failing model leaves the choice to the offline rules.
    fake.script({ status: 400 });
    const failed = await agent.respond(
      { kind: 'ivr_menu', text: 'Press 1 for sales, press 2 for support.' },
      context({ task: 'Reach the support team.' }),
    );
    assert.deepEqual(failed.action, { type: 'press_buttons', digits: '2' });
    assert.match(failed.note ?? '', /offline rules/);
    fake.script({ text: 'Goodbye!', toolCalls: [{ name: 'end_call' }] });
    const bye = await agent.respond({ kind: 'heard', text: 'bye' }, context());
    assert.deepEqual(bye, { say: 'Goodbye!', action: { type: 'finish' } });
  });

  it('a failing or hanging model gives the fallback line; three failures in a row end the call', async () => {
    const own = new LlmAgent({
      provider: new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 200, maxRetries: 0 }),
      model: 'gpt-test',
      now: () => now,
    });
    // Each turn's request is tried twice (complete() retries a failure before the first token once).
    fake.script(
      { status: 500 },
      { status: 500 },
      { hang: 'mid-stream' },
      { hang: 'mid-stream' },
      { status: 503 },
      { status: 503 },
    );
    const first = await own.respond({ kind: 'heard', text: 'hi' }, context());
    assert.deepEqual([first.say, first.action], [FALLBACK_LINE, null]);
    assert.match(String(first.note), /^Language model failed \(.*500.*\): fallback line said$/);
    const second = await own.respond({ kind: 'heard', text: 'hi' }, context());
    assert.deepEqual([second.say, second.action], [FALLBACK_LINE, null]);
    const last = await own.respond({ kind: 'heard', text: 'hi' }, context());
    assert.deepEqual(last.action, { type: 'finish', force: true }, 'the call ends even if the goodbye is talked over');
    assert.match(String(last.note), /gave up$/);
  });

  it('custom tool arguments that are not a JSON object: the model is told and asked again, the tool is not run with {}', async () => {
    const tools = [
      {
        name: 'Book Slot',
        description: 'Books an appointment slot',
        url: 'https://example.com/book',
        method: 'POST' as const,
        timeout: 10_000,
        input_schema: { type: 'object', properties: { date: { type: 'string' } }, required: ['date'] },
      },
    ];
    // A truncated object (the model stopped mid-way), then a corrected call.
    fake.script(
      { text: 'Let me book that.', toolCalls: [{ name: 'Book_Slot', arguments: '{"date": "2025-03-05' }] },
      { toolCalls: [{ name: 'Book_Slot', arguments: '{"date": "2025-03-05"}' }] },
    );
    const seen = fake.requests.length;
    const fixed = await agent.respond({ kind: 'heard', text: 'Book me for tomorrow.' }, context({ tools }));
    assert.deepEqual(fixed.action, { type: 'tool', name: 'Book Slot', input: { date: '2025-03-05' } });
    assert.equal(fixed.say, 'Let me book that.');
    assert.match(String(fixed.note), /Tool Book Slot not called: its arguments were not valid JSON/);
    assert.equal(fake.requests.length, seen + 2, 'asked once more');
    const told = fake.requests
      .at(-1)!
      .body.messages.map((m) => String(m.content))
      .join('\n');
    assert.match(told, /Book_Slot.*not valid JSON[^]*2025-03-05/);
    // Still unreadable (here: an array, not an object) after being told: no tool runs at all.
    fake.script(
      { toolCalls: [{ name: 'Book_Slot', arguments: 'date=tomorrow' }] },
      { text: 'Sorry, one moment.', toolCalls: [{ name: 'Book_Slot', arguments: '["2025-03-05"]' }] },
    );
    const failed = await agent.respond({ kind: 'heard', text: 'Book me for tomorrow.' }, context({ tools }));
    assert.equal(failed.action, null);
    assert.equal(failed.say, 'Sorry, one moment.');
    assert.match(String(failed.note), /not a JSON object/);
    // Built-in actions stay lenient: end_call with junk arguments still hangs up.
    fake.script({ text: 'Bye!', toolCalls: [{ name: 'end_call', arguments: '{oops' }] });
    const bye = await agent.respond({ kind: 'heard', text: 'bye' }, context({ tools }));
    assert.deepEqual(bye.action, { type: 'finish' });
  });

  it('silence: re-prompts, and ends the call at the third silence whatever the model says', async () => {
    fake.script({ text: 'Are you still there?' }, { text: 'Hello?' });
    assert.deepEqual(await agent.respond({ kind: 'silence', silentMs: 5000, times: 1 }, context()), {
      say: 'Are you still there?',
      action: null,
    });
    const third = await agent.respond({ kind: 'silence', silentMs: 15000, times: 3 }, context());
    assert.deepEqual(third.action, { type: 'finish' });
  });
});
