import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, fakeLlmConfig, type FakeReply } from '../../src/testing/fake-openai.js';

type Json = Record<string, unknown>;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`citation schemas (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
    });
    after(() => t.close());

    it('creates, lists, gets, updates and deletes them by ?id=, each account its own', async () => {
      const created = await t.request('POST', '/v1/citation_schemas', {
        name: 'Appointment',
        description: 'What was agreed',
        schema: { confirmed: 'boolean', day: 'the day agreed, as YYYY-MM-DD' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const schema = created.body.data as Json;
      const id = String(schema.id);
      assert.deepEqual(schema.schema, { confirmed: 'boolean', day: 'the day agreed, as YYYY-MM-DD' });

      const list = await t.request('GET', '/v1/citation_schemas/list');
      assert.deepEqual(
        (list.body.data as Json[]).map((s) => s.id),
        [id],
      );
      assert.deepEqual((await t.request('GET', '/v1/citation_schemas')).body.data, list.body.data);
      assert.equal(((await t.request('GET', `/v1/citation_schemas?id=${id}`)).body.data as Json).name, 'Appointment');

      const updated = await t.request('PATCH', `/v1/citation_schemas?id=${id}`, { name: 'Booking', description: null });
      assert.equal(updated.status, 200, JSON.stringify(updated.body));
      assert.equal((updated.body.data as Json).name, 'Booking');
      assert.equal((updated.body.data as Json).description, null);
      assert.deepEqual((updated.body.data as Json).schema, schema.schema, 'the fields stay');

      const as = { as: t.otherKey };
      assert.equal((await t.request('GET', `/v1/citation_schemas?id=${id}`, undefined, as)).status, 404);
      assert.equal((await t.request('PATCH', `/v1/citation_schemas?id=${id}`, { name: 'x' }, as)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/citation_schemas?id=${id}`, undefined, as)).status, 404);
      assert.deepEqual((await t.request('GET', '/v1/citation_schemas/list', undefined, as)).body.data, []);

      assert.equal((await t.request('DELETE', `/v1/citation_schemas?id=${id}`)).status, 200);
      assert.equal((await t.request('GET', `/v1/citation_schemas?id=${id}`)).status, 404);
    });

    it('names what is wrong with a schema', async () => {
      const empty = await t.request('POST', '/v1/citation_schemas', { name: 'x', schema: {} });
      assert.equal(empty.status, 400);
      assert.match(JSON.stringify(empty.body.errors), /schema must name at least one field/);
      const bad = await t.request('POST', '/v1/citation_schemas', { name: 'x', schema: { confirmed: 3 } });
      assert.match(JSON.stringify(bad.body.errors), /schema\.confirmed must be a type hint/);
      const noName = await t.request('POST', '/v1/citation_schemas', { schema: { a: 'string' } });
      assert.equal(noName.status, 400);
      assert.match(JSON.stringify(noName.body), /name/);
      // Without fields yet: kept empty, to be filled by an update.
      const later = await t.request('POST', '/v1/citation_schemas', { name: 'Later' });
      assert.equal(later.status, 200, JSON.stringify(later.body));
      assert.deepEqual((later.body.data as Json).schema, {});
      const noId = await t.request('DELETE', '/v1/citation_schemas');
      assert.equal(noId.status, 400);
      assert.match(JSON.stringify(noId.body.errors), /id is required/);
    });
  });

describe('POST /v1/calls/analyze: a citation schema applied to an ended call (clock 25x)', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (r): FakeReply => {
      const system = String(r.body.messages[0]?.content ?? '');
      if (system.startsWith('You extract structured data'))
        return { text: JSON.stringify({ confirmed: true, day: '2026-12-03' }) };
      if (system.startsWith('You summarize')) return { text: 'A short call.' };
      return { text: 'Hello, I am calling to confirm your appointment. Goodbye!' };
    };
    t = await createTestApp({ clock: new ScaledClock(25), config: { llm: fakeLlmConfig(fake, 2000) } });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('fills the schema’s fields from the call, checked against them', async () => {
    const schema = await t.request('POST', '/v1/citation_schemas', {
      name: 'Appointment',
      schema: { confirmed: 'boolean', day: 'string' },
    });
    const schemaId = String((schema.body.data as Json).id);
    const placed = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the appointment.',
    });
    const callId = String(placed.body.call_id);
    await waitForCall(t, callId);
    const seen = fake.requests.length;
    const r = await t.request('POST', '/v1/calls/analyze', { call_id: callId, schema_id: schemaId });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.data, {
      call_id: callId,
      schema_id: schemaId,
      analysis: { confirmed: true, day: '2026-12-03' },
    });
    const asked = fake.requests.slice(seen).find((q) => String(q.body.messages[0]?.content).startsWith('You extract'));
    assert.match(String(asked?.body.messages[1]?.content), /Transcript:/);

    const without = await t.request('POST', '/v1/calls/analyze', { call_id: callId });
    assert.equal(without.status, 400);
    assert.match(JSON.stringify(without.body.errors), /schema_id is required: the call has no analysis_schema/);
    const foreign = await t.request(
      'POST',
      '/v1/calls/analyze',
      { call_id: callId, schema_id: schemaId },
      {
        as: t.otherKey,
      },
    );
    assert.equal(foreign.status, 404);
    const unknown = await t.request('POST', '/v1/calls/analyze', { call_id: callId, schema_id: 'CS-nope' });
    assert.match(JSON.stringify(unknown.body.errors), /schema_id is not a citation schema of this account/);
  });

  it('POST /v1/sms/analyze fills a schema’s fields from an SMS conversation, in the hosted answer', async () => {
    const schema = await t.request('POST', '/v1/citation_schemas', {
      name: 'Appointment',
      schema: { confirmed: 'boolean', day: 'string' },
    });
    const schemaId = String((schema.body.data as Json).id);
    const number = String((await t.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body.phone_number);
    const said = async (sender: string, message: string) =>
      (
        await t.request('POST', '/v1/sms/create', {
          user_number: '+14155550100',
          agent_number: number,
          sender,
          message,
        })
      ).body.data as Json;
    const { conversation_id: conversationId } = await said('AGENT', 'Can you confirm Thursday at 3pm?');
    await said('USER', 'Yes, Thursday works.');
    const seen = fake.requests.length;
    const r = await t.request('POST', '/v1/sms/analyze', { conversation_id: conversationId, schema_id: schemaId });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      data: {
        status: 'success',
        conversation_id: conversationId,
        schema_id: schemaId,
        schema_name: 'Appointment',
        variables_extracted: 2,
        extracted_variables: { confirmed: true, day: '2026-12-03' },
        citations: [],
        messages_processed: 2,
      },
      errors: [],
    });
    const asked = fake.requests.slice(seen).find((q) => String(q.body.messages[0]?.content).startsWith('You extract'));
    assert.match(String(asked?.body.messages[1]?.content), /USER: Yes, Thursday works\./);

    const foreign = await t.request(
      'POST',
      '/v1/sms/analyze',
      { conversation_id: conversationId, schema_id: schemaId },
      { as: t.otherKey },
    );
    assert.equal(foreign.status, 404);
    const unknown = await t.request('POST', '/v1/sms/analyze', { conversation_id: conversationId, schema_id: 'CS-no' });
    assert.equal(unknown.status, 400);
    assert.match(JSON.stringify(unknown.body.errors), /schema_id is not a citation schema of this account/);
    const missing = await t.request('POST', '/v1/sms/analyze', {});
    assert.equal(missing.status, 400);
    assert.match(JSON.stringify(missing.body.errors), /conversation_id/);
  });
});
