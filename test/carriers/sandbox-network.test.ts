import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { SandboxNetwork } from '../../src/carriers/sandbox/network.js';
import type { CallLeg, DialRequest, DialResult } from '../../src/carriers/types.js';
import { ScriptedAgent, assertBetween, clockMs } from './scripted-agent.js';

const SCALE = 50;
const networks: SandboxNetwork[] = [];

afterEach(() => {
  for (const network of networks.splice(0)) network.close();
});

let nextId = 0;

function setup(options: { maxLogEntries?: number } = {}) {
  const clock = new ScaledClock(SCALE);
  const network = new SandboxNetwork({ clock, ...options });
  networks.push(network);
  return { clock, network };
}

function request(to: string, overrides: Partial<DialRequest> = {}): DialRequest {
  return {
    callId: `call-${++nextId}`,
    to,
    from: '+14155550000',
    ringTimeoutMs: 60_000,
    signal: new AbortController().signal,
    ...overrides,
  };
}

function answered(result: DialResult): CallLeg {
  if (result.status !== 'answered') assert.fail(`expected an answer, got ${result.status}`);
  return result.leg;
}

/** Dials `to` and returns the scripted agent on the answered leg. */
async function call(to: string, overrides: Partial<DialRequest> = {}) {
  const { clock, network } = setup();
  const dial = request(to, overrides);
  const agent = new ScriptedAgent(answered(await network.dial(dial)), clock);
  return { clock, network, agent, callId: dial.callId };
}

describe('sandbox network: 555-0100, a person', () => {
  it('greets, answers briefly, agrees, and says goodbye when the agent does', async () => {
    const { agent, network, callId } = await call('+14155550100');
    await agent.hear(/^Hello\?$/);
    await agent.say('Hi, this is Jordan from Acme. Who am I speaking with?');
    await agent.hear(/This is Sam/);
    await agent.say('Can we deliver your order tomorrow morning?');
    await agent.hear(/^Yes/);
    await agent.say('Great, thank you. Goodbye!');
    await agent.hear(/goodbye/i);
    assert.equal((await agent.next('hangup')).reason, 'remote');
    const log = network.call(callId)?.log ?? [];
    assert.deepEqual(
      log.filter((e) => e.kind === 'speech').map((e) => e.by),
      ['persona', 'agent', 'persona', 'agent', 'persona', 'agent', 'persona'],
    );
  });

  it('answers a turn said in several utterances once, after its last', async () => {
    const { agent, network, callId } = await call('+14155550100');
    await agent.hear(/^Hello\?$/);
    // Two sentences of one turn, the second begun within the person's pause before answering.
    await agent.say('Hi, this is Jordan from Acme, about your dental cleaning.');
    await agent.say('Would Tuesday work for you?');
    await agent.hear(/^Yes/);
    await agent.say('Great, thank you. Goodbye!');
    await agent.hear(/goodbye/i);
    await agent.next('hangup');
    const said = (network.call(callId)?.log ?? []).filter((e) => e.kind === 'speech' && e.by === 'persona');
    assert.equal(said.length, 3, 'Hello?, one answer to the question, goodbye');
  });

  it('leaves after six exchanges without a goodbye', async () => {
    const { agent } = await call('+14155550100');
    await agent.hear(/Hello/);
    for (let i = 1; i <= 6; i++) {
      await agent.say(`Here is point number ${i} of my long story.`);
      await agent.next('speech');
    }
    assert.match(agent.heard.at(-1) ?? '', /have to go/);
    await agent.next('hangup');
  });

  it('answers any number outside the table, whatever its area code or form', async () => {
    for (const to of ['+12125551234', '+16465550199', '+442071838750']) {
      const { agent } = await call(to);
      await agent.hear(/^Hello\?$/);
      await agent.leg.hangup();
    }
  });
});

describe('sandbox network: 555-0101, voicemail', () => {
  it('greets for about 4 s, beeps at 1000 Hz, then records the message until hang-up', async () => {
    const { agent, network, callId, clock } = await call('+13105550101');
    const greeting = await agent.hear(/leave a message after the tone/);
    assert.ok(greeting.durationMs >= 3500 && greeting.durationMs <= 5000, `greeting took ${greeting.durationMs} ms`);
    const beep = await agent.next('tone');
    assert.equal(beep.frequencyHz, 1000);
    assert.equal(beep.durationMs, 500);
    assert.ok(beep.at.getTime() >= greeting.at.getTime());
    await agent.say('Hi Sam, this is Jordan from Acme. Your order is ready. Call us back at 555 0199.');
    await clock.sleep(2000);
    await agent.leg.hangup();
    const remote = network.call(callId)?.remote;
    assert.deepEqual(remote?.recording, [
      'Hi Sam, this is Jordan from Acme. Your order is ready. Call us back at 555 0199.',
    ]);
    await remote?.done;
    assert.ok(network.call(callId)?.log.some((e) => e.kind === 'recording'));
  });

  it('hangs up by itself after 60 s of silence after the beep', async () => {
    const { agent, clock } = await call('+13105550101');
    const beep = await agent.next('tone');
    const hangup = await agent.next('hangup');
    const silentFor = hangup.at.getTime() - beep.at.getTime();
    assertBetween(silentFor, 60_000, 60_000, 'silence before the hangup');
    assert.ok(clockMs(clock) >= hangup.at.getTime());
  });
});

