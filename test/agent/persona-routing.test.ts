import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { personaApps, transcriptText, type PersonaApps } from '../../src/testing/persona-apps.js';
import type { FakeOpenAi, FakeReply } from '../../src/testing/fake-openai.js';

/** A person who answers, asks about their bill, and answers what they are asked next. */
const BILL_QUESTION = {
  id: 'bill-question',
  number: '0171',
  name: 'Asks about a bill',
  description: 'Says hello, asks about a charge on their bill, gives an account number, hangs up.',
  ring: { kind: 'answer', afterMs: 500 },
  replyDelayMs: 5000,
  start: 'main',
  states: {
    main: [
      { say: 'Hello?' },
      {
        listen: {
          timeoutMs: 15000,
          otherwise: [{ say: 'I have a question about a charge on my bill.' }, { goto: 'next' }],
        },
      },
    ],
    next: [{ listen: { timeoutMs: 15000, otherwise: [{ say: 'It is 4 4 1 2. Thanks, bye.' }, { hangup: true }] } }],
  },
};

const BILLING = {
  name: 'Billing',
  nodes: [
    {
      id: 'start',
      type: 'Default',
      data: { name: 'Billing desk', isStart: true, text: 'You are through to billing. What is your account number?' },
    },
  ],
  edges: [],
};

describe('personas hand calls to the pathway of the condition the caller talks about (sandbox, clock 25x)', () => {
  let apps: PersonaApps;
  let fake: FakeOpenAi;
  let offline: TestApp;
  let llm: TestApp;
  before(async () => {
    apps = await personaApps({ 'bill-question.json': BILL_QUESTION });
    ({ fake, offline, llm } = apps);
  });
  after(() => apps.close());

  async function routedPersona(t: TestApp): Promise<string> {
    const pathway = await t.request('POST', '/v1/pathway/create', BILLING);
    assert.equal(pathway.status, 200, JSON.stringify(pathway.body));
    const persona = await t.request('POST', '/v1/personas', {
      name: 'Front desk',
      personality_prompt: 'Let the customer know their renewal is due.',
      pathway_conditions: [
        { name: 'Sales', prompt: 'The caller wants to buy a new plan', pathway_id: '' },
        {
          name: 'Billing',
          prompt: 'The caller has a question about a bill, a charge or a payment',
          pathway_id: pathway.body.pathway_id,
        },
      ],
    });
    assert.equal(persona.status, 200, JSON.stringify(persona.body));
    return String((persona.body.data as Record<string, unknown>).id);
  }

  it('the offline model: the words of the question choose the billing pathway, which runs the rest of the call', async () => {
    const persona = await routedPersona(offline);
    const placed = await offline.request('POST', '/v1/calls', { phone_number: '+14155550171', persona_id: persona });
    assert.equal(placed.status, 200, JSON.stringify(placed.body));
    const call = await waitForCall(offline, String(placed.body.call_id));
    const said = transcriptText(call);
    assert.match(
      said,
      /user: I have a question about a charge on my bill\.\nagent-action: Handed to pathway Billing[^]*assistant: You are through to billing\. What is your account number\?/,
      said,
    );
    assert.match(said, /Let the customer know|renewal/, 'the persona spoke first');
  });

  it('a language model chooses the route among the conditions that have a pathway', async () => {
    const persona = await routedPersona(llm);
    const asked: string[] = [];
    fake.handler = (r): FakeReply => {
      if (r.body.tools?.some((tool) => tool.function.name === 'choose_route')) {
        asked.push(String(r.body.messages.at(-1)!.content));
        return { toolCalls: [{ name: 'choose_route', arguments: { route: '0', reason: 'a billing question' } }] };
      }
      return { text: 'Hi, this is the front desk calling about your renewal.' };
    };
    const placed = await llm.request('POST', '/v1/calls', { phone_number: '+14155550171', persona_id: persona });
    const call = await waitForCall(llm, String(placed.body.call_id));
    const said = transcriptText(call);
    assert.match(said, /assistant: You are through to billing\./, said);
    assert.ok(
      !asked.some((text) => text.includes('The caller just said: "Hello?"')),
      'a greeting is routed nowhere without asking the model',
    );
    assert.ok(
      asked.some((text) => /- 0: Billing \(The caller has a question about a bill/.test(text)),
      asked.join('\n'),
    );
  });
});
