import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';

type Row = Record<string, unknown>;
const data = (r: { body: Row }) => r.body.data as Row;
const version = (persona: Row, which: 'production' | 'draft') => persona[`current_${which}_version`] as Row;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`personas (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres', clock: new ScaledClock(50) });
      await t.services.startWorkers();
    });
    after(() => t.close());

    it('creates a persona with a production version 1 and a draft version 2 holding its behaviour', async () => {
      const r = await t.request('POST', '/v1/personas', { name: 'Blandie' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.errors, null);
      const persona = data(r);
      assert.equal(persona.name, 'Blandie');
      assert.deepEqual(persona.tags, []);
      assert.deepEqual(persona.inbound_numbers, []);
      const production = version(persona, 'production');
      const draft = version(persona, 'draft');
      assert.equal(production.version_type, 'production');
      assert.equal(production.version_number, 1);
      assert.equal(production.personality_prompt, 'You are a helpful assistant');
      assert.equal(draft.version_type, 'draft');
      assert.equal(draft.version_number, 2);
      assert.equal(persona.current_production_version_id, production.id);
      assert.equal(persona.current_draft_version_id, draft.id);
    });

    it('updates the identity at once and the behaviour on the draft; promote puts the draft in production', async () => {
      const created = data(
        await t.request('POST', '/v1/personas', {
          name: 'Front desk',
          personality_prompt: 'You are Ava, the receptionist of Sunny Dental.',
          call_config: { voice: 'maya', max_duration: 10 },
        }),
      );
      const id = String(created.id);
      const patched = await t.request('PATCH', `/v1/personas/${id}`, {
        description: 'Answers the main line',
        personality_prompt: 'You are Ava. Keep answers short.',
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      const after = data(patched);
      assert.equal(after.description, 'Answers the main line');
      assert.equal(version(after, 'draft').personality_prompt, 'You are Ava. Keep answers short.');
      assert.equal(version(after, 'production').personality_prompt, 'You are Ava, the receptionist of Sunny Dental.');
      // The draft keeps what the update did not name.
      assert.deepEqual(version(after, 'draft').call_config, { voice: 'maya', max_duration: 10 });

      const promoted = data(await t.request('POST', `/v1/personas/${id}/versions/promote`));
      const production = version(promoted, 'production');
      assert.equal(production.version_number, 3);
      assert.equal(production.personality_prompt, 'You are Ava. Keep answers short.');
      assert.equal(production.promoted_from_version_id, version(after, 'draft').id);
      assert.equal(version(promoted, 'draft').id, version(after, 'draft').id, 'the draft stays the draft');

      const versions = (await t.request('GET', `/v1/personas/${id}/versions`)).body.data as Row[];
      assert.deepEqual(
        versions.map((v) => [v.version_number, v.version_type]),
        [
          [3, 'production'],
          [2, 'draft'],
          [1, 'archived'],
        ],
      );
      const listed = (await t.request('GET', '/v1/personas')).body.data as Row[];
      assert.ok(listed.some((p) => p.id === id));
    });

    it('checks a body field by field, and the ids it names against the account', async () => {
      const cases: [Row, RegExp][] = [
        [{}, /name/],
        [{ name: 'X', call_config: { background: 'stadium' } }, /call_config\.background/],
        [{ name: 'X', kb_ids: ['KB-missing'] }, /^kb_ids\[0\] "KB-missing" is not a knowledge base/],
        [{ name: 'X', default_tools: ['TL-missing'] }, /^default_tools\[0\] is not a tool/],
        [{ name: 'X', pathway_conditions: [{ name: 'Billing', pathway_id: 'nope' }] }, /pathway_conditions\[0\]/],
        [{ name: 'X', personality_prompt: 42 }, /personality_prompt/],
      ];
      for (const [body, error] of cases) {
        const r = await t.request('POST', '/v1/personas', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.ok(
          (r.body.errors as string[]).some((e) => error.test(e)),
          JSON.stringify(r.body),
        );
      }
      // Empty conditions, as a builder saves them, are kept.
      const blank = await t.request('POST', '/v1/personas', {
        name: 'Blank conditions',
        pathway_conditions: [{ name: '', prompt: '', pathway_id: '', start_node_id: '', pathway_version: '' }],
      });
      assert.equal(blank.status, 200, JSON.stringify(blank.body));
    });

    it('a call with persona_id takes its production version, its knowledge bases and what the call itself sets', async () => {
      const kb = data(await t.request('POST', '/v1/knowledge/learn', { name: 'FAQ', text: 'Open 8 to 6.' }));
      const persona = data(
        await t.request('POST', '/v1/personas', {
          name: 'Reminders',
          personality_prompt: 'You are Sam from Sunny Dental.',
          orchestration_prompt: 'Remind the patient of their cleaning.',
          call_config: { voice: 'maya', record: true, max_duration: 5, wait_for_greeting: true },
          kb_ids: [kb.id],
        }),
      );
      // The draft changes, unpromoted, do not reach calls.
      await t.request('PATCH', `/v1/personas/${String(persona.id)}`, { personality_prompt: 'Unpromoted words.' });
      const placed = await t.request('POST', '/v1/calls', {
        phone_number: '+14155550100',
        persona_id: persona.id,
        max_duration: 3,
      });
      assert.equal(placed.status, 200, JSON.stringify(placed.body));
      const call = await t.services.calls.byId(String(placed.body.call_id));
      const request = call!.request;
      assert.equal(request.task, 'You are Sam from Sunny Dental.\n\nRemind the patient of their cleaning.');
      assert.equal(request.voice, 'maya');
      assert.equal(request.record, true);
      assert.equal(request.wait_for_greeting, true);
      assert.equal(request.max_duration, 3, 'what the call sets wins');
      assert.deepEqual(request.knowledge_bases, [kb.id]);
      assert.equal(request.persona_id, persona.id);
      const ended = await waitForCall(t, String(placed.body.call_id));
      assert.equal(ended.queue_status, 'complete');
    });

    it('an inbound number answered by a persona; the persona cannot be deleted while it answers one', async () => {
      const persona = data(
        await t.request('POST', '/v1/personas', {
          name: 'Main line',
          personality_prompt: 'You are the main line of Sunny Dental.',
          call_config: { voice: 'maya' },
        }),
      );
      const id = String(persona.id);
      const bought = await t.request('POST', '/v1/inbound/purchase', { persona_id: id });
      assert.equal(bought.status, 200, JSON.stringify(bought.body));
      const number = String(bought.body.phone_number);
      const listed = (await t.request('GET', `/v1/personas/${id}`)).body.data as Row;
      assert.deepEqual(listed.inbound_numbers, [
        { phone_number: number, label: null, persona_id: id, persona_settings: null },
      ]);

      const rang = await t.request('POST', '/v1/sandbox/inbound', { from: '+14155550100', to: number });
      assert.equal(rang.status, 200, JSON.stringify(rang.body));
      const call = await t.services.calls.byId(String(rang.body.call_id));
      assert.equal(call!.request.task, 'You are the main line of Sunny Dental.');
      assert.equal(call!.request.voice, 'maya');
      await waitForCall(t, String(rang.body.call_id));

      const refused = await t.request('DELETE', `/v1/personas/${id}`);
      assert.equal(refused.status, 409);
      assert.match(String(refused.body.message), new RegExp(`answers \\${number}`));
      const unknown = await t.request('POST', `/v1/inbound/${number}`, { persona_id: 'no-such-persona' });
      assert.equal(unknown.status, 400);
      assert.equal((await t.request('POST', `/v1/inbound/${number}`, { persona_id: null, prompt: 'Hi' })).status, 200);
      const deleted = await t.request('DELETE', `/v1/personas/${id}`);
      assert.equal(deleted.status, 200);
      assert.ok(data(deleted).deleted_at);
      assert.equal((await t.request('GET', `/v1/personas/${id}`)).status, 404);
      const call2 = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', persona_id: id });
      assert.equal(call2.status, 400);
      assert.deepEqual(call2.body.errors, ['persona_id is not a persona of this account']);
    });

    it('attaches and detaches numbers, and gives an attached number its own pathway', async () => {
      const persona = data(
        await t.request('POST', '/v1/personas', { name: 'Lines', personality_prompt: 'You answer the lines.' }),
      );
      const id = String(persona.id);
      const first = String(
        (await t.request('POST', '/v1/inbound/purchase', { prompt: 'Own prompt' })).body.phone_number,
      );
      const second = String(
        (await t.request('POST', '/v1/inbound/purchase', { prompt: 'Own prompt' })).body.phone_number,
      );
      const attached = await t.request('POST', `/v1/personas/${id}/inbound/attach`, {
        inbound_numbers: [first, second],
      });
      assert.equal(attached.status, 200, JSON.stringify(attached.body));
      assert.deepEqual(
        (data(attached).inbound_numbers as Row[]).map((n) => n.phone_number).sort(),
        [first, second].sort(),
      );
      const unknown = await t.request('POST', `/v1/personas/${id}/inbound/attach`, {
        inbound_numbers: [first, '+14155559999'],
      });
      assert.equal(unknown.status, 400);
      assert.deepEqual(unknown.body.errors, [
        'inbound_numbers[1] +14155559999 is not an inbound number of this account',
      ]);

      const pathway = await t.request('POST', '/v1/pathway/create', {
        name: 'Second line',
        nodes: [{ id: 'a', type: 'Default', data: { name: 'Start', isStart: true, text: 'Second line here.' } }],
        edges: [],
      });
      const settings = await t.request('PATCH', `/v1/personas/${id}/inbound/${second}/settings`, {
        persona_settings: { pathway_id: pathway.body.pathway_id },
      });
      assert.equal(settings.status, 200, JSON.stringify(settings.body));
      assert.deepEqual(data(settings).persona_settings, { pathway_id: pathway.body.pathway_id });
      const rang = await t.request('POST', '/v1/sandbox/inbound', { from: '+14155550100', to: second });
      const call = await t.services.calls.byId(String(rang.body.call_id));
      assert.equal(call!.request.pathway_id, pathway.body.pathway_id, "the number's own pathway");
      assert.equal(call!.request.persona_id, id);
      await waitForCall(t, String(rang.body.call_id));

      const detached = await t.request('POST', `/v1/personas/${id}/inbound/detach`, { inbound_numbers: [second] });
      assert.deepEqual(
        (data(detached).inbound_numbers as Row[]).map((n) => n.phone_number),
        [first],
      );
      const own = await t.request('GET', `/v1/inbound/${second}`);
      assert.equal(own.body.persona_id, null);
      assert.equal(own.body.persona_settings, null);
      const notAttached = await t.request('PATCH', `/v1/personas/${id}/inbound/${second}/settings`, {
        persona_settings: null,
      });
      assert.equal(notAttached.status, 400);
      await t.request('POST', `/v1/personas/${id}/inbound/detach`, { inbound_numbers: [first] });
    });

    it('promotes from many clients at once: every promotion a version of its own, none refused', async () => {
      const id = String(data(await t.request('POST', '/v1/personas', { name: 'Busy' })).id);
      const promoted = await Promise.all(
        Array.from({ length: 10 }, () => t.request('POST', `/v1/personas/${id}/versions/promote`)),
      );
      assert.deepEqual(
        promoted.filter((r) => r.status !== 200).map((r) => `${r.status} ${JSON.stringify(r.body)}`),
        [],
      );
      const versions = (await t.request('GET', `/v1/personas/${id}/versions`)).body.data as Row[];
      const numbers = versions.map((v) => Number(v.version_number)).sort((a, b) => a - b);
      assert.deepEqual(
        numbers,
        Array.from({ length: 12 }, (_, i) => i + 1),
      );
      assert.equal(versions.filter((v) => v.version_type === 'production').length, 1);
    });

    it('keeps each account to its own personas', async () => {
      const id = String(data(await t.request('POST', '/v1/personas', { name: 'Private' })).id);
      const as = { as: t.otherKey };
      assert.equal((await t.request('GET', `/v1/personas/${id}`, undefined, as)).status, 404);
      assert.equal((await t.request('PATCH', `/v1/personas/${id}`, { name: 'Mine now' }, as)).status, 404);
      assert.equal((await t.request('POST', `/v1/personas/${id}/versions/promote`, undefined, as)).status, 404);
      assert.equal((await t.request('GET', `/v1/personas/${id}/versions`, undefined, as)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/personas/${id}`, undefined, as)).status, 404);
      const theirs = (await t.request('GET', '/v1/personas', undefined, as)).body.data as Row[];
      assert.ok(!theirs.some((p) => p.id === id));
      const call = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', persona_id: id }, as);
      assert.equal(call.status, 400);
      assert.equal(String(data(await t.request('GET', `/v1/personas/${id}`)).name), 'Private');
    });

    it('takes the flat names clients send (prompt, voice, model, pathway_id), POST as PATCH, and resets the draft', async () => {
      const pathway = await t.request('POST', '/v1/pathway/create', { name: 'Billing' });
      const pathwayId = String(pathway.body.pathway_id);
      const created = data(
        await t.request('POST', '/v1/personas', {
          name: 'Rita',
          prompt: 'You are Rita.',
          voice: 'maya',
          model: 'base',
          call_config: { record: true },
        }),
      );
      const id = String(created.id);
      const production = version(created, 'production');
      assert.equal(production.personality_prompt, 'You are Rita.');
      assert.deepEqual(production.call_config, { record: true, voice: 'maya', model: 'base' });
      assert.deepEqual([production.voice, production.model, production.pathway_id], ['maya', 'base', null]);

      const updated = await t.request('POST', `/v1/personas/${id}`, {
        prompt: 'You are Rita, brief.',
        pathway_id: pathwayId,
      });
      assert.equal(updated.status, 200, JSON.stringify(updated.body));
      const draft = version(data(updated), 'draft');
      assert.equal(draft.personality_prompt, 'You are Rita, brief.');
      assert.deepEqual(draft.call_config, { record: true, voice: 'maya', model: 'base', pathway_id: pathwayId });
      assert.equal(version(data(updated), 'production').personality_prompt, 'You are Rita.');

      const wrong = await t.request('PATCH', `/v1/personas/${id}`, { pathway_id: 'no-such-pathway', model: 'huge' });
      assert.equal(wrong.status, 400);
      assert.ok((wrong.body.errors as string[]).includes('pathway_id is not a pathway of this account'));
      assert.ok(
        (wrong.body.errors as string[]).some((e) => e.startsWith('model must be one of')),
        JSON.stringify(wrong.body.errors),
      );

      const reset = await t.request('POST', `/v1/personas/${id}/reset-draft`, {});
      assert.equal(reset.status, 200, JSON.stringify(reset.body));
      assert.equal(version(data(reset), 'draft').personality_prompt, 'You are Rita.');
      assert.deepEqual(version(data(reset), 'draft').call_config, production.call_config);

      await t.request('POST', `/v1/personas/${id}`, { prompt: 'You are Rita, v3.' });
      const promoted = await t.request('POST', `/v1/personas/${id}/promote`, {});
      assert.equal(promoted.status, 200);
      assert.equal(version(data(promoted), 'production').personality_prompt, 'You are Rita, v3.');
      for (const path of [`/v1/personas/${id}/promote`, `/v1/personas/${id}/reset-draft`, `/v1/personas/${id}`])
        assert.equal((await t.request('POST', path, {}, { as: t.otherKey })).status, 404, path);
    });
  });
