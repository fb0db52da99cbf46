import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;

describe('a pathway node that names a knowledge base by id (pathway chat, offline model)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('answers from the knowledge base its kb names, and from nothing once it is gone', async () => {
    const kb = await t.request('POST', '/v1/knowledge/learn', {
      name: 'Clinic FAQ',
      text: 'We open at 8 am on weekdays.\n\nParking is free behind the building.',
    });
    const kbId = String((kb.body.data as Json).id);
    const pathway = await t.request('POST', '/v1/pathway/create', {
      name: 'FAQ line',
      nodes: [
        {
          id: 'faq',
          type: 'Knowledge Base',
          data: { name: 'FAQ', isStart: true, prompt: 'Answer questions about the clinic.', kb: kbId },
        },
        { id: 'end', type: 'End Call', data: { name: 'End', prompt: 'Say goodbye.' } },
      ],
      edges: [{ id: 'done', source: 'faq', target: 'end', label: 'the caller is done' }],
    });
    assert.equal(pathway.status, 200, JSON.stringify(pathway.body));
    const ask = async (): Promise<string> => {
      const chat = await t.request('POST', '/v1/pathway/chat/create', { pathway_id: pathway.body.pathway_id });
      const chatId = String((chat.body.data as Json).chat_id);
      await t.request('POST', `/v1/pathway/chat/${chatId}`);
      const answer = await t.request('POST', `/v1/pathway/chat/${chatId}`, { message: 'Where can I park?' });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return ((answer.body.data as Json).assistant_responses as string[]).join(' ');
    };
    const said = await ask();
    assert.match(said, /Parking is free behind the building\./);
    assert.doesNotMatch(said, /KB-/, 'the id is never read out');
    assert.equal((await t.request('DELETE', `/v1/knowledge/${kbId}`)).status, 200);
    const after = await ask();
    assert.doesNotMatch(after, /Parking|KB-/, after);
  });
});
