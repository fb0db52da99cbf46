import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  chooseOption,
  entryDigits,
  isMenu,
  menuLineKind,
  parseMenu,
  repeatsMenu,
  stem,
  type MenuLineKind,
} from '../../src/domain/ivr-menu.js';

/** Options as `key=label` (spoken options as `"words"`), in the order heard. */
const options = (text: string): string[] =>
  parseMenu(text).options.map((o) => (o.spoken ? `"${o.key}"` : `${o.key}=${o.label}`));

describe('parseMenu: every common wording, options per key', () => {
  const table: [string, string, string[]][] = [
    // "press N for/to X"
    ['press N for X', 'Press 1 for sales.', ['1=sales']],
    [
      'press N for X with shortened follow-ups',
      'Press 1 for sales, 2 for support, 0 for the operator.',
      ['1=sales', '2=support', '0=operator'],
    ],
    ['press N to X', 'Press 2 to refill a prescription.', ['2=refill a prescription']],
    [
      'press N to X, press N to Y in one sentence',
      'Press 1 to pay your bill, press 2 to report an outage, or press 3 to start or stop service.',
      ['1=pay your bill', '2=report an outage', '3=start or stop service'],
    ],
    ['press N if X', 'Press 3 if you are a new patient.', ['3=new patient']],
    ['press N now for X', 'Press 4 now for pharmacy hours.', ['4=pharmacy hours']],
    [
      'press 0 at any time to speak with an operator',
      'You may press 0 at any time to speak with an operator.',
      ['0=speak with an operator'],
    ],
    ['press the number N', 'Please press the number 5 for claims.', ['5=claims']],
    ['"or N for Y" after "press N for X"', 'Press 1 for English or 2 for Spanish.', ['1=English', '2=Spanish']],
    // "for/to X, press N"
    [
      'for X, press N',
      'For sales, press 1. For support, press 2. For the operator, press 0.',
      ['1=sales', '2=support', '0=operator'],
    ],
    ['to X, press N', 'To refill a prescription, press 1.', ['1=refill a prescription']],
    ['to X, dial N', 'To speak with a nurse, dial 3.', ['3=speak with a nurse']],
    ['to X, enter N', 'To check your balance, enter 4.', ['4=check your balance']],
    ['for X press N (no comma)', 'For the pharmacy press 2.', ['2=pharmacy']],
    [
      'for X, press N, for Y, press M in one sentence',
      'For billing, press 1, for technical support, press 2.',
      ['1=billing', '2=technical support'],
    ],
    [
      'for X with commas inside, press N',
      'For questions about your bill, payments, or account balance, press 2.',
      ['2=questions about your bill, payments, or account balance'],
    ],
    [
      'if you are calling about X, press N',
      'If you are calling about a prescription refill, press 1.',
      ['1=prescription refill'],
    ],
    [
      "if you're calling to X, press N",
      "If you're calling to schedule an appointment, press 2.",
      ['2=schedule an appointment'],
    ],
    ["if you'd like to X, press N", "If you'd like to make a payment, press 3.", ['3=make a payment']],
    ['if you have a question about X, press N', 'If you have a question about your order, press 4.', ['4=order']],
    [
      'if you are a provider, press N',
      "If you are a physician's office calling, press 5.",
      ["5=physician's office calling"],
    ],
    // "X, press N"
    ['X, press N', 'Billing and payments, press 2.', ['2=Billing and payments']],
    ['X, press N with please', 'Pharmacy, please press 3.', ['3=Pharmacy']],
    // number words
    ['press one', 'Press one for appointments.', ['1=appointments']],
    ['for X, press two', 'For billing, press two.', ['2=billing']],
    [
      'press one ..., two ..., zero ...',
      'Press one for sales, two for service, or zero for the operator.',
      ['1=sales', '2=service', '0=operator'],
    ],
    ['press star', 'To repeat this menu, press star.', ['*=repeat this menu']],
    ['press the pound key', 'To return to the main menu, press the pound key.', ['#=return to the main menu']],
    ['press * and #', 'Press * to repeat, press # to go back.', ['*=repeat', '#=go back']],
    // say or press
    ['say or press N for X', 'Say or press 1 for billing.', ['1=billing']],
    ['say X or press N', 'Say billing or press 2.', ['2=billing']],
    // Spanish
    ['para X, oprima N', 'Para español, oprima 2.', ['2=español']],
    ['para X, marque N', 'Para hablar con un farmacéutico, marque 3.', ['3=hablar con un farmacéutico']],
    ['para X, pulse N', 'Para citas, pulse 1.', ['1=citas']],
    ['oprima N para X', 'Oprima 1 para facturación.', ['1=facturación']],
    ['oprima el número N', 'Para continuar en español, oprima el número nueve.', ['9=continuar en español']],
    ['oprima uno ... dos', 'Para recetas, oprima uno. Para citas, oprima dos.', ['1=recetas', '2=citas']],
    ['presione la tecla N', 'Para pagos, presione la tecla 4.', ['4=pagos']],
    // menus said one option per line, joined
    [
      'one option per sentence',
      'Thank you for calling Sunrise Pharmacy. To refill a prescription, press 1. For the status of a refill, press 2. To speak with a pharmacist, press 3. For store hours, press 4.',
      ['1=refill a prescription', '2=status of a refill', '3=speak with a pharmacist', '4=store hours'],
    ],
    ['a key said twice keeps its first wording', 'Press 1 for sales. Press 1 for sales.', ['1=sales']],
    [
      'a question names the key after it (added after the held-out run)',
      'Having trouble with your TV or internet service? Press 3.',
      ['3=Having trouble with your TV or internet service'],
    ],
    // speech menus
    ['say X, Y, or Z', 'Please say billing, pharmacy, or appointments.', ['"billing"', '"pharmacy"', '"appointments"']],
    [
      'you can say things like X or Y',
      "You can say things like 'check my balance' or 'report an outage'.",
      ['"check my balance"', '"report an outage"'],
    ],
    // not options
    ['no options', 'Please hold while we connect you.', []],
    ['emergency number is not a key', 'If this is a medical emergency, hang up and dial 911.', []],
    ['select one of the following is not a key', 'Please select one of the following options.', []],
    ['say your name is not a menu', 'Please say your name and why you are calling.', []],
  ];
  for (const [what, text, expected] of table) {
    it(`${what}: "${text}"`, () => assert.deepEqual(options(text), expected));
  }

  it('navigation options (repeat, main menu) are marked and say the menu was said in full', () => {
    const menu = parseMenu('For billing, press 1. To hear these options again, press 9.');
    assert.deepEqual(
      menu.options.map((o) => [o.key, o.navigation]),
      [
        ['1', false],
        ['9', true],
      ],
    );
    assert.equal(menu.offersRepeat, true);
    assert.equal(parseMenu('For billing, press 1.').offersRepeat, false);
    assert.equal(parseMenu('Press star to repeat this menu.').offersRepeat, true);
  });
});

