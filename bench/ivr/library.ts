/**
 * The phone-menu library: each sandbox menu persona (src/carriers/sandbox/personas/016x-017x)
 * with a task, the call's data, the keys (or words) that reach the department the task needs,
 * and the line that department says. The menu library test and `npm run bench:ivr` both run it.
 *
 * `set`: `tuning` menus were written first and the parser and the choice were tuned on them;
 * `held-out` menus were written afterwards and run unchanged, to show how the rules do on
 * wordings they were not tuned on.
 */
import { chooseOption, companyWords, isMenu, type MenuOption } from '../../src/domain/ivr-menu.js';
import type { FakeReply, RecordedRequest } from '../../src/testing/fake-openai.js';
import type { CallLogEntry } from '../../src/carriers/sandbox/network.js';
import type { TestApp } from '../../src/testing/harness.js';

export interface MenuCase {
  number: string;
  what: string;
  set: 'tuning' | 'held-out';
  task: string;
  request_data?: Record<string, unknown>;
  language?: string;
  /** Every key the agent should press, in order ("" when it should press none). */
  keys: string;
  /** Words the agent should say to a speech menu. */
  says?: RegExp;
  /** A line the department the task needs says once reached. */
  reached: RegExp;
}

export const LIBRARY: MenuCase[] = [
  {
    number: '0160',
    what: 'pharmacy, one option per sentence, then the prescription number and pound',
    set: 'tuning',
    task: 'Refill the blood pressure prescription for Maria Lopez.',
    request_data: { prescription_number: '4417' },
    keys: '14417#',
    reached: /this is Dana speaking/,
  },
  {
    number: '0161',
    what: 'electric utility, billing',
    set: 'tuning',
    task: 'Ask Northfield Power about a charge on the March electric bill.',
    keys: '2',
    reached: /this is Chris in billing/,
  },
  {
    number: '0161',
    what: 'electric utility, nothing fits: "all other questions"',
    set: 'tuning',
    task: 'Ask Northfield Power whether they have a discount program for seniors.',
    keys: '0',
    reached: /this is Morgan with customer service/,
  },
  {
    number: '0162',
    what: 'bank, a language menu first, then a lost card and its last four digits',
    set: 'tuning',
    task: 'Report a lost debit card for the account holder, Sam Rivera.',
    request_data: { card_last4: '8812' },
    keys: '118812#',
    reached: /Card services, this is Jordan/,
  },
  {
    number: '0163',
    what: 'clinic, an emergency notice first, nested appointments menu',
    set: 'tuning',
    task: "Reschedule Tom Baker's appointment from Tuesday to Thursday afternoon.",
    keys: '12',
    reached: /Scheduling, this is Riley/,
  },
  {
    number: '0164',
    what: 'mobile carrier, a speech menu',
    set: 'tuning',
    task: 'Get technical help for the customer: their phone has had no internet since Monday.',
    keys: '',
    says: /technical support/i,
    reached: /this is Casey in technical support/,
  },
  {
    number: '0165',
    what: 'airline, baggage, nested, then the file reference number',
    set: 'tuning',
    task: 'Report a delayed suitcase: it did not arrive on flight 212 for passenger Ana Ruiz.',
    request_data: { file_reference: '482913' },
    keys: '31482913#',
    reached: /Baggage services, this is Avery/,
  },
  {
    number: '0166',
    what: 'car insurance, claim status, "to repeat these options", then the claim number',
    set: 'tuning',
    task: 'Check on the status of claim 88213 for the collision last week.',
    request_data: { claim_number: '88213' },
    keys: '288213#',
    reached: /Claims, this is Taylor/,
  },
  {
    number: '0167',
    what: 'school district, an absence and the student ID',
    set: 'tuning',
    task: 'Let the school know that the student Lee Chen is sick today and will miss class.',
    request_data: { student_id: '30417' },
    keys: '130417#',
    reached: /Attendance office, this is Jamie/,
  },
  {
    number: '0168',
    what: 'motor vehicles, license renewal, hold music',
    set: 'tuning',
    task: "Renew the driver's license for Pat Kim, which expires next month.",
    keys: '1',
    reached: /this is Quinn/,
  },
  {
    number: '0169',
    what: 'hardware store, no option fits and no operator: nothing pressed, a person after the hold',
    set: 'tuning',
    task: 'Ask whether the order placed on Monday can be returned for a refund.',
    keys: '',
    reached: /this is Max speaking/,
  },
  {
    number: '0170',
    what: 'clinic whose menu starts in Spanish, then lab results',
    set: 'held-out',
    task: 'Ask the clinic for the blood test results of patient Ana Ruiz.',
    keys: '22',
    reached: /Lab, this is Pat/,
  },
  {
    number: '0171',
    what: 'cable company, an option asked as a question, hold music',
    set: 'held-out',
    task: "Report that the customer's internet connection keeps dropping every evening.",
    keys: '3',
    reached: /Tech support, this is Robin/,
  },
  {
    number: '0172',
    what: 'credit union, the member number first, then number words',
    set: 'held-out',
    task: "Make this month's car loan payment of 310 dollars for member Lee Park.",
    request_data: { member_number: '20045511' },
    keys: '20045511#4',
    reached: /Loan department, this is Drew/,
  },
  {
    number: '0173',
    what: 'hotel, three levels: reservations, cancel, the confirmation number',
    set: 'held-out',
    task: 'Cancel the hotel reservation for Kim Lee for next weekend.',
    request_data: { confirmation_number: '77120' },
    keys: '1277120#',
    reached: /Reservations, this is Morgan/,
  },
  {
    number: '0174',
    what: 'city water department, a greeting that says "You have reached", press star to repeat',
    set: 'held-out',
    task: 'Ask why the water bill for 14 Elm Street doubled this month.',
    keys: '2',
    reached: /Water billing, this is Lou/,
  },
  {
    number: '0175',
    what: 'veterinary hospital, a speech menu',
    set: 'held-out',
    task: 'Order a refill of the heartworm medication for a dog named Max.',
    keys: '',
    says: /pharmacy/i,
    reached: /Pharmacy, this is Jo/,
  },
];

