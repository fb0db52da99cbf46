import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OfflineAgent, purposeOf } from '../../src/agent/offline.js';
import type { AgentContext, AgentInput, AgentReply, Turn } from '../../src/agent/types.js';
import type { CallRequest } from '../../src/schemas/call-request.js';
import { callRequest } from '../../src/testing/call-request.js';

/** The assistant has spoken `n` times (with a user line after each). */
function turns(n: number): Turn[] {
  const list: Turn[] = [];
  for (let i = 0; i < n; i++) list.push({ role: 'assistant', text: `line ${i}` }, { role: 'user', text: 'mm' });
  return list;
}

function context(
  request: Partial<CallRequest> = {},
  more: { inbound?: boolean; variables?: Record<string, unknown>; spoken?: number } = {},
): AgentContext {
  return {
    callId: 'call-1',
    request: callRequest(request),
    inbound: more.inbound ?? false,
    variables: more.variables ?? {},
    transcript: turns(more.spoken ?? 0),
  };
}

const agent = new OfflineAgent();
const respond = (input: AgentInput, ctx: AgentContext): Promise<AgentReply> => agent.respond(input, ctx);
const heard = (text: string): AgentInput => ({ kind: 'heard', text });
const PURPOSE = 'confirm the dental appointment for Tuesday at 3 pm';

describe('offline agent: labelled as offline (CONTRACT.md section 7)', () => {
  it('its label is "offline"', () => assert.equal(agent.label, 'offline'));
});

describe('offline agent: start', () => {
  it('says first_sentence with its variables rendered', async () => {
    const ctx = context(
      { first_sentence: 'Hi {{ name }}, this is {{clinic.name}} calling.' },
      { variables: { name: 'Ada', clinic: { name: 'Bright Smiles' } } },
    );
    assert.deepEqual(await respond({ kind: 'start' }, ctx), {
      say: 'Hi Ada, this is Bright Smiles calling.',
      action: null,
    });
  });

  it('an unknown variable in first_sentence is said as nothing, never as braces', async () => {
    const reply = await respond({ kind: 'start' }, context({ first_sentence: 'Hello {{who}}!' }));
    assert.equal(reply.say, 'Hello!');
  });

  it('without first_sentence, greets with the purpose built from the task and says it is automated', async () => {
    assert.deepEqual(await respond({ kind: 'start' }, context()), {
      say: `Hello! This is an automated call. I'm calling to ${PURPOSE}.`,
      action: null,
    });
  });

  it('renders variables of the task in the greeting', async () => {
    const ctx = context({ task: 'Remind {{name}} about the invoice.' }, { variables: { name: 'Ada' } });
    assert.equal(
      (await respond({ kind: 'start' }, ctx)).say,
      "Hello! This is an automated call. I'm calling to remind Ada about the invoice.",
    );
  });

  it('inbound without first_sentence: a welcome, not an outbound pitch', async () => {
    assert.deepEqual(await respond({ kind: 'start' }, context({}, { inbound: true })), {
      say: 'Hello, thanks for calling! How can I help you today?',
      action: null,
    });
  });

  it('inbound with first_sentence: first_sentence wins', async () => {
    const reply = await respond(
      { kind: 'start' },
      context({ first_sentence: 'Acme, good morning.' }, { inbound: true }),
    );
    assert.equal(reply.say, 'Acme, good morning.');
  });
});

describe('offline agent: heard', () => {
  const finishes: [string, string, number][] = [
    ['goodbye', 'Okay, goodbye!', 0],
    ['bye', 'bye', 3],
    ['have a good day', 'Thanks, have a good day', 1],
    ['agreement after two assistant turns', 'Yes, that works.', 2],
    ['agreement after three assistant turns', 'Sure.', 3],
    ['a decline', 'No, not interested.', 1],
    ['stop calling', 'Please stop calling me', 0],
    ['five assistant turns without agreement', 'Hmm, let me think.', 5],
  ];
  for (const [what, text, spoken] of finishes) {
    it(`${what} (${JSON.stringify(text)} after ${spoken} assistant turns) finishes the call`, async () => {
      const reply = await respond(heard(text), context({}, { spoken }));
      assert.deepEqual(reply.action, { type: 'finish' });
      assert.match(reply.say ?? '', /goodbye/i);
    });
  }

  const continues: [string, string, number, RegExp][] = [
    [
      'agreement before the purpose was stated twice',
      'Yes?',
      1,
      new RegExp(`I'm calling to ${PURPOSE}\\. Would that work`),
    ],
    ['a first reply', 'Hello?', 0, new RegExp(`I'm calling to ${PURPOSE}`)],
    ['a neutral reply later on', 'Hmm, maybe later.', 3, /Could you tell me if that works for you\?/],
    ['a "no" together with agreement is not a decline', 'No problem, sure', 1, /Would that work/],
  ];
  for (const [what, text, spoken, say] of continues) {
    it(`${what} (${JSON.stringify(text)}) continues the conversation`, async () => {
      const reply = await respond(heard(text), context({}, { spoken }));
      assert.equal(reply.action, null);
      assert.match(reply.say ?? '', say);
    });
  }

  const screener = [
    'The person you are calling is using a screening service. Please say your name and why you are calling.',
    'Please state your name.',
  ];
  for (const text of screener) {
    it(`a screener prompt (${JSON.stringify(text)}) is answered with who is calling and why`, async () => {
      assert.deepEqual(await respond(heard(text), context({}, { spoken: 0 })), {
        say: `This is an automated assistant, calling to ${PURPOSE}.`,
        action: null,
      });
    });
  }

  const who = ['Who is this?', 'Sorry, who is calling?', "What's this about?", 'Who are you', 'What do you want?'];
  for (const text of who) {
    it(`"${text}" is answered with the purpose`, async () => {
      assert.deepEqual(await respond(heard(text), context({}, { spoken: 1 })), {
        say: `This is an automated assistant. I'm calling to ${PURPOSE}.`,
        action: null,
      });
    });
  }

  it('a goodbye wins over everything else in the same words', async () => {
    const reply = await respond(heard('Who is this? Never mind, bye.'), context({}, { spoken: 1 }));
    assert.deepEqual(reply.action, { type: 'finish' });
  });
});