describe('parseMenu: entry prompts', () => {
  const table: [string, { field: string; terminator: string } | undefined][] = [
    ['Please enter your account number followed by the pound key.', { field: 'account number', terminator: '#' }],
    ['Enter your 10-digit phone number, then press pound.', { field: 'phone number', terminator: '#' }],
    ['Please enter your member ID followed by the pound sign.', { field: 'member ID', terminator: '#' }],
    ['Enter your date of birth as eight digits.', { field: 'date of birth', terminator: '' }],
    ['Using your keypad, enter your five digit zip code.', { field: 'zip code', terminator: '' }],
    [
      'Please enter your prescription number, followed by the hash key.',
      { field: 'prescription number', terminator: '#' },
    ],
    [
      'Por favor, marque su número de cuenta seguido de la tecla numeral.',
      { field: 'número de cuenta', terminator: '#' },
    ],
    ['Press 1 for sales.', undefined],
    ['Please leave your name and number after the tone.', undefined],
  ];
  for (const [text, expected] of table) {
    it(`"${text}" -> ${expected ? `${expected.field} ${expected.terminator}` : 'no entry'}`, () =>
      assert.deepEqual(parseMenu(text).entry, expected));
  }

  it('an entry prompt with an option keeps both', () => {
    const menu = parseMenu('Enter your account number followed by the pound key, or press 0 for an agent.');
    assert.deepEqual(menu.entry, { field: 'account number', terminator: '#' });
    assert.deepEqual(
      menu.options.map((o) => `${o.key}=${o.label}`),
      ['0=agent'],
    );
  });

  const data = {
    account_number: '12-34-56',
    memberId: 'M 7788',
    dob: '1980-04-02',
    zip: 94110,
    prescription: 'RX 4417',
    name: 'Pat',
  };
  const digits: [string, string | undefined][] = [
    ['account number', '123456'],
    ['member ID', '7788'],
    ['date of birth', '19800402'],
    ['zip code', '94110'],
    ['prescription number', '4417'],
    ['policy number', undefined],
    ['name', undefined],
  ];
  for (const [field, expected] of digits) {
    it(`entryDigits: ${field} -> ${expected ?? 'none'}`, () =>
      assert.equal(entryDigits({ field, terminator: '#' }, data), expected));
  }
});

