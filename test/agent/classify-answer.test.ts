import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CLASSIFY_TIMEOUT_MS, LlmAgent } from '../../src/agent/llm.js';
import { OpenAiProvider } from '../../src/providers/llm/openai.js';
import { FakeOpenAi } from '../../src/testing/fake-openai.js';
import { waitFor } from '../../src/testing/wait.js';

describe("a language model's reading of who answered (LlmAgent.classifyAnswer)", () => {
  let fake: FakeOpenAi;
  let agent: LlmAgent;
  before(async () => {
    fake = await FakeOpenAi.start();
    // The model's own deadline is long: the reading must give up on its own, much sooner.
    agent = new LlmAgent({
      provider: new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 20_000, maxRetries: 0 }),
      model: 'gpt-test',
      now: () => new Date(),
    });
  });
  after(() => fake.close());

  it('sends the first words with one strict function and reads its answer', async () => {
    fake.script({ toolCalls: [{ name: 'classify_answerer', arguments: { answerer: 'person' } }] });
    const words = 'Good morning, Acme Dental, Maria speaking.';
    assert.equal(await agent.classifyAnswer(words, new AbortController().signal), 'human');
    const body = fake.requests.at(-1)!.body;
    assert.equal(body.messages.at(-1)?.content, words);
    assert.equal(body.temperature, 0);
    assert.deepEqual(
      body.tools?.map((t) => t.function.name),
      ['classify_answerer'],
    );
    for (const [said, reading] of [
      ['voicemail', 'voicemail'],
      ['ivr_menu', 'ivr'],
      ['call_screener', 'screener'],
    ] as const) {
      fake.script({ toolCalls: [{ name: 'classify_answerer', arguments: { answerer: said } }] });
      assert.equal(await agent.classifyAnswer(words, new AbortController().signal), reading);
    }
  });

  it('unsure, malformed or a plain text answer: no reading', async () => {
    fake.script(
      { toolCalls: [{ name: 'classify_answerer', arguments: { answerer: 'unsure' } }] },
      { toolCalls: [{ name: 'classify_answerer', arguments: { answerer: 'toString' } }] },
      { toolCalls: [{ name: 'classify_answerer', arguments: '{not json' }] },
      { text: 'It is a person.' },
    );
    for (let i = 0; i < 4; i++)
      assert.equal(await agent.classifyAnswer('Hello?', new AbortController().signal), undefined);
  });

  it('a model that never answers: no reading after CLASSIFY_TIMEOUT_MS, never a hang', async () => {
    fake.script({ hang: 'before-headers' }, { hang: 'before-headers' });
    const started = Date.now();
    assert.equal(await agent.classifyAnswer('Hello?', new AbortController().signal), undefined);
    // Well before the model's own 20 s deadline.
    assert.ok(Date.now() - started < 10_000);
    assert.ok(Date.now() - started >= CLASSIFY_TIMEOUT_MS - 50);
  });

  it('stops at once when its signal aborts (the call ended, the verdict was settled)', async () => {
    const warnings: string[] = [];
    const own = new LlmAgent({
      provider: new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 20_000, maxRetries: 0 }),
      model: 'gpt-test',
      now: () => new Date(),
      log: { warn: (_o, message) => warnings.push(message) },
    });
    fake.script({ hang: 'before-headers' }, { hang: 'before-headers' });
    const before = fake.requests.length;
    const controller = new AbortController();
    const reading = own.classifyAnswer('Hi, this is Mark.', controller.signal);
    await waitFor('the request', () => fake.requests.length > before);
    assert.equal(fake.requests.at(-1)?.body.messages.at(-1)?.content, 'Hi, this is Mark.');
    controller.abort();
    assert.equal(await reading, undefined);
    // Stopped by its signal, not by the deadline (which logs the model as failed).
    assert.deepEqual(warnings, []);
    // The timeout, by contrast, is a failure of the model, logged.
    fake.script({ hang: 'before-headers' }, { hang: 'before-headers' });
    assert.equal(await own.classifyAnswer('Hello?', new AbortController().signal), undefined);
    assert.deepEqual(warnings, ['language model failed to classify who answered']);
  });
});
