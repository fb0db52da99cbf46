import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { waitFor } from '../../src/testing/wait.js';

/**
 * Requests as programs written against the hosted API send them, with the fields those programs
 * read back. Each case names the shape, not the program: the values are ours.
 */
describe('requests of programs written for the hosted API', () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(50) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  type Transcript = { user: string; text: string };

  it('the voicemail object ({message, action, sms, sensitive}) leaves its message on a voicemail, leave_message_and_sms too', async () => {
    const message = 'Hi Ann, this is the clinic. Please call us back.';
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550101',
      task: 'Remind {{first_name}} of the appointment.',
      request_data: { first_name: 'Ann' },
      voicemail: {
        message,
        action: 'leave_message_and_sms',
        sms: { from: '+14155550199', message: 'Call us back' },
        sensitive: true,
      },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const call = await waitForCall(t, String(sent.body.call_id));
    const requestData = call.request_data as Record<string, unknown>;
    assert.equal(requestData.voicemail_message, message);
    assert.equal(requestData.voicemail_action, 'leave_message');
    const said = (call.transcripts as Transcript[]).filter((line) => line.user === 'assistant').map((l) => l.text);
    assert.ok(
      said.some((text) => text.includes('Please call us back')),
      JSON.stringify(call.transcripts),
    );
  });

  it('voicemail.sms texts the number called once the call reached a voicemail, from a number of the account', async () => {
    const t2 = await createTestApp({ clock: new ScaledClock(50) });
    try {
      await t2.services.startWorkers();
      // Without a number to send from, the call says so in its transcript and nothing is sent.
      const unsent = await t2.request('POST', '/v1/calls', {
        phone_number: '+14155550101',
        task: 'Remind them of the appointment.',
        voicemail: { action: 'hangup', sms: { message: 'Call us back' } },
      });
      assert.equal(unsent.status, 200, JSON.stringify(unsent.body));
      await waitForCall(t2, String(unsent.body.call_id));
      const notSent = await waitFor('the note that no SMS went out', async () => {
        const call = await t2.request('GET', `/v1/calls/${String(unsent.body.call_id)}`);
        return (call.body.transcripts as Transcript[]).find((l) => /Voicemail SMS not sent/.test(l.text));
      });
      assert.match(notSent.text, /no number to send from/);

      const ours = String((await t2.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body.phone_number);
      const sent = await t2.request('POST', '/v1/calls', {
        phone_number: '+14155550101',
        task: 'Remind {{first_name}} of the appointment.',
        request_data: { first_name: 'Ann' },
        voicemail: { action: 'hangup', sms: { message: 'Hi {{first_name}}, please call us back.' } },
      });
      const person = await t2.request('POST', '/v1/calls', {
        phone_number: '+14155550100',
        task: 'Say hello.',
        voicemail: { sms: { message: 'Not for people' } },
      });
      await waitForCall(t2, String(sent.body.call_id));
      await waitForCall(t2, String(person.body.call_id));
      const messages = await waitFor('the voicemail SMS', async () => {
        const list = await t2.request('GET', '/v1/sms/messages?direction=outbound');
        const all = list.body.messages as { to: string; from: string; body: string }[];
        return all.length > 0 && all;
      });
      assert.deepEqual(
        messages.map((m) => [m.to, m.from, m.body]),
        [['+14155550101', ours, 'Hi Ann, please call us back.']],
      );
      const invalid = await t2.request('POST', '/v1/calls', {
        phone_number: '+14155550101',
        task: 't',
        voicemail: { sms: { to: 'nope', message: '' } },
      });
      assert.equal(invalid.status, 400);
      assert.deepEqual(
        (invalid.body.errors as string[]).map((e) => e.split(' ')[0]),
        ['voicemail.sms.to', 'voicemail.sms.message'],
      );
    } finally {
      await t2.close();
    }
  });

  it("webhook_events may name the hosted API's newer categories (citations, evals, post_transfer_transcript)", async () => {
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      start_time: '2099-01-01 00:00:00',
      webhook: 'https://hooks.example.com/bland',
      webhook_events: ['call', 'tool', 'citations', 'evals', 'post_transfer_transcript'],
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const call = await t.request('GET', `/v1/calls/${String(sent.body.call_id)}`);
    assert.deepEqual((call.body.request_data as Record<string, unknown>).webhook_events, [
      'call',
      'tool',
      'citations',
      'evals',
      'post_transfer_transcript',
    ]);
    await t.request('POST', `/v1/calls/${String(sent.body.call_id)}/stop`);
  });

  it('a call record has pathway_id and pathway_tags (the tags of the nodes reached), [] and null without a pathway', async () => {
    const created = await t.request('POST', '/v1/pathway/create', { name: 'Tagged', description: 'd' });
    const pathwayId = String(created.body.pathway_id);
    const updated = await t.request('POST', `/v1/pathway/${pathwayId}`, {
      nodes: [
        {
          id: 'start',
          type: 'Default',
          data: {
            name: 'Start',
            isStart: true,
            text: 'Hello, this is the clinic.',
            tag: { name: 'Answered', color: '#22c55e' },
          },
        },
        { id: 'bye', type: 'End Call', data: { name: 'Bye', text: 'Thank you, goodbye.', tag: 'Closed' } },
        {
          id: 'unused',
          type: 'End Call',
          data: { name: 'Unused', text: 'Bye.', tag: { name: 'Never', color: '#000' } },
        },
      ],
      edges: [{ id: 'e1', source: 'start', target: 'bye', label: 'they reply' }],
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const sent = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', pathway_id: pathwayId });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const call = await waitForCall(t, String(sent.body.call_id));
    assert.equal(call.pathway_id, pathwayId);
    assert.deepEqual(call.pathway_tags, ['Answered', 'Closed'], String(call.pathway_logs));

    const plain = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      start_time: '2099-01-01 00:00:00',
    });
    const record = (await t.request('GET', `/v1/calls/${String(plain.body.call_id)}`)).body;
    assert.equal(record.pathway_id, null);
    assert.deepEqual(record.pathway_tags, []);
    await t.request('POST', `/v1/calls/${String(plain.body.call_id)}/stop`);
  });

  it('POST /v1/sms/create records a message in the pair’s conversation without sending it; new_conversation starts one', async () => {
    const number = String((await t.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body.phone_number);
    const create = (body: Record<string, unknown>) =>
      t.request('POST', '/v1/sms/create', { user_number: '+14155550100', agent_number: number, ...body });
    const first = await create({
      message: 'Your lab results are ready.',
      message_sid: '2b7d2c1e-8f4a-4f57-9f0e-0d1f5c4a9b11',
      sender: 'AGENT',
      new_conversation: false,
      request_data: { patient: 'p-1' },
    });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.errors, null);
    const conversationId = String((first.body.data as Record<string, unknown>).conversation_id);
    const again = await create({ message: 'Thanks!' });
    assert.equal((again.body.data as Record<string, unknown>).conversation_id, conversationId);
    const got = await t.request('GET', `/v1/sms/conversations/${conversationId}`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const messages = (got.body.data as { messages: { sender: string; message: string }[] }).messages;
    assert.deepEqual(
      messages.map((m) => [m.sender, m.message]),
      [
        ['AGENT', 'Your lab results are ready.'],
        ['USER', 'Thanks!'],
      ],
    );
    const fresh = await create({ message: 'Hello again', new_conversation: true });
    assert.notEqual((fresh.body.data as Record<string, unknown>).conversation_id, conversationId);
    const old = await t.request('GET', `/v1/sms/conversations/${conversationId}`);
    assert.equal((old.body.data as Record<string, unknown>).is_active, false);

    const foreign = await t.request(
      'POST',
      '/v1/sms/create',
      {
        user_number: '+14155550100',
        agent_number: number,
        message: 'x',
      },
      { as: t.otherKey },
    );
    assert.equal(foreign.status, 400);
  });

  it("the hosted API's default language babel-en, and babel, are taken as English", async () => {
    for (const language of ['babel-en', 'babel']) {
      const sent = await t.request('POST', '/v1/calls', {
        phone_number: '+14155550100',
        task: 't',
        start_time: '2099-01-01 00:00:00',
        language,
        model: 'base',
        noise_cancellation: false,
        interruption_threshold: 500,
      });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const call = await t.request('GET', `/v1/calls/${String(sent.body.call_id)}`);
      assert.equal((call.body.request_data as Record<string, unknown>).language, 'en');
      await t.request('POST', `/v1/calls/${String(sent.body.call_id)}/stop`);
    }
  });

  it('GET /v1/outbound lists the numbers the account calls from, with when a call was last placed from each', async () => {
    type Outbound = { phone_number: string; created_at: string; last_initiated: string | null };
    const listed = async (as?: string) =>
      (await t.request('GET', '/v1/outbound', undefined, as ? { as } : {})).body.outbound_numbers as Outbound[];
    const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: '628' });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    const number = String(bought.body.phone_number);
    assert.equal((await listed()).find((n) => n.phone_number === number)?.last_initiated, null);
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      from: number,
      start_time: '2099-01-01 00:00:00',
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const call = await t.request('GET', `/v1/calls/${String(sent.body.call_id)}`);
    assert.equal((await listed()).find((n) => n.phone_number === number)?.last_initiated, call.body.created_at);
    assert.equal(
      (await listed(t.otherKey)).find((n) => n.phone_number === number),
      undefined,
    );
    await t.request('POST', `/v1/calls/${String(sent.body.call_id)}/stop`);
  });

  it('citation_schema_id (one id, as some programs send it) is taken as a one-item citation_schema_ids', async () => {
    const created = await t.request('POST', '/v1/citation_schemas', { name: 'Outcome', schema: { booked: 'boolean' } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = String((created.body.data as Record<string, unknown>).id);
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      start_time: '2099-01-01 00:00:00',
      citation_schema_id: id,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const call = await t.request('GET', `/v1/calls/${String(sent.body.call_id)}`);
    assert.deepEqual((call.body.request_data as Record<string, unknown>).citation_schema_ids, [id]);
    await t.request('POST', `/v1/calls/${String(sent.body.call_id)}/stop`);
    const unknown = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      citation_schema_id: 'CS-unknown',
    });
    assert.equal(unknown.status, 400);
    assert.match(
      String((unknown.body.errors as string[])[0]),
      /citation_schema_ids\[0\] "CS-unknown" is not a citation schema/,
    );
  });

  it('POST /v1/secrets/{id} updates a secret as PATCH does (the hosted API updates with POST)', async () => {
    const created = await t.request('POST', '/v1/secrets', { name: 'tf_token', value: 'first' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = String((created.body.data as Record<string, unknown>).secret_id);
    const updated = await t.request('POST', `/v1/secrets/${id}`, { name: 'tf_token_2', value: 'second' });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const secret = (updated.body.data as { secret: Record<string, unknown> }).secret;
    assert.equal(secret.id, id);
    assert.equal(secret.reference, '{{secrets.tf_token_2}}');
    assert.ok(!JSON.stringify(updated.body).includes('second'), 'the value is never shown');
    const foreign = await t.request('POST', `/v1/secrets/${id}`, { name: 'theirs' }, { as: t.otherKey });
    assert.equal(foreign.status, 404);
    const empty = await t.request('POST', `/v1/secrets/${id}`, {});
    assert.equal(empty.status, 400);
    assert.equal((await t.request('DELETE', `/v1/secrets/${id}`)).status, 200);
  });

  it('a voice named by the voice_id GET /v1/voices lists (a number, or its digits) is that voice', async () => {
    type Listed = { id: string; name: string; voice_id: number };
    const voices = (await t.request('GET', '/v1/voices')).body.voices as Listed[];
    const ryan = voices.find((v) => v.name === 'ryan')!;
    // Programs pick `v.voice_id || v.id` from the list and send it as `voice`.
    for (const voice of [ryan.voice_id, String(ryan.voice_id)]) {
      const sent = await t.request('POST', '/v1/calls', {
        phone_number: '+14155550100',
        task: 't',
        voice,
        start_time: '2099-01-01 00:00:00',
      });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assert.equal(sent.body.warnings, undefined, JSON.stringify(sent.body));
      const call = await t.request('GET', `/v1/calls/${String(sent.body.call_id)}`);
      assert.equal((call.body.request_data as Record<string, unknown>).voice, 'ryan');
      await t.request('POST', `/v1/calls/${String(sent.body.call_id)}/stop`);
    }
    const one = await t.request('GET', `/v1/voices/${ryan.voice_id}`);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal((one.body.voice as Listed).name, 'ryan');
    const sample = await t.request('POST', `/v1/voices/${ryan.voice_id}/sample`, { text: 'Hello', language: 'ENG' });
    assert.equal(sample.status, 200);
    assert.match(String(sample.headers['content-type']), /^audio\//);
    const unknown = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      voice: 9999,
      start_time: '2099-01-01 00:00:00',
    });
    assert.match(String((unknown.body.warnings as string[])[0]), /^voice "9999" is not a voice of this server/);
    await t.request('POST', `/v1/calls/${String(unknown.body.call_id)}/stop`);
  });

  it('the flat voicemail fields win over the voicemail object, and a bad action in it is named', async () => {
    const both = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      start_time: '2099-01-01 00:00:00',
      voicemail_message: 'flat',
      voicemail: { message: 'object', action: 'ignore' },
    });
    assert.equal(both.status, 200, JSON.stringify(both.body));
    const call = await t.request('GET', `/v1/calls/${String(both.body.call_id)}`);
    const requestData = call.body.request_data as Record<string, unknown>;
    assert.equal(requestData.voicemail_message, 'flat');
    assert.equal(requestData.voicemail_action, 'ignore');
    await t.request('POST', `/v1/calls/${String(both.body.call_id)}/stop`);

    const bad = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 't',
      voicemail: { action: 'sing' },
    });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body.errors), /voicemail\.action/);
  });
});