describe('isMenu and menuLineKind: a menu by its structure, in any language', () => {
  const menus: [string, boolean][] = [
    ['Press 1 for sales.', true],
    ['Para español, oprima dos.', true],
    ['Para hablar con la farmacia, oprima uno.', true],
    ['To refill a prescription, press 1.', true],
    ['Please enter your account number followed by the pound key.', true],
    ['Please say billing, pharmacy, or appointments.', true],
    ["If you know your party's extension, you may dial it at any time.", true],
    ['Hi, you have reached Sam. Please leave a message after the tone.', false],
    ['The person you are calling is using a screening service. Please say your name and why you are calling.', false],
    ['Hello? Who is this?', false],
    ['I would say yes or no, honestly.', false],
    ['Thank you for calling Sunrise Pharmacy.', false],
    ['Our office is closed. If this is an emergency, please hang up and dial nine one one.', false],
    ['If this is an emergency, please hang up and dial nine one one. For appointments, press 1.', true],
    ['Our office hours are Monday to Friday, nine to five. Please leave a message.', false],
    ['We are open 8 to 6, Monday through Saturday.', false],
    ['For sales, press 1, 2 to speak with a nurse, or 3 for billing.', true],
  ];
  for (const [text, expected] of menus) {
    it(`isMenu("${text}") = ${expected}`, () => assert.equal(isMenu(text), expected));
  }

  const kinds: [string, MenuLineKind][] = [
    ['For billing, press 2.', 'menu'],
    ['Please hold while we connect you.', 'hold'],
    ['All of our representatives are currently assisting other customers.', 'hold'],
    ['Your estimated wait time is three minutes.', 'hold'],
    ['Thank you for calling Northfield Power.', 'announcement'],
    ['Calls may be recorded for quality purposes.', 'announcement'],
    ['Sorry, that is not a valid option.', 'announcement'],
    ['You have reached the pharmacy.', 'announcement'],
    ['Pharmacy, this is Dana speaking. How can I help you?', 'person'],
    ['Thank you for holding, my name is Lee. How may I help you?', 'person'],
    ['Hello?', 'person'],
  ];
  for (const [text, expected] of kinds) {
    it(`menuLineKind("${text}") = ${expected}`, () => assert.equal(menuLineKind(text), expected));
  }

  it('repeatsMenu: a line that says an option heard already starts the menu over', () => {
    const heard = 'For sales, press 1. For support, press 2.';
    assert.equal(repeatsMenu(heard, 'For sales, press 1.'), true);
    assert.equal(repeatsMenu(heard, 'For billing, press 3.'), false);
  });
});

