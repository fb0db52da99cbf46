import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, fakeLlmConfig, type FakeReply, type RecordedRequest } from '../../src/testing/fake-openai.js';
import { edgesTaken, inboundCall, loadExample, node, placeCall, WebhookServer } from './helpers.js';

/** What the fake model does at each step (by the step's name, as the system prompt shows it). */
interface Script {
  /** choose_route arguments per step, from the caller's words (as a model would read them). */
  route?: Record<string, (heard: string) => Record<string, unknown> | FakeReply>;
  /** The `variables` the model returns with its route, per step, from the caller's words. */
  extract?: Record<string, (heard: string) => Record<string, unknown>>;
  speech?: Record<string, string>;
}

const stepOf = (r: RecordedRequest): string =>
  /Current step: "([^"]+)"/.exec(String(r.body.messages[0]?.content))?.[1] ?? '';
const toolOf = (r: RecordedRequest): string | undefined => r.body.tools?.[0]?.function.name;

/** A handler that answers the pathway runner's route (with extraction) and speech requests from a script. */
function pathwayModel(script: Script): (r: RecordedRequest) => FakeReply {
  return (r) => {
    const step = stepOf(r);
    if (toolOf(r) === 'choose_route') {
      const heard = /The caller just said: "([^]*)"\./.exec(String(r.body.messages.at(-1)?.content))?.[1] ?? '';
      const answer = script.route?.[step]?.(heard) ?? { route: 'stay', reason: 'no script' };
      if ('status' in answer || 'hang' in answer) return answer as FakeReply;
      const variables = script.extract?.[step]?.(heard);
      return {
        toolCalls: [
          {
            name: 'choose_route',
            arguments: { ...(answer as Record<string, unknown>), ...(variables && { variables }) },
          },
        ],
      };
    }
    return { text: script.speech?.[step] ?? `Generated words for ${step}.` };
  };
}

