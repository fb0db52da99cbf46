import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { finished, placeCall, type FinishedCall } from './helpers.js';

/** A two-step graph whose words name its version, so a call shows which one it ran. */
function graph(tag: string) {
  return {
    nodes: [
      {
        id: 'start',
        type: 'Default',
        data: { name: 'Start', isStart: true, text: `This is ${tag}. Is now a good time?` },
      },
      { id: 'alt', type: 'Default', data: { name: 'Alternate', text: `Alternate start of ${tag}. Can you hear me?` } },
      { id: 'end', type: 'End Call', data: { name: 'End', text: `Thanks, goodbye from ${tag}.` } },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'end', label: 'yes, a good time' },
      { id: 'e2', source: 'alt', target: 'end', label: 'yes, can hear' },
    ],
  };
}

describe('which pathway version a call runs (offline model, sandbox person, clock 100x)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(100) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  async function create(): Promise<string> {
    const r = await t.request('POST', '/v1/pathway/create', { name: 'Versions', ...graph('the draft') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return String(r.body.pathway_id);
  }
  async function version(id: string, tag: string): Promise<number> {
    const r = await t.request('POST', `/v1/pathway/${id}/version`, { name: tag, ...graph(tag) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body.data as { version_number: number }).version_number;
  }
  async function publish(id: string, n: number, environment: 'production' | 'staging'): Promise<void> {
    const r = await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: n, environment });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  const run = (id: string, extra: Record<string, unknown> = {}): Promise<FinishedCall> =>
    placeCall(t, { phone_number: '+14155550100', pathway_id: id, ...extra });
  const said = (c: FinishedCall) => c.logs.find((l) => l.event === 'entered')!.said;

  it("lists a pathway call's turns as a conversation (GET /v1/pathway_calls/{id})", async () => {
    const id = await create();
    const c = await run(id);
    const r = await t.request('GET', `/v1/pathway_calls/${c.call.call_id as string}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const lines = r.body as unknown as { role: string; text: string | null; node_name: string; step: number }[];
    assert.deepEqual(lines[0], { ...lines[0], role: 'assistant', text: 'This is the draft. Is now a good time?' });
    assert.equal(lines[0]!.node_name, 'Start');
    const spoken = lines.filter((l) => l.text !== null).map((l) => `${l.role}: ${l.text!}`);
    for (const step of c.logs) {
      if (step.heard) assert.ok(spoken.includes(`user: ${step.heard}`), spoken.join('\n'));
      if (step.said) assert.ok(spoken.includes(`assistant: ${step.said}`), spoken.join('\n'));
    }
    assert.equal(
      (await t.request('GET', `/v1/pathway_calls/${c.call.call_id as string}`, undefined, { as: t.otherKey })).status,
      404,
    );
    const plain = await placeCall(t, { phone_number: '+14155550100', task: 'Say hello.' });
    assert.deepEqual((await t.request('GET', `/v1/pathway_calls/${plain.call.call_id as string}`)).body, []);
  });

  it('a pathway with only a draft runs the draft', async () => {
    const id = await create();
    const c = await run(id);
    assert.equal(said(c), 'This is the draft. Is now a good time?', c.lines);
    assert.ok(c.logs.every((l) => l.version === null));
    assert.deepEqual(
      c.path.filter((n, i, all) => all[i - 1] !== n),
      ['start', 'end'],
    );
    assert.match(c.lines, /assistant: Thanks, goodbye from the draft\./);
    assert.equal(c.call.call_ended_by, 'ASSISTANT');
  });

  it('versions but nothing published: the latest version; then production, staging only by number, 0 = production', async () => {
    const id = await create();
    await version(id, 'version one');
    await version(id, 'version two');
    const unpublished = await run(id);
    assert.equal(said(unpublished), 'This is version two. Is now a good time?');
    assert.equal(unpublished.logs[0]!.version, 2);

    await publish(id, 1, 'production');
    await publish(id, 2, 'staging');
    // The draft changes too: calls never run it once versions exist.
    await t.request('POST', `/v1/pathway/${id}`, graph('an edited draft'));
    const production = await run(id);
    assert.equal(said(production), 'This is version one. Is now a good time?');
    assert.equal(production.logs[0]!.version, 1);
    const staging = await run(id, { pathway_version: 2 });
    assert.equal(said(staging), 'This is version two. Is now a good time?');
    const zero = await run(id, { pathway_version: 0 });
    assert.equal(zero.logs[0]!.version, 1);

    await publish(id, 2, 'production');
    const promoted = await run(id);
    assert.equal(promoted.logs[0]!.version, 2);
  });

  it('start_node_id starts elsewhere; unknown versions, pathways and nodes are 400s naming the field', async () => {
    const id = await create();
    await version(id, 'version one');
    const alt = await run(id, { start_node_id: 'alt' });
    assert.equal(alt.logs[0]!.node_id, 'alt');
    assert.equal(alt.logs[0]!.reason, 'start_node_id');
    assert.equal(said(alt), 'Alternate start of version one. Can you hear me?');

    const badNode = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      pathway_id: id,
      start_node_id: 'nope',
    });
    assert.equal(badNode.status, 400);
    assert.deepEqual(badNode.body.errors, ['start_node_id "nope" is not a node of the pathway version the call uses']);
    const badVersion = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      pathway_id: id,
      pathway_version: 9,
    });
    assert.equal(badVersion.status, 400);
    assert.deepEqual(badVersion.body.errors, ['pathway_version 9 is not a version of this pathway']);
    const unpublished = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      pathway_id: id,
      pathway_version: 0,
    });
    assert.equal(unpublished.status, 400);
    const other = await t.request(
      'POST',
      '/v1/calls',
      { phone_number: '+14155550100', pathway_id: id },
      { as: t.otherKey },
    );
    assert.equal(other.status, 400);
    const blank = await t.request('POST', '/v1/pathway/create', { name: 'Empty' });
    const empty = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      pathway_id: String(blank.body.pathway_id),
    });
    assert.equal(empty.status, 400);
    assert.deepEqual(empty.body.errors, [
      'pathway_id names a pathway with no nodes yet: add nodes to its draft or save a version',
    ]);
    assert.deepEqual(other.body.errors, ['pathway_id is not a pathway of this account']);
  });

  it('a pathway deleted before the call runs ends the call politely, with a note', async () => {
    const id = await create();
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      pathway_id: id,
      start_time: new Date(t.services.clock.now().getTime() + 60_000).toISOString(),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((await t.request('DELETE', `/v1/pathway/${id}`)).status, 200);
    const c = await finished(t, String(r.body.call_id));
    assert.equal(c.call.call_ended_by, 'ASSISTANT');
    assert.match(c.lines, /agent-action: Pathway not available: the pathway or its version no longer exists/);
    assert.equal(c.call.pathway_logs, null);
  });

  it('Press Button: an outbound call navigates an automated menu, then talks to the person', async () => {
    const created = await t.request('POST', '/v1/pathway/create', {
      name: 'Order check',
      nodes: [
        {
          id: 'hello',
          type: 'Default',
          data: { name: 'Hello', isStart: true, text: 'Hello, this is Openline calling about order 1234.' },
        },
        { id: 'press', type: 'Press Button', data: { name: 'Support key', digit: '2' } },
        {
          id: 'ask',
          type: 'Default',
          data: { name: 'Ask', text: 'Hi, I am calling to check whether order 1234 has shipped. Has it?' },
        },
        { id: 'bye', type: 'End Call', data: { name: 'Bye', text: 'Thank you, goodbye!' } },
      ],
      edges: [
        { id: 'menu', source: 'hello', target: 'press', label: 'menu offers support' },
        { id: 'person', source: 'press', target: 'ask', label: 'a person answers' },
        { id: 'answered', source: 'ask', target: 'bye', label: 'yes, answered' },
      ],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const c = await run(String(created.body.pathway_id), { phone_number: '+14155550103', answered_by_enabled: true });
    const press = c.logs.find((l) => l.node_id === 'press' && l.action)!;
    assert.equal(press.action, 'press_buttons 2', c.lines);
    assert.equal(c.logs.find((l) => l.chosen_edge?.id === 'menu')!.event, 'menu');
    assert.match(c.lines, /agent-action: Pressed buttons: 2/);
    const dtmf = t.services.sandbox
      .call(String(c.call.call_id))!
      .log.filter((e) => e.kind === 'dtmf' && e.by === 'agent');
    assert.deepEqual(
      dtmf.map((e) => e.text),
      ['2'],
    );
    assert.match(c.lines, /assistant: Hi, I am calling to check whether order 1234 has shipped/);
    assert.equal(c.logs.at(-1)!.node_id, 'bye');
  });
});
