import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../../src/clock.js';
import { LlmAgent } from '../../src/agent/llm.js';
import type { Agent, AnswerReading } from '../../src/agent/types.js';
import { AudioScriptedLeg } from '../../src/testing/scripted-leg.js';
import { runSession } from '../../src/testing/session.js';
import { OpenAiProvider } from '../../src/providers/llm/openai.js';
import { callRequest } from '../../src/testing/call-request.js';
import { FakeOpenAi, type FakeReply, type RecordedRequest } from '../../src/testing/fake-openai.js';
import { waitFor } from '../../src/testing/wait.js';

const isReading = (r: RecordedRequest) => r.body.tools?.some((t) => t.function.name === 'classify_answerer') ?? false;

describe("who answered, with the agent's language model reading the first words", () => {
  let fake: FakeOpenAi;
  /** The model's reading of the first words; the conversation gets a plain line. */
  let reading: FakeReply;
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (r) => (isReading(r) ? reading : { text: 'Hello, this is the clinic calling.' });
  });
  after(() => fake.close());

  const says = (answerer: string): FakeReply => ({
    toolCalls: [{ name: 'classify_answerer', arguments: { answerer } }],
  });

  function session() {
    const leg = new AudioScriptedLeg();
    const llm = new LlmAgent({
      provider: new OpenAiProvider({ apiKey: 'k', baseUrl: fake.url, timeoutMs: 10_000, maxRetries: 0 }),
      model: 'gpt-test',
      now: () => new Date(),
    });
    const signals: AbortSignal[] = [];
    // The LlmAgent itself, with the reading's signal kept to see when it is stopped.
    const agent: Agent = {
      label: llm.label,
      restartable: true,
      respond: (input, ctx) => llm.respond(input, ctx),
      classifyAnswer: (words, signal): Promise<AnswerReading | undefined> => {
        signals.push(signal);
        return llm.classifyAnswer(words, signal);
      },
    };
    const { transcript, outcome } = runSession(leg, agent, {
      request: callRequest({ task: 'Confirm the appointment.' }),
      clock: systemClock,
    });
    return { leg, transcript, outcome, signals };
  }

  const readings = () => fake.requests.filter(isReading).length;

  /** A receptionist's greeting (no question in it, naming nobody) that the audio leaned machine on. */
  async function businessGreeting(leg: AudioScriptedLeg): Promise<void> {
    await waitFor('the greeting', () => leg.said.length >= 1);
    leg.emit({ type: 'speech_start' });
    leg.emit({ type: 'answered_by', answeredBy: 'voicemail', messageEnded: false });
    leg.emit({ type: 'speech', text: 'Good morning, Acme Dental, front desk.', durationMs: 2600 });
  }

  it("a person's business greeting the audio leaned machine on stays a person; the request carries the words", async () => {
    reading = says('person');
    const before = readings();
    const { leg, transcript, outcome } = session();
    await businessGreeting(leg);
    await waitFor('the decision', () => transcript.some((t) => /Who answered, decided by/.test(t.text)));
    assert.match(
      fake.requests.filter(isReading).at(-1)!.body.messages.at(-1)!.content ?? '',
      /Acme Dental, front desk/,
    );
    assert.equal(readings(), before + 1, 'asked once');
    leg.emit({ type: 'hangup', reason: 'remote' });
    const result = await outcome;
    assert.equal(result.answerer, 'human');
    assert.ok(
      transcript.some((t) => t.text.includes('the language model: a person, over the audio leaning to a machine')),
      JSON.stringify(transcript),
    );
  });

  it('a model that never answers changes nothing: the audio and the words decide', async () => {
    reading = { hang: 'before-headers' };
    const { leg, transcript, outcome } = session();
    await businessGreeting(leg);
    // The five seconds end with the words naming nothing: unknown, as without a model.
    await new Promise((resolve) => setTimeout(resolve, 5500));
    leg.emit({ type: 'hangup', reason: 'remote' });
    const result = await outcome;
    assert.equal(result.answerer, 'unknown');
    assert.ok(!transcript.some((t) => /Who answered, decided by/.test(t.text)));
  });

  /** The audio heard a person (a short greeting that paused), then a voicemail's words without a beep. */
  async function voicemailWithoutBeep(leg: AudioScriptedLeg): Promise<void> {
    await waitFor('the greeting', () => leg.said.length >= 1);
    leg.emit({ type: 'speech_start' });
    leg.emit({ type: 'speech', text: 'Hi, this is Mark.', durationMs: 1200 });
    leg.emit({ type: 'answered_by', answeredBy: 'human', messageEnded: false });
    await waitFor('the reading', () => readings() > 0);
  }

  it('a voicemail greeting without a beep, the model saying voicemail: voicemail only with the words', async () => {
    reading = says('voicemail');
    const before = readings();
    const first = session();
    await voicemailWithoutBeep(first.leg);
    await waitFor('the reading', () => readings() > before);
    first.leg.emit({ type: 'speech', text: "Sorry I can't get to the phone right now.", durationMs: 2200 });
    const result = await first.outcome;
    assert.equal(result.answerer, 'voicemail');
    assert.ok(
      first.transcript.some((t) => t.text.includes("language model (voicemail) with a machine's words")),
      JSON.stringify(first.transcript),
    );

    // The model's voicemail alone, against the audio's person, with words no machine needs: a person.
    const second = session();
    await voicemailWithoutBeep(second.leg);
    second.leg.emit({ type: 'speech', text: 'Talk to you soon.', durationMs: 1200 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    second.leg.emit({ type: 'hangup', reason: 'remote' });
    assert.equal((await second.outcome).answerer, 'human');
  });

  it('the reading is stopped when the call ends', async () => {
    reading = { hang: 'before-headers' };
    const before = readings();
    const { leg, outcome, signals } = session();
    await waitFor('the greeting', () => leg.said.length >= 1);
    leg.emit({ type: 'speech_start' });
    leg.emit({ type: 'speech', text: 'Hello, Johnson residence.', durationMs: 1400 });
    await waitFor('the reading', () => readings() > before);
    assert.equal(signals.length, 1);
    assert.equal(signals[0]!.aborted, false);
    leg.emit({ type: 'hangup', reason: 'remote' });
    await outcome;
    assert.equal(signals[0]!.aborted, true);
  });
});