describe('offline agent: transfer only when the task says so and a number is configured', () => {
  const TRANSFER_TASK = 'Ask whether they need help with billing. If they do, transfer them.';
  const rows: [string, Partial<CallRequest>, number, AgentReply['action']][] = [
    [
      'task says transfer, transfer_phone_number set',
      { task: TRANSFER_TASK, transfer_phone_number: '+14155550110' },
      1,
      { type: 'transfer' },
    ],
    [
      'task says "transferring"',
      { task: 'Offer transferring to a person.', transfer_phone_number: '+14155550110' },
      1,
      { type: 'transfer' },
    ],
    [
      'task says transfer, only transfer_list.default set',
      { task: TRANSFER_TASK, transfer_list: { default: '+14155550110' } },
      1,
      { type: 'transfer' },
    ],
    ['task says transfer, no number configured', { task: TRANSFER_TASK }, 1, null],
    ['task says transfer, empty transfer_list', { task: TRANSFER_TASK, transfer_list: {} }, 1, null],
    ['number configured, task does not say transfer', { transfer_phone_number: '+14155550110' }, 1, null],
    [
      'task says transfer, but the agent has not spoken yet',
      { task: TRANSFER_TASK, transfer_phone_number: '+14155550110' },
      0,
      null,
    ],
  ];
  for (const [what, request, spoken, action] of rows) {
    it(`${what}: ${action ? 'transfers' : 'does not transfer'}`, async () => {
      const reply = await respond(heard('I need some help please.'), context(request, { spoken }));
      assert.deepEqual(reply.action, action);
      if (action) assert.equal(reply.say, 'Please hold while I transfer your call.');
    });
  }

  it('picks the transfer_list label named in the words heard', async () => {
    const ctx = context(
      {
        task: 'Answer questions. Transfer the caller to the right department when asked.',
        transfer_list: { default: '+14155550110', sales: '+14155550111', Billing: '+14155550112' },
      },
      { spoken: 1 },
    );
    assert.deepEqual((await respond(heard('Can you put me through to billing?'), ctx)).action, {
      type: 'transfer',
      target: 'Billing',
    });
    assert.deepEqual((await respond(heard('I want to buy, so sales please.'), ctx)).action, {
      type: 'transfer',
      target: 'sales',
    });
  });

  it('picks the label the task names when the words heard name none', async () => {
    const ctx = context(
      {
        task: 'If they agree, transfer them to sales.',
        transfer_list: { default: '+14155550110', sales: '+14155550111' },
      },
      { spoken: 1 },
    );
    assert.deepEqual((await respond(heard('Okay then.'), ctx)).action, { type: 'transfer', target: 'sales' });
  });

  it('the default label is never picked by name: no label named means the default number', async () => {
    const ctx = context(
      { task: 'Transfer them to the default line.', transfer_list: { default: '+14155550110', sales: '+14155550111' } },
      { spoken: 1 },
    );
    assert.deepEqual((await respond(heard('Fine.'), ctx)).action, { type: 'transfer' });
  });

  it('a label the person names wins over another label the task names', async () => {
    const ctx = context(
      {
        task: 'Transfer callers to sales, or to billing if they ask for it.',
        transfer_list: { sales: '+14155550111', billing: '+14155550112' },
      },
      { spoken: 1 },
    );
    assert.deepEqual((await respond(heard('Billing, please.'), ctx)).action, { type: 'transfer', target: 'billing' });
  });
});