/** The department a call reached, the keys it pressed, and how long each choice took after its prompt ended. */
export interface MenuRun {
  case: MenuCase;
  callId: string;
  reached: boolean;
  keys: string;
  said: string[];
  /** Keys pressed that the path to the department does not take. */
  wrongKeys: number;
  /** Call-clock milliseconds from the end of the far end's last line to each first key of a press. */
  decisionMs: number[];
  transcript: string;
}

/** Places the case's call and waits for it to end. */
export async function runMenuCase(t: TestApp, c: MenuCase, extra: Record<string, unknown> = {}): Promise<MenuRun> {
  const r = await t.request('POST', '/v1/calls', {
    phone_number: `+1415555${c.number}`,
    task: c.task,
    answered_by_enabled: true,
    max_duration: 4,
    ...(c.request_data && { request_data: c.request_data }),
    ...(c.language && { language: c.language }),
    ...extra,
  });
  if (r.status !== 200) throw new Error(`POST /v1/calls: ${r.status} ${JSON.stringify(r.body)}`);
  const callId = String(r.body.call_id);
  const call = await untilEnded(t, callId);
  const log: CallLogEntry[] = t.services.sandbox.call(callId)?.log ?? [];
  return measure(c, callId, log, call);
}

/** The call once it ended: a menu call at the real speed of a call lasts a minute or two. */
async function untilEnded(t: TestApp, id: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 1500; i++) {
    const r = await t.request('GET', `/v1/calls/${id}`);
    if (r.body.completed === true || String(r.body.queue_status).endsWith('error')) return r.body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`call ${id} did not end in five minutes`);
}

function measure(c: MenuCase, callId: string, log: CallLogEntry[], call: Record<string, unknown>): MenuRun {
  const keys = log.filter((e) => e.by === 'agent' && e.kind === 'dtmf').map((e) => e.text ?? '');
  let wrongKeys = 0;
  keys.forEach((k, i) => {
    if (c.keys[i] !== k) wrongKeys++;
  });
  const decisionMs: number[] = [];
  let lastHeard: Date | undefined;
  let pressing = false;
  for (const e of log) {
    if (e.by !== 'agent' && e.kind === 'speech') {
      lastHeard = e.at;
      pressing = false;
    } else if (e.by === 'agent' && e.kind === 'dtmf') {
      // The key's tone ends 100 ms after it starts (docs/sandbox.md): the choice came before.
      if (!pressing && lastHeard) decisionMs.push(e.at.getTime() - 100 - lastHeard.getTime());
      pressing = true;
    }
  }
  const transcript = ((call.transcripts as { user: string; text: string }[] | undefined) ?? [])
    .map((x) => `${x.user}: ${x.text}`)
    .join('\n');
  return {
    case: c,
    callId,
    reached: log.some((e) => e.by !== 'agent' && e.kind === 'speech' && c.reached.test(e.text ?? '')),
    keys: keys.join(''),
    said: log.filter((e) => e.by === 'agent' && e.kind === 'speech').map((e) => e.text ?? ''),
    wrongKeys,
    decisionMs,
    transcript,
  };
}

/**
 * The OpenAI-compatible fake model's answers for menu calls: on a menu it reads the options and
 * the task from the prompt as sent and answers with one choose_menu_option call (matching the
 * task's words and departments to the option labels, as the offline rules do, leaving out the
 * company's name it heard in the greetings); in conversation
 * it states the task and says goodbye once the other side has answered twice.
 */
export function fakeMenuModel(request: RecordedRequest): FakeReply {
  const messages = request.body.messages;
  const system = String(messages[0]?.content ?? '');
  const task = /Your task:\n([^\n]*)/.exec(system)?.[1] ?? '';
  if (request.body.tools?.some((tool) => tool.function.name === 'choose_menu_option')) {
    const prompt = String(messages.at(-1)?.content ?? '');
    const options: MenuOption[] = [...prompt.matchAll(/^- (?:key (\S+)|say "([^"]+)"): (.*)$/gm)].map((m) => ({
      key: (m[1] ?? m[2])!,
      label: m[3]!,
      spoken: m[2] !== undefined,
      navigation: false,
    }));
    // What the far end said that is no menu (its greetings) names the company called.
    const heard = messages
      .filter((m) => m.role === 'user')
      .map((m) => String(m.content).replace(/^\[automated voice\] /, ''))
      .filter((text) => !isMenu(text));
    const choice = chooseOption({ options, offersRepeat: false }, task, { ignore: companyWords(heard.join(' ')) });
    return { toolCalls: [{ name: 'choose_menu_option', arguments: { option: choice?.option.key ?? 'none' } }] };
  }
  const heard = messages.filter((m) => m.role === 'user').length;
  const last = String(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
  if (/\bbye\b/i.test(last) || messages.filter((m) => m.role === 'assistant').length >= 2)
    return { text: 'Thank you for your help. Goodbye!', toolCalls: [{ name: 'end_call' }] };
  return { text: heard === 0 ? 'Hello!' : `Hi, I'm calling to ${task.charAt(0).toLowerCase()}${task.slice(1)}` };
}