describe('sandbox network: 555-0102, voicemail without a beep', () => {
  it('greets, then stays silent: no beep', async () => {
    const { agent, clock } = await call('+13105550102');
    await agent.hear(/leave a message/);
    await clock.sleep(15_000);
    assert.equal(
      agent.events.some((e) => e.type === 'tone'),
      false,
    );
    assert.deepEqual(agent.heard.length, 1);
    assert.equal(agent.hungUp, false);
  });
});

describe('sandbox network: 555-0103, an IVR', () => {
  it('pressing 2 gets a person, who answers like 0100', async () => {
    const { agent, network, callId } = await call('+12065550103');
    await agent.hear(/Press 1 for sales, 2 for support, 0 for the operator\./);
    await agent.leg.sendDtmf('2');
    await agent.hear(/connect you/);
    await agent.hear(/^Hello\?$/);
    await agent.say('Hi, who is this?');
    await agent.hear(/This is Sam/);
    assert.ok(network.call(callId)?.log.some((e) => e.kind === 'persona' && e.text === 'person'));
    assert.equal(network.call(callId)?.remote?.persona.id, 'person');
  });

  it('says the menu three times without a valid key, then hangs up', async () => {
    const { agent } = await call('+12065550103');
    await agent.hear(/Press 1/);
    await agent.leg.sendDtmf('7');
    await agent.hear(/not a valid option/);
    await agent.next('hangup');
    assert.equal(agent.heard.filter((t) => t.startsWith('Press 1')).length, 3);
    assert.match(agent.heard.at(-1) ?? '', /Goodbye/);
  });
});

describe('sandbox network: 555-0104, 0105, 0106: calls that are not answered', () => {
  it('0104 rings until the ring timeout, or its own 30 s, whichever comes first', async () => {
    const { clock, network } = setup();
    let startedAt = clockMs(clock);
    assert.deepEqual(await network.dial(request('+15125550104', { ringTimeoutMs: 10_000 })), { status: 'no-answer' });
    const short = clockMs(clock) - startedAt;
    assertBetween(short, 10_000, 10_000, 'ring');
    startedAt = clockMs(clock);
    assert.deepEqual(await network.dial(request('+15125550104')), { status: 'no-answer' });
    const long = clockMs(clock) - startedAt;
    assertBetween(long, 30_000, 30_000, 'ring');
  });

  it('stopping a ringing call returns no-answer at once', async () => {
    const { clock, network } = setup();
    const stop = new AbortController();
    clock.setTimer(() => stop.abort(), 1000);
    const startedAt = clockMs(clock);
    assert.deepEqual(await network.dial(request('+15125550104', { signal: stop.signal })), { status: 'no-answer' });
    assertBetween(clockMs(clock) - startedAt, 1000, 1000, 'ring until stopped');
  });

  it('0105 is busy', async () => {
    const { network } = setup();
    assert.deepEqual(await network.dial(request('+15125550105')), { status: 'busy' });
  });

  it('0106 fails: the carrier cannot reach the area', async () => {
    const { network } = setup();
    assert.deepEqual(await network.dial(request('+15125550106')), {
      status: 'failed',
      reason: 'The carrier could not reach this area',
    });
  });
});

describe('sandbox network: 555-0107 and 0108', () => {
  it('0107 hangs up right after the agent first sentence', async () => {
    const { agent } = await call('+17185550107');
    await agent.hear(/Hello/);
    await agent.say('Hello, this is Jordan calling from Acme about your order.');
    const hangup = await agent.next('hangup', () => true, 5000);
    assert.equal(hangup.reason, 'remote');
    assert.deepEqual(agent.heard, ['Hello?']);
  });

  it('0108 says "Hello?" and then nothing at all', async () => {
    const { agent, clock } = await call('+17185550108');
    await agent.hear(/^Hello\?$/);
    await agent.say('Hi, is this a good time to talk?');
    await clock.sleep(30_000);
    assert.deepEqual(agent.heard, ['Hello?']);
    assert.equal(agent.hungUp, false);
  });
});

describe('sandbox network: 555-0109, a call screener', () => {
  it('asks for a name and a reason; once the agent answers, a person picks up', async () => {
    const { agent } = await call('+19175550109');
    await agent.hear(
      /^The person you are calling is using a screening service\. Please say your name and why you are calling\.$/,
    );
    await agent.say('This is Jordan from Acme, calling about your order.');
    await agent.hear(/stay on the line/);
    await agent.hear(/^Hello\?$/);
    await agent.say('Hi, am I speaking with Sam?');
    await agent.hear(/This is Sam/);
  });
});