describe('chooseOption: by the task, once the menu is complete', () => {
  const stems: [string, string][] = [
    ['refills', 'refill'],
    ['refilling', 'refill'],
    ['payments', 'pay'],
    ['scheduling', stem('schedule')],
    ['appointments', stem('appointment')],
  ];
  for (const [word, expected] of stems) it(`stem("${word}") = "${expected}"`, () => assert.equal(stem(word), expected));

  const SANDBOX = 'Press 1 for sales, 2 for support, 0 for the operator.';
  const PHARMACY =
    'To refill a prescription, press 1. For the status of a refill, press 2. To speak with a pharmacist, press 3. For store hours, press 4.';
  const CLINIC =
    "To schedule, cancel, or change an appointment, press 1. For prescription refills, press 2. To speak with a nurse, press 3. For billing questions, press 4. If you are a physician's office or a pharmacy calling about a prescription, press 5.";
  const AIRLINE =
    'To book a new flight, press 1. To change or cancel an existing reservation, press 2. For baggage claims and lost luggage, press 3. For flight status, press 4. For all other inquiries, press 0.';
  const table: [string, string, string, string | undefined][] = [
    ['a task word names the department', SANDBOX, 'Call the support team about the broken router.', '2'],
    [
      'a synonym: the bill is billing',
      'Press 1 for billing, 2 for repairs.',
      'Ask about a charge on the March bill.',
      '1',
    ],
    [
      'an intent: a refill is the pharmacy',
      'For billing, press 1. For the pharmacy, press 2.',
      'Refill the prescription for Maria.',
      '2',
    ],
    ['stemming: refilling a prescription', PHARMACY, 'Ask about refilling the prescription for Maria Lopez.', '1'],
    ['status of a refill beats refill', PHARMACY, 'Check the status of the refill ordered Monday.', '2'],
    ['a provider option is a trap for a patient', CLINIC, 'Ask whether the prescription for Tom is ready.', '2'],
    ['appointments', CLINIC, "Reschedule Tom Baker's appointment to Thursday.", '1'],
    ['a word many options share tells little', AIRLINE, 'Report a suitcase that did not arrive on flight 212.', '3'],
    ['no fit: the operator', SANDBOX, 'Confirm the dental appointment.', '0'],
    ['no fit: all other inquiries', AIRLINE, 'Ask whether pets may travel in the cabin.', '0'],
    ['no fit: a representative', 'Press 1 for billing, 2 for a representative.', 'Confirm the appointment.', '2'],
    ['the operator only when nothing fits', 'Press 0 for an operator, press 1 for billing.', 'Pay the bill.', '1'],
    ['no fit and no operator: nothing', 'Press 4 for store hours, 5 for directions.', 'Ask about a refund.', undefined],
    [
      'never a navigation option',
      'For billing, press 1. To repeat these options, press 9.',
      'Repeat the order.',
      undefined,
    ],
    [
      'the call language picks a language menu',
      'For English, press 1. Para español, oprima 2.',
      'Report a lost card.',
      '1',
    ],
    ['the task names a department directly', 'For claims, press 1. For an agent, press 0.', 'Reach an agent.', '0'],
  ];
  for (const [what, menu, task, expected] of table) {
    it(`${what} -> ${expected ?? 'nothing'}`, () =>
      assert.equal(chooseOption(parseMenu(menu), task)?.option.key, expected));
  }

  it('a Spanish call picks the Spanish option of a language menu', () =>
    assert.equal(
      chooseOption(parseMenu('For English, press 1. Para español, oprima 2.'), 'Reportar una tarjeta.', {
        language: 'es',
      })?.option.key,
      '2',
    ));

  it('a speech menu gives the words to say', () => {
    const choice = chooseOption(
      parseMenu('Please say billing, technical support, or sales.'),
      'Get help: the internet is down.',
    );
    assert.deepEqual([choice?.option.key, choice?.option.spoken], ['technical support', true]);
  });
});
