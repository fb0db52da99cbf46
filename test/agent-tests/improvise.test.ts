import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import {
  BUILTIN_PERSONA_DIR,
  PersonaFileError,
  PersonaSet,
  SandboxNetwork,
  parsePersona,
  readPersonaDir,
  type ConversationLine,
  type LineWriter,
} from '../../src/carriers/sandbox/index.js';
import type { CallLeg, DialResult } from '../../src/carriers/types.js';
import { ScriptedAgent } from '../carriers/scripted-agent.js';

const networks: SandboxNetwork[] = [];
afterEach(() => {
  for (const network of networks.splice(0)) network.close();
});

/** A persona whose every line comes from its line writer: on answering, and after each utterance heard. */
const improviser = {
  id: 'improviser',
  number: '0990',
  name: 'Improviser',
  description: 'Says what its line writer writes.',
  ring: { kind: 'answer', afterMs: 500 },
  replyDelayMs: 200,
  start: 'open',
  states: {
    open: [{ improvise: true }, { goto: 'talk' }],
    talk: [{ listen: { on: [{ any: true, do: [{ improvise: true }, { goto: 'talk' }] }] } }],
  },
};

/** Dials the improviser; `writer` (if any) is set first, as the persona improvises on answering. */
async function dial(writer?: LineWriter) {
  const clock = new ScaledClock(50);
  const personas = new PersonaSet([
    ...readPersonaDir(BUILTIN_PERSONA_DIR),
    parsePersona(improviser, 'improviser.json'),
  ]);
  const network = new SandboxNetwork({ clock, personas });
  networks.push(network);
  if (writer) network.setLineWriter('improviser', writer);
  const result: DialResult = await network.dial({
    callId: 'improvised-call',
    to: '+14155550990',
    from: '+14155550000',
    ringTimeoutMs: 60_000,
    signal: new AbortController().signal,
  });
  if (result.status !== 'answered') assert.fail(`expected an answer, got ${result.status}`);
  const leg: CallLeg = result.leg;
  return { network, agent: new ScriptedAgent(leg, clock) };
}

describe('sandbox personas: improvise steps', () => {
  it("say the line writer's lines, given the conversation both ways, and hang up when it says so", async () => {
    const seen: ConversationLine[][] = [];
    const { agent } = await dial(async ({ persona, conversation }) => {
      assert.equal(persona.id, 'improviser');
      seen.push([...conversation]);
      const heard = conversation.filter((l) => l.by === 'other').at(-1)?.text ?? '';
      if (/goodbye/i.test(heard)) return { say: 'Bye then.', hangup: true };
      return { say: `Line ${conversation.filter((l) => l.by === 'persona').length + 1}.` };
    });
    await agent.hear(/^Line 1\.$/);
    await agent.say('Hello, this is the clinic.');
    await agent.hear(/^Line 2\.$/);
    await agent.say('Goodbye!');
    await agent.hear(/^Bye then\.$/);
    assert.equal((await agent.next('hangup')).reason, 'remote');
    assert.deepEqual(seen, [
      [],
      [
        { by: 'persona', text: 'Line 1.' },
        { by: 'other', text: 'Hello, this is the clinic.' },
      ],
      [
        { by: 'persona', text: 'Line 1.' },
        { by: 'other', text: 'Hello, this is the clinic.' },
        { by: 'persona', text: 'Line 2.' },
        { by: 'other', text: 'Goodbye!' },
      ],
    ]);
  });

  it('without a line writer, the persona hangs up and the call log says why', async () => {
    const { network, agent } = await dial();
    await agent.next('hangup');
    // The network notes the persona's error when its run settles.
    await network.call('improvised-call')?.remote?.done.catch(() => {});
    const errors = (network.call('improvised-call')?.log ?? []).filter((e) => e.kind === 'error');
    assert.deepEqual(
      errors.map((e) => e.text),
      ['persona improviser improvises, but no line writer is set for it'],
    );
  });

  it('is checked when the persona file is loaded', () => {
    const broken = { ...improviser, states: { open: [{ improvise: 'yes' }] } };
    assert.throws(
      () => parsePersona(broken, 'broken.json'),
      (error: unknown) => error instanceof PersonaFileError && /\/states\/open\/0/.test(error.message),
    );
  });
});