describe('offline agent: IVR menus (the parsing itself: test/domain/ivr-menu.test.ts)', () => {
  const SANDBOX_MENU = 'Press 1 for sales, 2 for support, 0 for the operator.';
  const choices: [string, string, string | null, Record<string, string> | null, string][] = [
    ['a task word matches an option label', SANDBOX_MENU, 'Call the support team about the broken router.', null, '2'],
    [
      'a plural in the label matches the task word',
      'Press 1 for billing questions, 2 for repairs.',
      'Ask about a repair.',
      null,
      '2',
    ],
    [
      '"For X, press N" with a matching task',
      'For sales, press 1. For support, press 2.',
      'Get support for an order.',
      null,
      '2',
    ],
    ['a transfer_list label matches an option', SANDBOX_MENU, 'Reach a person.', { sales: '+14155550111' }, '1'],
    ['no match: the operator', SANDBOX_MENU, 'Confirm the dental appointment.', null, '0'],
    [
      'no match: a representative',
      'Press 1 for billing, 2 for a representative.',
      'Confirm the appointment.',
      null,
      '2',
    ],
    ['no task: the operator', SANDBOX_MENU, null, null, '0'],
  ];
  for (const [what, menu, task, list, key] of choices) {
    it(`${what} -> presses ${key}`, async () => {
      const reply = await respond({ kind: 'ivr_menu', text: menu }, context({ task, transfer_list: list }));
      assert.deepEqual(reply, { say: null, action: { type: 'press_buttons', digits: key } });
    });
  }

  const nothing: [string, string, string][] = [
    ['no match and no operator', 'Press 4 for billing, 5 for repairs.', 'Confirm the appointment.'],
    ['no options heard', 'Please hold.', 'Call support.'],
  ];
  for (const [what, menu, task] of nothing) {
    it(`${what}: presses nothing and waits for the repeat or a person`, async () => {
      const reply = await respond({ kind: 'ivr_menu', text: menu }, context({ task }));
      assert.equal(reply.say, null);
      assert.equal(reply.action, null);
      assert.match(reply.note ?? '', /no option fits/);
    });
  }

  it('request_data fills an entry prompt, with the terminator it asks for', async () => {
    const reply = await respond(
      { kind: 'ivr_menu', text: 'Please enter your account number followed by the pound key.' },
      context({ task: 'Ask about the bill.', request_data: { account_number: '55-21' } }),
    );
    assert.deepEqual(reply.action, { type: 'press_buttons', digits: '5521#' });
  });

  it('an entry prompt for data the call does not hold: the agent says it does not have it', async () => {
    const reply = await respond(
      { kind: 'ivr_menu', text: 'Please enter your account number followed by the pound key.' },
      context({ task: 'Ask about the bill.' }),
    );
    assert.equal(reply.say, "I'm sorry, I don't have the account number.");
    assert.equal(reply.action, null);
  });

  it('a speech menu: the agent says the option', async () => {
    const reply = await respond(
      { kind: 'ivr_menu', text: 'Please say billing, pharmacy, or appointments.' },
      context({ task: 'Refill the prescription for Maria.' }),
    );
    assert.deepEqual(reply, { say: 'pharmacy', action: null });
  });

  it('request_data names the department when the task does not', async () => {
    const reply = await respond(
      { kind: 'ivr_menu', text: 'For billing, press 1. For claims, press 2.' },
      context({ task: 'Call the insurer for the customer.', request_data: { reason: 'a claim for hail damage' } }),
    );
    assert.deepEqual(reply.action, { type: 'press_buttons', digits: '2' });
  });
});

describe('offline agent: silence', () => {
  it('the first silence re-prompts and keeps the call', async () => {
    assert.deepEqual(await respond({ kind: 'silence', silentMs: 7000, times: 1 }, context()), {
      say: 'Hello? Are you still there?',
      action: null,
    });
  });

  for (const times of [2, 3]) {
    it(`silence number ${times} finishes the call politely`, async () => {
      const reply = await respond({ kind: 'silence', silentMs: 7000 * times, times }, context());
      assert.deepEqual(reply.action, { type: 'finish' });
      assert.match(reply.say ?? '', /Goodbye!$/);
    });
  }
});

describe('purposeOf: what the call is for, from the task', () => {
  const rows: [string, string | null, string][] = [
    ['no task', null, 'follow up with you'],
    ['an empty task', '   ', 'follow up with you'],
    ['an action verb, lower-cased, final period dropped', 'Confirm the order.', 'confirm the order'],
    ['only the first sentence', 'Remind them of the bill. Be kind. Say goodbye.', 'remind them of the bill'],
    [
      'a persona line is skipped',
      'You are Sam from Acme Dental. Confirm the appointment on Tuesday.',
      'confirm the appointment on Tuesday',
    ],
    ['a "your name is" line is skipped', 'Your name is Sam! Schedule a cleaning?', 'schedule a cleaning'],
    ['an "act as" line is skipped', 'Act as a receptionist. Book a table for two.', 'book a table for two'],
    ['whitespace and newlines are folded', 'Ask\n  about   the\tdelivery.', 'ask about the delivery'],
    [
      'no action verb: framed as a topic',
      'The customer ordered a sofa.',
      'talk with you about the following: The customer ordered a sofa',
    ],
    [
      'only persona lines: nothing of the call, a neutral purpose',
      'You are a helpful assistant.',
      'follow up with you',
    ],
  ];
  for (const [what, task, purpose] of rows) {
    it(`${what}: ${JSON.stringify(task)} -> ${JSON.stringify(purpose)}`, () => assert.equal(purposeOf(task), purpose));
  }
});
