import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Agent, AgentContext, AgentInput, AgentReply } from '../../src/agent/types.js';
import { ScriptedLeg, type FarEvent } from '../../src/testing/scripted-leg.js';
import { runSession } from '../../src/testing/session.js';
import { waitFor } from '../../src/testing/wait.js';

interface Asked {
  input: AgentInput;
  signal: AbortSignal | undefined;
  answer(reply: AgentReply): void;
}

/** An agent whose every turn waits until the test answers it (or the session abandons it). */
class GatedAgent implements Agent {
  readonly label = 'gated';
  readonly asked: Asked[] = [];
  constructor(readonly restartable: boolean) {}

  respond(input: AgentInput, ctx: AgentContext): Promise<AgentReply> {
    if (input.kind === 'start') return Promise.resolve({ say: 'Hello, this is the clinic.', action: null });
    return new Promise((resolve) => {
      this.asked.push({ input, signal: ctx.signal, answer: resolve });
      ctx.signal?.addEventListener('abort', () => resolve({ say: null, action: null }), { once: true });
    });
  }
}

function session(agent: Agent) {
  const leg = new ScriptedLeg();
  return { leg, ...runSession(leg, agent) };
}

const heard = (text: string): FarEvent => ({ type: 'speech', text, durationMs: 800 });
const textOf = (input: AgentInput) => (input.kind === 'heard' ? input.text : input.kind);

describe('agent turns run detached from the call (a slow model never holds the call up)', () => {
  it('a hang-up while the model is still writing ends the call at once and cancels the request', async () => {
    const agent = new GatedAgent(true);
    const { leg, outcome } = session(agent);
    await waitFor('the greeting', () => leg.said.length === 1);
    leg.emit(heard('Can I move my appointment?'));
    await waitFor('the agent to be asked', () => agent.asked.length === 1);
    leg.emit({ type: 'hangup', reason: 'remote' });
    const result = await outcome;
    assert.equal(result.endedBy, 'USER');
    assert.equal(agent.asked[0]!.signal?.aborted, true, 'the model request was cancelled');
  });

  it('a stop through the API while the model is writing ends the call, even for an agent that cannot restart', async () => {
    const agent = new GatedAgent(false);
    const { leg, transcript, stop, outcome } = session(agent);
    await waitFor('the greeting', () => leg.said.length === 1);
    leg.emit(heard('Can I move my appointment?'));
    await waitFor('the agent to be asked', () => agent.asked.length === 1);
    stop.abort();
    const result = await outcome;
    assert.equal(result.endedBy, 'ASSISTANT');
    assert.equal(leg.hungUp, true);
    assert.ok(transcript.some((t) => t.text === 'Call stopped through the API'));
    assert.equal(agent.asked[0]!.signal?.aborted, true, 'the call ended: its turn is cancelled whatever the agent');
  });

  it('words the caller adds while the model writes restart the reply with everything they said', async () => {
    const agent = new GatedAgent(true);
    const { leg, transcript, outcome } = session(agent);
    await waitFor('the greeting', () => leg.said.length === 1);
    leg.emit(heard('I need to move my appointment'));
    await waitFor('the agent to be asked', () => agent.asked.length === 1);
    leg.emit({ type: 'speech_start' });
    leg.emit(heard('to next Tuesday please'));
    await waitFor('the agent to be asked again', () => agent.asked.length === 2);
    assert.equal(agent.asked[0]!.signal?.aborted, true, 'the first request was cancelled');
    assert.equal(textOf(agent.asked[1]!.input), 'I need to move my appointment to next Tuesday please');
    agent.asked[1]!.answer({ say: 'Sure, next Tuesday it is.', action: { type: 'finish' } });
    await outcome;
    assert.deepEqual(leg.said, ['Hello, this is the clinic.', 'Sure, next Tuesday it is.']);
    assert.deepEqual(
      transcript.filter((t) => t.role === 'user').map((t) => t.text),
      ['I need to move my appointment to next Tuesday please'],
      'words said on after a pause join the line, with no other line between',
    );
  });

  it("the caller's words after a pause join their line; words after the agent's line, or after the wait, make a new one", async () => {
    const agent = new GatedAgent(true);
    const { leg, transcript, outcome } = session(agent);
    await waitFor('the greeting', () => leg.said.length === 1);
    leg.emit(heard('Okay,'));
    leg.emit(heard('sounds good.'));
    await waitFor('the agent to be asked', () => agent.asked.length >= 1);
    const users = () => transcript.filter((t) => t.role === 'user').map((t) => t.text);
    await waitFor('the line written', () => users().length === 1);
    assert.deepEqual(users(), ['Okay, sounds good.']);
    // Long after the line was written, more words are a line of their own.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    leg.emit(heard('One more thing.'));
    await waitFor('the second line', () => users().length === 2);
    const last = agent.asked.at(-1)!;
    last.answer({ say: 'Of course.', action: { type: 'finish' } });
    await outcome;
    assert.deepEqual(users(), ['Okay, sounds good.', 'One more thing.']);
  });

  it('a reply ready while the caller speaks waits; a cough (no words) lets it go out', async () => {
    const agent = new GatedAgent(true);
    const { leg, outcome } = session(agent);
    await waitFor('the greeting', () => leg.said.length === 1);
    leg.emit(heard('Is the clinic open on Saturday?'));
    await waitFor('the agent to be asked', () => agent.asked.length === 1);
    leg.emit({ type: 'speech_start' });
    agent.asked[0]!.answer({ say: 'Yes, from nine to noon.', action: null });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(leg.said.length, 1, 'nothing is said over the caller');
    leg.emit(heard(''));
    await waitFor('the held reply', () => leg.said.length === 2);
    assert.equal(leg.said[1], 'Yes, from nine to noon.');
    assert.equal(agent.asked.length, 1, 'no second request for a cough');
    leg.emit({ type: 'hangup', reason: 'remote' });
    await outcome;
  });

  it('an agent that cannot restart (a pathway: webhooks, moves) finishes its turn, then answers the new words', async () => {
    const agent = new GatedAgent(false);
    const { leg, outcome } = session(agent);
    await waitFor('the greeting', () => leg.said.length === 1);
    leg.emit(heard('I need to move my appointment'));
    await waitFor('the agent to be asked', () => agent.asked.length === 1);
    leg.emit({ type: 'speech_start' });
    leg.emit(heard('to next Tuesday please'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(agent.asked[0]!.signal?.aborted, false);
    assert.equal(agent.asked.length, 1, 'one turn at a time');
    agent.asked[0]!.answer({ say: 'Which day works for you?', action: null });
    await waitFor('the next turn', () => agent.asked.length === 2);
    assert.equal(textOf(agent.asked[1]!.input), 'to next Tuesday please');
    agent.asked[1]!.answer({ say: 'Tuesday it is. Goodbye!', action: { type: 'finish' } });
    await outcome;
    assert.deepEqual(leg.said.slice(1), ['Which day works for you?', 'Tuesday it is. Goodbye!']);
  });
});