describe('example pathways with a language model (fake OpenAI server, sandbox, clock 25x)', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  let hook: WebhookServer;
  before(async () => {
    fake = await FakeOpenAi.start();
    hook = await WebhookServer.start();
    t = await createTestApp({ clock: new ScaledClock(25), config: { llm: fakeLlmConfig(fake, 1000) } });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
    await hook.close();
  });

  it('lead qualification: the model extracts, keeps a node until its condition is met, and speaks prompt nodes', async () => {
    const seen = fake.requests.length;
    fake.handler = pathwayModel({
      route: {
        Greeting: (heard) =>
          /own/.test(heard)
            ? { route: 'owner', reason: 'The caller owns the home.' }
            : { route: 'stay', reason: 'No answer yet.' },
        'Monthly bill': (heard) =>
          /180/.test(heard)
            ? { route: 'qualified', reason: 'They gave 180 dollars.', condition_met: true }
            : { route: 'stay', reason: 'They asked about price instead.', condition_met: false },
        'Ask for e-mail': (heard) =>
          /@/.test(heard)
            ? { route: 'gave_email', reason: 'An address was given.', condition_met: true }
            : { route: 'stay', reason: 'No address yet.', condition_met: false },
      },
      extract: {
        Greeting: (heard) => (/own/.test(heard) ? { owns_home: true } : {}),
        'Monthly bill': (heard) => (/180/.test(heard) ? { monthly_bill: '180' } : {}),
        'Ask for e-mail': (heard) => (/@/.test(heard) ? { email: 'jordan@example.com' } : {}),
      },
      speech: {
        Greeting: 'Hi, this is Riley from Sunny Solar. Do you own your home?',
        'Monthly bill': 'Pricing depends on your usage. What is your monthly electric bill?',
        'Ask for e-mail': 'Great news, you qualify! What is the best email for your quote?',
      },
    });
    const id = await loadExample(t, 'lead-qualification.json');
    const { call, logs, lines } = await placeCall(t, { phone_number: '+14155550141', pathway_id: id });
    assert.equal(call.queue_status, 'complete', lines);
    assert.deepEqual(edgesTaken(logs), ['owner', 'qualified', 'gave_email']);
    const stayed = logs.find((l) => l.event === 'stayed' && l.node_id === 'bill')!;
    assert.equal(stayed.node_id, 'bill');
    assert.equal(stayed.decided_by, 'llm');
    assert.equal(stayed.reason, 'condition not met: They asked about price instead.');
    assert.equal(stayed.said, 'Pricing depends on your usage. What is your monthly electric bill?');
    assert.equal(logs.find((l) => l.chosen_edge?.id === 'owner')!.reason, 'The caller owns the home.');
    assert.equal(logs.find((l) => l.chosen_edge?.id === 'owner')!.decided_by, 'llm');
    const variables = call.variables as Record<string, unknown>;
    assert.equal(variables.owns_home, true);
    assert.equal(variables.monthly_bill, 180, 'coerced to the declared integer type');
    assert.equal(variables.email, 'jordan@example.com');
    assert.match(lines, /assistant: Great news, you qualify! What is the best email for your quote\?/);
    assert.equal(call.request_data && (call.request_data as Record<string, unknown>).model_provider, 'm-enhanced');

    // The pathway's requests (the post-call summary, which may already have been asked for, is not one).
    const sent = fake.requests.slice(seen).filter((r) => stepOf(r) !== '');
    // globalPrompt leads every prompt; the step's own instructions follow.
    assert.ok(
      sent.every((r) => String(r.body.messages[0]!.content).startsWith('You are Riley, a friendly and brief sales')),
    );
    // modelOptions.temperature applies to the bill step's requests.
    const bill = sent.filter((r) => stepOf(r) === 'Monthly bill');
    assert.ok(bill.some((r) => toolOf(r) === 'choose_route' && r.body.temperature === 0.2));
    assert.ok(bill.some((r) => toolOf(r) === undefined && r.body.temperature === 0.2));
    assert.ok(bill.every((r) => r.body.temperature === 0.2));
    // One request per caller turn reads the words: the edges, the global node, the condition and
    // the extractVars schema are all in it. Edges with variable conditions say so.
    const route = bill.find((r) => toolOf(r) === 'choose_route')!;
    const params = route.body.tools![0]!.function.parameters as {
      properties: { route: { enum: string[] }; variables: unknown };
      required: string[];
    };
    assert.deepEqual(params.properties.route.enum, ['qualified', 'low_bill', 'pricing', 'stay']);
    assert.ok(params.required.includes('condition_met'));
    assert.deepEqual(params.properties.variables, {
      type: 'object',
      description: 'What the caller has said for these fields so far. Leave out a field not given; never guess.',
      properties: { monthly_bill: { type: 'integer', description: 'The monthly electric bill in US dollars' } },
      additionalProperties: false,
    });
    const instruction = String(route.body.messages.at(-1)!.content);
    assert.match(
      instruction,
      /- qualified: qualified: a bill of 100 dollars or more \[only when monthly_bill >= 100\]/,
    );
    assert.match(instruction, /- low_bill: not qualified: a bill under 100 dollars \[only when monthly_bill < 100\]/);
    assert.match(instruction, /- pricing: \(global, any time\) asks about the price/);
    assert.match(instruction, /The caller has said a dollar amount/);
    // The first bill answer was a question: the model kept the node, no edge was open anyway.
    assert.equal(logs.filter((l) => l.node_id === 'bill' && l.event === 'decided').length, 1);
  });

  it('appointment booking: a global node chosen by the model and back; its extraction sent to the webhook', async () => {
    hook.received.length = 0;
    hook.reply = () => ({ status: 200, body: { confirmation: 'BK-9' } });
    fake.handler = pathwayModel({
      route: {
        Greeting: (heard) =>
          /book/.test(heard)
            ? { route: 'wants', reason: 'They want to book.' }
            : { route: 'stay', reason: 'A greeting.' },
        'Ask day and time': (heard) =>
          /hours/.test(heard)
            ? { route: 'hours', reason: 'They asked when the office is open.', condition_met: false }
            : /Tuesday/.test(heard)
              ? { route: 'gave_time', reason: 'Tuesday at 15:00 was given.', condition_met: true }
              : { route: 'stay', reason: 'Nothing yet.', condition_met: false },
        'Confirm the booking': (heard) =>
          /text/.test(heard)
            ? { route: 'send_text', reason: 'They want a text.' }
            : { route: 'stay', reason: 'Unclear.' },
      },
      extract: {
        'Ask day and time': (heard) =>
          /Tuesday/.test(heard) ? { appointment_day: 'Tuesday', appointment_time: '15:00' } : {},
      },
      speech: {
        Greeting: 'Hi Dana, would you like to book an appointment?',
        'Ask day and time': 'What day and time work best for you?',
      },
    });
    const id = await loadExample(t, 'appointment-booking.json', (g) => {
      node(g, 'book').url = `${hook.url}/bookings`;
    });
    const { call, logs, lines } = await placeCall(t, {
      phone_number: '+14155550140',
      pathway_id: id,
      request_data: { name: 'Dana' },
    });
    assert.equal(call.queue_status, 'complete', lines);
    assert.deepEqual(edgesTaken(logs), ['wants', 'global:hours', 'gave_time', 'send_text']);
    assert.equal(logs.find((l) => l.chosen_edge?.id === 'global:hours')!.reason, 'They asked when the office is open.');
    assert.deepEqual(JSON.parse(hook.received[0]!.body), {
      patient: 'Dana',
      day: 'Tuesday',
      time: '15:00',
      phone: '+14155550140',
    });
    assert.match(lines, /You are booked for Tuesday at 15:00\. Your confirmation number is BK-9\./);
  });

  it('support triage inbound with the model; a failing model falls back to the offline choice', async () => {
    hook.received.length = 0;
    hook.reply = () => ({ status: 200, body: { ticket: { id: 'T-5' } } });
    fake.handler = pathwayModel({
      route: {
        // The model fails here: the offline model's word matching decides instead.
        Greeting: () => ({ status: 500, message: 'model down' }),
        'Restarted?': (heard) =>
          /No/.test(heard)
            ? { route: 'not_yet', reason: 'They have not restarted it.' }
            : { route: 'stay', reason: 'Unclear.' },
        'Restart the router': (heard) =>
          /still not working/.test(heard)
            ? { route: 'still_broken', reason: 'Still not working.' }
            : { route: 'stay', reason: 'Waiting.' },
      },
      extract: { 'Restarted?': (heard) => (/No/.test(heard) ? { restarted_router: false } : {}) },
    });
    const id = await loadExample(t, 'support-triage.json', (g) => {
      node(g, 'ticket').url = `${hook.url}/tickets`;
    });
    const { call, logs, lines } = await inboundCall(t, id, '+14155550142');
    assert.equal(call.transferred_to, '+14155550110', lines);
    assert.deepEqual(edgesTaken(logs), ['to_tech', 'not_yet', 'still_broken']);
    const first = logs.find((l) => l.chosen_edge?.id === 'to_tech')!;
    assert.equal(first.decided_by, 'offline');
    assert.match(lines, /agent-action: Language model failed \(route\): the offline model decided/);
    assert.equal(logs.find((l) => l.chosen_edge?.id === 'not_yet')!.decided_by, 'llm');
    assert.equal((call.variables as Record<string, unknown>).ticket_id, 'T-5');
  });
});
