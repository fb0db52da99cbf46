import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Agent, AgentInput } from '../../src/agent/types.js';
import type { SpeakResult, SpeechText } from '../../src/carriers/types.js';
import { ScriptedLeg } from '../../src/testing/scripted-leg.js';
import { runSession } from '../../src/testing/session.js';
import { waitFor } from '../../src/testing/wait.js';

const OPENING = 'Hello, this is Openline calling about your order number four five six.';

/** A leg whose utterances last until the test ends them, and which can be paused. */
class TalkingLeg extends ScriptedLeg {
  pauses = 0;
  private ending: ((result: SpeakResult) => void) | undefined;

  override speak(text: SpeechText, options: { signal?: AbortSignal } = {}): Promise<SpeakResult> {
    this.said.push(typeof text === 'string' ? text : '');
    return new Promise((resolve) => {
      this.ending = resolve;
      options.signal?.addEventListener('abort', () => resolve({ played: '', interrupted: true }), { once: true });
    });
  }

  pause(): void {
    this.pauses++;
  }

  resume(): void {}

  /** The utterance under way plays to its end. */
  finish(): void {
    this.ending?.({ played: this.said.at(-1) ?? '', interrupted: false });
  }
}

function call() {
  const leg = new TalkingLeg('audio');
  const heard: string[] = [];
  const agent: Agent = {
    label: 'opening',
    respond: (input: AgentInput) => {
      if (input.kind === 'heard') heard.push(input.text);
      return Promise.resolve({ say: input.kind === 'start' ? OPENING : 'Of course.', action: null });
    },
  };
  return { leg, heard, ...runSession(leg, agent, { inbound: true, callId: 'call-echo' }) };
}

describe("the session: the agent's own voice recognised over it is no caller's turn", () => {
  // One word is not enough to tell: "Hello?" said as the agent says "Hello" is the caller's (the
  // leg tells a one-word echo by its sound, EchoGuard.explains).
  for (const [words, own] of [
    ['this is Openline', true],
    ['Hello this', true],
    ['Hello?', false],
    ['Hello, can you hear me?', false],
  ] as const) {
    it(`"${words}" heard from a voice that started over the opening: ${own ? 'its own echo' : "the caller's"}`, async () => {
      const { leg, heard, transcript, stop, outcome } = call();
      await waitFor('the opening', () => leg.said.length === 1);
      leg.emit({ type: 'speech_start' });
      await waitFor('the agent to pause for the voice over it', () => leg.pauses === 1);
      leg.emit({ type: 'speech', text: words, durationMs: 200 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      leg.finish();
      await waitFor('the opening on record', () => transcript.some((t) => t.role === 'assistant'));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const user = transcript.filter((t) => t.role === 'user').map((t) => t.text);
      assert.deepEqual(user, own ? [] : [words]);
      assert.deepEqual(heard, own ? [] : [words], 'the agent answers only what the caller said');
      stop.abort();
      leg.finish();
      await outcome;
    });
  }
});
