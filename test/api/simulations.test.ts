import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, fakeLlmConfig, type FakeReply } from '../../src/testing/fake-openai.js';
import { waitFor } from '../../src/testing/wait.js';

type Json = Record<string, unknown>;

/** A two-node pathway: a greeting, and the end once the caller has said what they want. */
const PATHWAY = {
  name: 'Front desk',
  nodes: [
    {
      id: 'start',
      type: 'Default',
      data: { name: 'Greeting', isStart: true, text: 'Bright Smile Dental, how can I help?' },
    },
    { id: 'end', type: 'End Call', data: { name: 'Goodbye', text: 'Thank you for calling, goodbye.' } },
  ],
  edges: [{ id: 'e1', source: 'start', target: 'end', label: 'the caller said what they want' }],
};

describe('simulations: callers played by the language model call a pathway (clock 25x)', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  let pathwayId: string;
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (r): FakeReply => {
      const system = String(r.body.messages[0]?.content ?? '');
      const asked = String(r.body.messages.at(-1)?.content ?? '');
      // The simulated caller: says what the profile wants, then goodbye.
      if (system.startsWith('You play a person on a phone call')) {
        const said = (asked.match(/^you: /gm) ?? []).length;
        const want = /refill/.test(system) ? 'I need a prescription refill.' : 'I want to book a cleaning.';
        const lines = [
          { say: 'Hello?', hang_up: false },
          { say: want, hang_up: false },
          { say: 'Thanks, goodbye.', hang_up: true },
        ];
        return { text: JSON.stringify(lines[Math.min(said, 2)]) };
      }
      // The pathway's model: takes the only edge once the caller has spoken.
      if (r.body.tools?.length) {
        const tool = r.body.tools[0]!.function.name;
        return { toolCalls: [{ name: tool, arguments: { edge: 'e1', target: 'end', reason: 'said what they want' } }] };
      }
      return { text: 'Of course.' };
    };
    t = await createTestApp({ clock: new ScaledClock(25), config: { llm: fakeLlmConfig(fake, 2000) } });
    await t.services.startWorkers();
    const created = await t.request('POST', '/v1/pathway/create', PATHWAY);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    pathwayId = String(created.body.pathway_id);
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('POST /v1/calls/simulate places one call per profile, each a run of the simulation’s batch', async () => {
    const r = await t.request('POST', '/v1/calls/simulate', {
      pathway_id: pathwayId,
      profiles: [
        { name: 'Rushed patient', objective: 'You want a prescription refill, fast.' },
        { name: 'New patient', objective: 'You want to book a cleaning.' },
      ],
      max_turns: 5,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const calls = r.body.calls as { profile_name: string; call_id: string; run_id: string }[];
    assert.deepEqual(
      calls.map((c) => c.profile_name),
      ['Rushed patient', 'New patient'],
    );
    for (const c of calls) assert.ok(c.call_id, 'each call is placed at once');
    const id = String(r.body.simulation_id);
    const batch = await waitFor(
      'the simulation to end',
      async () => {
        const b = (await t.request('GET', `/v1/agent-testing/batches/${id}`)).body;
        return b.status !== 'RUNNING' && b;
      },
      60_000,
    );
    assert.equal(batch.status, 'PASSED', JSON.stringify(batch));
    const call = await t.request('GET', `/v1/calls/${calls[0]!.call_id}`);
    const lines = (call.body.transcripts as Json[]).map((l) => `${l.user as string}: ${l.text as string}`);
    assert.ok(lines.includes('user: I need a prescription refill.'), lines.join('\n'));
    assert.ok(lines.includes('assistant: Bright Smile Dental, how can I help?'), lines.join('\n'));
  });

  it('pathway simulations take descriptions as personas and report each caller with its transcript', async () => {
    const r = await t.request('POST', '/v1/pathway/simulations/run', {
      pathway_id: pathwayId,
      personas: ['A patient who wants a refill of their prescription.'],
      max_turns: 2,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body.personas as Json[])[0]!.status, 'in_progress');
    const id = String(r.body.simulation_id);
    const done = await waitFor(
      'the simulation to end',
      async () => {
        const s = (await t.request('GET', `/v1/pathway/simulations/${id}`)).body;
        return s.state === 'completed' && s;
      },
      60_000,
    );
    assert.equal(done.pathway_id, pathwayId);
    const [persona] = done.personas as Json[];
    assert.equal(persona!.name, 'Caller 1');
    assert.match(String(persona!.status), /^(completed|max_turns_reached)$/);
    const transcript = (persona!.transcript as { role: string; text: string }[]).map((l) => `${l.role}: ${l.text}`);
    assert.ok(transcript.includes('user: I need a prescription refill.'), transcript.join('\n'));
    // Its call's pathway turns, as the hosted CLI reads them.
    const turns = await t.request('GET', `/v1/pathway_calls/${String(persona!.call_id)}`);
    assert.ok((turns.body as unknown as Json[]).some((l) => l.node_name === 'Greeting'));
  });

  it('names what is wrong: no profiles, an empty objective, a foreign pathway, too many callers', async () => {
    const none = await t.request('POST', '/v1/calls/simulate', { pathway_id: pathwayId, profiles: [] });
    assert.equal(none.status, 400);
    assert.match(JSON.stringify(none.body), /profiles/);
    const empty = await t.request('POST', '/v1/calls/simulate', { pathway_id: pathwayId, profiles: [{ name: 'x' }] });
    assert.equal(empty.status, 400);
    assert.match(JSON.stringify(empty.body.errors), /profiles\[0\]\.objective is required/);
    const six = Array.from({ length: 6 }, () => 'A caller.');
    assert.equal(
      (await t.request('POST', '/v1/pathway/simulations/run', { pathway_id: pathwayId, personas: six })).status,
      400,
    );
    const foreign = await t.request(
      'POST',
      '/v1/calls/simulate',
      { pathway_id: pathwayId, profiles: ['A caller.'] },
      { as: t.otherKey },
    );
    assert.equal(foreign.status, 400);
    assert.match(JSON.stringify(foreign.body.errors), /pathway_id is not a pathway of this account/);
    assert.equal((await t.request('GET', '/v1/pathway/simulations/nope')).status, 404);
  });
});

describe('simulations without a language model', () => {
  it('are refused, naming the field', async () => {
    const t = await createTestApp();
    try {
      const created = await t.request('POST', '/v1/pathway/create', PATHWAY);
      const r = await t.request('POST', '/v1/calls/simulate', {
        pathway_id: String(created.body.pathway_id),
        profiles: [{ name: 'A', objective: 'Book a cleaning.' }],
      });
      assert.equal(r.status, 400);
      assert.match(JSON.stringify(r.body.errors), /profiles\[0\]: objective needs a language model/);
    } finally {
      await t.close();
    }
  });
});