describe('sandbox network: transfers, 555-0110 and 0111', () => {
  it('0110 answers a transfer: the far end is connected to it and our leg is done', async () => {
    const { agent, network, callId, clock } = await call('+14155550100');
    await agent.hear(/Hello/);
    const result = await agent.leg.transfer('+14155550110');
    assert.deepEqual(result, { ok: true });
    assert.deepEqual(
      network.transfers.map((t) => [t.callId, t.to, t.personaId, t.result.ok]),
      [[callId, '+14155550110', 'transfer-target', true]],
    );
    const heardBefore = agent.events.length;
    assert.deepEqual(await agent.leg.speak('still there?'), { played: '', interrupted: true });
    await clock.sleep(15_000);
    assert.equal(agent.events.length, heardBefore, 'nothing reaches a transferred leg');
    const log = network.call(callId)?.log ?? [];
    assert.ok(log.some((e) => e.by === 'transfer target' && e.kind === 'speech' && /this is Alex/.test(e.text ?? '')));
    assert.ok(log.some((e) => e.by === 'persona' && e.kind === 'speech' && e.at > (network.transfers[0]?.at ?? 0)));
  });

  it('0111 fails the transfer, and the call goes on', async () => {
    const { agent, network } = await call('+14155550100');
    await agent.hear(/Hello/);
    const result = await agent.leg.transfer('+14155550111');
    assert.deepEqual(result, { ok: false, reason: 'The transfer target could not be reached', resumed: true });
    assert.equal(network.transfers[0]?.result.ok, false);
    await agent.say('Sorry about that. Goodbye!');
    await agent.hear(/goodbye/i);
  });

  it('a busy target fails the transfer too', async () => {
    const { agent } = await call('+14155550100');
    assert.deepEqual(await agent.leg.transfer('+14155550105'), {
      ok: false,
      reason: 'The transfer target is busy',
      resumed: true,
    });
  });
});

describe('sandbox network: 555-0112, a talker', () => {
  it('starts speaking while the agent is still speaking', async () => {
    const { agent } = await call('+16175550112');
    await agent.hear(/meaning to call/);
    const long =
      'Thank you for taking my call today, I would like to tell you about the new plan we have for you this month.';
    const speaking = agent.leg.speak(long);
    const overlap = await agent.next('speech_start');
    const result = await speaking;
    assert.equal(result.interrupted, false);
    const talkerStartedAt = overlap.at.getTime();
    const agentDoneAt = (await agent.next('speech')).at.getTime();
    assert.ok(talkerStartedAt < agentDoneAt, 'the talker started before the agent finished');
  });
});

describe('sandbox network: inbound and agent-to-agent calls', () => {
  it('connectInbound puts the caller persona on the far end: it waits for the greeting, then orders', async () => {
    const { network, clock } = setup();
    const leg = network.connectInbound({ from: '+14155550100', to: '+14155559999', callId: 'in-1' });
    const agent = new ScriptedAgent(leg, clock);
    await leg.speak('Thanks for calling Pizza Place, how can I help?');
    await agent.hear(/^Hi, I'd like to order a pizza\.$/);
    assert.equal(network.call('in-1')?.direction, 'inbound');
    assert.deepEqual(
      network.call('in-1')?.log.map((e) => `${e.by}:${e.kind}`),
      ['network:answered', 'agent:speech', 'persona:speech'],
    );
    // A number that never answers calls in as the default person; with no greeting, it speaks first after a while.
    const fromBusy = new ScriptedAgent(network.connectInbound({ from: '+14155550105', to: '+14155559999' }), clock);
    await fromBusy.hear(/order a pizza/);
  });

  it('connectAgents connects two engine legs', async () => {
    const { network, clock } = setup();
    const [one, two] = network.connectAgents({ callId: 'a2a' });
    const listener = new ScriptedAgent(two, clock);
    await one.speak('hello other agent');
    assert.equal((await listener.next('speech')).text, 'hello other agent');
    await one.hangup();
    await listener.next('hangup');
    assert.deepEqual(
      network.call('a2a')?.log.map((e) => `${e.by}:${e.kind}`),
      ['network:answered', 'agent:speech', 'agent:hangup'],
    );
  });

  it('keeps a bounded log per call', async () => {
    const { network, clock } = setup({ maxLogEntries: 3 });
    const [one] = network.connectAgents({ callId: 'chatty' });
    for (let i = 0; i < 5; i++) await one.sendDtmf(String(i));
    await clock.sleep(100);
    const record = network.call('chatty');
    assert.deepEqual(
      record?.log.map((e) => e.text),
      ['2', '3', '4'],
    );
    assert.equal(record?.droppedLogEntries, 3);
  });
});
