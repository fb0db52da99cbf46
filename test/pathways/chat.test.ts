import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;

const nodes = [
  {
    id: 'start',
    type: 'Default',
    data: {
      name: 'Greeting',
      text: 'Hi {{name}}, this is Ava from Sunny Dental. Would you like to book a cleaning?',
      isStart: true,
    },
  },
  {
    id: 'book',
    type: 'Default',
    data: {
      name: 'Book',
      text: 'Great, which day works for you?',
      extractVars: [['day', 'string', 'The day of the week the caller wants']],
    },
  },
  { id: 'bye', type: 'End Call', data: { name: 'Goodbye', text: 'No problem, have a great day. Goodbye!' } },
];
const edges = [
  { id: 'e1', source: 'start', target: 'book', label: 'yes, wants to book a cleaning' },
  { id: 'e2', source: 'start', target: 'bye', label: 'no, not interested' },
];

describe('pathway chat', () => {
  let t: TestApp;
  let pathwayId: string;
  before(async () => {
    t = await createTestApp();
    const r = await t.request('POST', '/v1/pathway/create', { name: 'Dental', nodes, edges });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    pathwayId = String(r.body.pathway_id);
  });
  after(() => t.close());

  async function start(body: Json = {}): Promise<string> {
    const r = await t.request('POST', '/v1/pathway/chat/create', { pathway_id: pathwayId, ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const data = r.body.data as Json;
    return String(data.chat_id);
  }

  it('runs the pathway as text: opening words, a route taken by the reply, the node it is in', async () => {
    const chatId = await start({ request_data: { name: 'Sam' } });
    // No body at all: the message is optional.
    const first = await t.request('POST', `/v1/pathway/chat/${chatId}`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const opened = first.body.data as Json;
    assert.deepEqual(opened.assistant_responses, [
      'Hi Sam, this is Ava from Sunny Dental. Would you like to book a cleaning?',
    ]);
    assert.equal(opened.current_node_id, 'start');
    assert.equal(opened.current_node_name, 'Greeting');

    const second = await t.request('POST', `/v1/pathway/chat/${chatId}`, { message: 'Yes please, I want to book one' });
    const data = second.body.data as Json;
    assert.deepEqual(data.assistant_responses, ['Great, which day works for you?']);
    assert.equal(data.current_node_id, 'book');
    assert.equal(data.ended, false);
    const history = data.chat_history as Json[];
    assert.deepEqual(
      history.map((h) => h.role),
      ['assistant', 'user', 'assistant'],
    );
    assert.ok((data.pathway_logs as Json[]).length >= 2);

    const third = await t.request('POST', `/v1/pathway/chat/${chatId}`, { message: 'Thursday would be best' });
    assert.match(String((third.body.data as Json & { variables: Json }).variables.day), /^thursday$/i);

    // The Book node has no way on: the pathway says goodbye and the chat ends as a call would.
    assert.equal((third.body.data as Json).ended, true);
    // Read back, as the hosted API answers it: `data` is the conversation, one message per line.
    const read = await t.request('GET', `/v1/pathway/chat/${chatId}`);
    assert.equal(read.status, 200);
    assert.deepEqual(
      (read.body.data as Json[]).map((h) => h.role),
      ['assistant', 'user', 'assistant', 'user', 'assistant', 'agent-action'],
    );
    assert.deepEqual(read.body.data, (third.body.data as Json).chat_history);
  });

  it('ends at an end node and says nothing more afterwards', async () => {
    const chatId = await start();
    const r = await t.request('POST', `/v1/pathway/chat/${chatId}`, { message: 'No, not interested' });
    const data = r.body.data as Json;
    // The opening words and the goodbye both answer the first message.
    assert.equal((data.assistant_responses as string[]).length, 2);
    assert.match(String((data.assistant_responses as string[])[1]), /Goodbye/);
    assert.equal(data.ended, true);
    const after = await t.request('POST', `/v1/pathway/chat/${chatId}`, { message: 'Hello?' });
    assert.deepEqual((after.body.data as Json).assistant_responses, []);
  });

  it('starts at start_node_id when given', async () => {
    const chatId = await start({ start_node_id: 'book' });
    const r = await t.request('POST', `/v1/pathway/chat/${chatId}`, {});
    assert.deepEqual((r.body.data as Json).assistant_responses, ['Great, which day works for you?']);
  });

  it('names the problem: unknown pathway or version, missing pathway_id, another account', async () => {
    const missing = await t.request('POST', '/v1/pathway/chat/create', {});
    assert.equal(missing.status, 400);
    assert.match(JSON.stringify(missing.body), /pathway_id/);
    const unknown = await t.request('POST', '/v1/pathway/chat/create', { pathway_id: crypto.randomUUID() });
    assert.equal(unknown.status, 404);
    const version = await t.request('POST', '/v1/pathway/chat/create', { pathway_id: pathwayId, pathway_version: 99 });
    assert.equal(version.status, 404);
    assert.match(String(version.body.message), /version 99/);
    const other = await t.request('POST', '/v1/pathway/chat/create', { pathway_id: pathwayId }, { as: t.otherKey });
    assert.equal(other.status, 404);
    // As Send Call: a start node that is not a node, or a pathway with nothing to walk, is a 400.
    const node = await t.request('POST', '/v1/pathway/chat/create', { pathway_id: pathwayId, start_node_id: 'nope' });
    assert.equal(node.status, 400);
    assert.match(String((node.body.errors as string[])[0]), /^start_node_id "nope" is not a node/);
    const empty = await t.request('POST', '/v1/pathway/create', { name: 'Empty' });
    const blank = await t.request('POST', '/v1/pathway/chat/create', { pathway_id: empty.body.pathway_id });
    assert.equal(blank.status, 400);
    assert.match(JSON.stringify(blank.body.errors), /no nodes yet/);

    const chatId = await start();
    const peek = await t.request('POST', `/v1/pathway/chat/${chatId}`, { message: 'hi' }, { as: t.otherKey });
    assert.equal(peek.status, 404);
    const read = await t.request('GET', `/v1/pathway/chat/${chatId}`, undefined, { as: t.otherKey });
    assert.equal(read.status, 404);
  });
});
