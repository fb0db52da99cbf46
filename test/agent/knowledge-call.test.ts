import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { personaApps, transcriptText, type PersonaApps } from '../../src/testing/persona-apps.js';
import type { FakeOpenAi } from '../../src/testing/fake-openai.js';

const FAQ =
  'Bright Smile Dental is open Monday to Friday from 8 am to 6 pm.\n\n' +
  'On Saturday we open at 10 am and close at 2 pm. We are closed on Sundays.\n\n' +
  'Parking is free in the lot behind the building. New patients should bring a photo ID.';

/** A person who answers, asks about Saturday, and hangs up once answered. */
const ASKER = {
  id: 'asker',
  number: '0170',
  name: 'Asks about Saturday',
  description: 'Says hello, asks when the office opens on Saturday, and hangs up once answered.',
  ring: { kind: 'answer', afterMs: 500 },
  // Lets the agent finish what it says before the next line.
  replyDelayMs: 5000,
  start: 'main',
  states: {
    main: [
      { say: 'Hello?' },
      { listen: { timeoutMs: 15000, otherwise: [{ say: 'What time do you open on Saturday?' }, { goto: 'answer' }] } },
    ],
    answer: [{ listen: { timeoutMs: 15000, otherwise: [{ say: 'Great, thank you. Goodbye.' }, { hangup: true }] } }],
  },
};

describe('calls that look things up in knowledge bases (sandbox, clock 25x)', () => {
  let apps: PersonaApps;
  let fake: FakeOpenAi;
  let offline: TestApp;
  let llm: TestApp;
  before(async () => {
    apps = await personaApps({ 'asker.json': ASKER });
    ({ fake, offline, llm } = apps);
  });
  after(() => apps.close());

  async function knowledgeBase(t: TestApp): Promise<string> {
    const r = await t.request('POST', '/v1/knowledge/learn', { name: 'Bright Smile FAQ', text: FAQ });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return String((r.body.data as Record<string, unknown>).id);
  }

  it('the offline model answers the question from the knowledge base the call names in its tools', async () => {
    const id = await knowledgeBase(offline);
    const placed = await offline.request('POST', '/v1/calls', {
      phone_number: '+14155550170',
      task: 'Let the patient know their cleaning is due.',
      tools: [id],
    });
    assert.equal(placed.status, 200, JSON.stringify(placed.body));
    const call = await waitForCall(offline, String(placed.body.call_id));
    const said = transcriptText(call);
    assert.match(
      said,
      /user: What time do you open on Saturday\?\nassistant: On Saturday we open at 10 am and close at 2 pm\./,
    );
    assert.equal(call.call_ended_by, 'USER', said);
  });

  it('without the knowledge base the same question gets no such answer', async () => {
    const placed = await offline.request('POST', '/v1/calls', {
      phone_number: '+14155550170',
      task: 'Let the patient know their cleaning is due.',
    });
    const said = transcriptText(await waitForCall(offline, String(placed.body.call_id)));
    assert.doesNotMatch(said, /10 am/);
  });

  it('a language model is given the passages that answer what the caller just asked', async () => {
    const id = await knowledgeBase(llm);
    fake.handler = () => ({ text: 'Happy to help.' });
    const seen = fake.requests.length;
    const placed = await llm.request('POST', '/v1/calls', {
      phone_number: '+14155550170',
      task: 'Let the patient know their cleaning is due.',
      tools: [id],
    });
    const call = await waitForCall(llm, String(placed.body.call_id));
    const prompts = fake.requests.slice(seen).map((r) => String(r.body.messages[0]!.content));
    const asked = prompts.find((p) => p.includes('From your knowledge bases'));
    assert.ok(asked, transcriptText(call));
    assert.match(asked, /\[Bright Smile FAQ\] On Saturday we open at 10 am and close at 2 pm\./);
    // The knowledge base's other passages stay out of the prompt unless asked about.
    assert.doesNotMatch(asked, /photo ID/);
    // Before the question, nothing was looked up.
    assert.doesNotMatch(prompts[0]!, /From your knowledge bases/);
  });

  it('a knowledge base deleted after the call was placed: the call goes on without it', async () => {
    const id = await knowledgeBase(offline);
    const placed = await offline.request('POST', '/v1/calls', {
      phone_number: '+14155550170',
      task: 'Let the patient know their cleaning is due.',
      tools: [id],
      start_time: new Date(offline.services.clock.now().getTime() + 3000).toISOString(),
    });
    assert.equal(placed.status, 200, JSON.stringify(placed.body));
    assert.equal((await offline.request('DELETE', `/v1/knowledge/${id}`)).status, 200);
    const call = await waitForCall(offline, String(placed.body.call_id));
    assert.equal(call.queue_status, 'complete', transcriptText(call));
    assert.doesNotMatch(transcriptText(call), /10 am/);
  });

  it('a question the knowledge base has nothing on is kept as a gap; answering it teaches the next call', async () => {
    const r = await offline.request('POST', '/v1/knowledge/learn', {
      name: 'Parking only',
      text: 'Parking is free in the lot behind the building.',
    });
    const id = String((r.body.data as Record<string, unknown>).id);
    const placed = await offline.request('POST', '/v1/calls', {
      phone_number: '+14155550170',
      task: 'Let the patient know their cleaning is due.',
      tools: [id],
    });
    const call = await waitForCall(offline, String(placed.body.call_id));
    assert.doesNotMatch(transcriptText(call), /10 am/);

    const listed = await offline.request('GET', `/v1/knowledge/gaps?knowledge_base_id=${id}&status=open`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    const { gaps, total } = listed.body.data as { gaps: Record<string, unknown>[]; total: number };
    assert.equal(total, 1, JSON.stringify(gaps));
    assert.equal(gaps[0]!.question, 'What time do you open on Saturday?');
    assert.equal(gaps[0]!.call_id, placed.body.call_id);
    assert.deepEqual(gaps[0]!.knowledge_base_ids, [id]);
    // Another account sees none of it.
    const theirs = await offline.request('GET', '/v1/knowledge/gaps', undefined, { as: offline.otherKey });
    assert.equal((theirs.body.data as { total: number }).total, 0);
    assert.equal(
      (await offline.request('POST', `/v1/knowledge/gaps/${String(gaps[0]!.id)}/resolve`, {}, { as: offline.otherKey }))
        .status,
      404,
    );

    const resolved = await offline.request('POST', `/v1/knowledge/gaps/${String(gaps[0]!.id)}/resolve`, {
      answer: 'On Saturday we open at 10 am and close at 2 pm.',
    });
    assert.equal(resolved.status, 200, JSON.stringify(resolved.body));
    assert.equal((resolved.body.data as Record<string, unknown>).status, 'resolved');
    const versions = (await offline.request('GET', `/v1/knowledge/${id}/versions`)).body.data as { change: string }[];
    assert.deepEqual(
      versions.map((v) => v.change),
      ['created', 'gap answered'],
    );
    // The next call's agent answers it, and no new gap is kept.
    const again = await offline.request('POST', '/v1/calls', {
      phone_number: '+14155550170',
      task: 'Let the patient know their cleaning is due.',
      tools: [id],
    });
    const said = transcriptText(await waitForCall(offline, String(again.body.call_id)));
    assert.match(said, /assistant: .*On Saturday we open at 10 am and close at 2 pm\./);
    const open = await offline.request('GET', `/v1/knowledge/gaps?knowledge_base_id=${id}&status=open`);
    assert.equal((open.body.data as { total: number }).total, 0);
  });
});
