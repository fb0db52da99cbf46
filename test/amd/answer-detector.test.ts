import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AnswerDetector, answeredByOf, isBeep, utteranceKind, type Answerer } from '../../src/amd/answer-detector.js';
import { endOfTurnMs } from '../../src/media/turn-detector.js';
import type { LegEvent } from '../../src/carriers/types.js';

const ANSWERED = new Date('2026-03-04T17:00:00.000Z');
const at = (ms: number): Date => new Date(ANSWERED.getTime() + ms);

/** The far end begins speaking `ms` after the answer. */
const speechStart = (ms: number): LegEvent => ({ type: 'speech_start', at: at(ms) });
/** An utterance spoken from `startMs` for `durationMs` (the event arrives when it ends). */
const speech = (text: string, startMs: number, durationMs: number): LegEvent => ({
  type: 'speech',
  text,
  at: at(startMs + durationMs),
  durationMs,
});
const tone = (ms: number, frequencyHz: number, durationMs: number): LegEvent => ({
  type: 'tone',
  at: at(ms),
  frequencyHz,
  durationMs,
});

/** Feeds events in order; returns what each returned. */
function feed(detector: AnswerDetector, events: LegEvent[]): (Answerer | undefined)[] {
  return events.map((e) => detector.observe(e));
}

/** An utterance with its speech_start before it, as carriers deliver them. */
const utter = (text: string, startMs: number, durationMs: number): LegEvent[] => [
  speechStart(startMs),
  speech(text, startMs, durationMs),
];

describe('answer detector: a beep is a voicemail', () => {
  it('a 1000 Hz, 500 ms tone after a greeting decides voicemail at once', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.equal(d.observe(tone(4200, 1000, 500)), 'voicemail');
    assert.equal(d.result, 'voicemail');
  });

  it('a tone outside the beep band decides nothing', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.equal(d.observe(tone(1000, 100, 500)), undefined);
    assert.equal(d.observe(tone(1200, 1000, 5000)), undefined);
    assert.equal(d.result, undefined);
  });

  it('a DTMF key or a frame of audio decides nothing', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.equal(d.observe({ type: 'dtmf', at: at(500), digit: '1' }), undefined);
    assert.equal(d.observe({ type: 'audio', at: at(520), payload: Buffer.alloc(160) }), undefined);
    assert.equal(d.result, undefined);
  });
});

describe('answer detector: the words of one utterance', () => {
  const rows: [string, string, Answerer][] = [
    ['the sandbox IVR menu', 'Press 1 for sales, 2 for support, 0 for the operator.', 'ivr'],
    ['"For X, press N"', 'For billing, press 2.', 'ivr'],
    ['"press one" in words', 'To continue in English, press one.', 'ivr'],
    ['a main menu', 'Returning to the main menu.', 'ivr'],
    ['dial your extension', "If you know your party's extension, dial the extension now.", 'ivr'],
    [
      'the sandbox screener',
      'The person you are calling is using a screening service. Please say your name and why you are calling.',
      'screener',
    ],
    ['a short screener prompt', 'Please state your name.', 'screener'],
    [
      'a screening assistant asking who and why',
      'This number uses a call screening assistant. Please tell me who you are and why you are calling.',
      'screener',
    ],
    ['a screened call', 'This call is being screened. Who is calling, and what is this regarding?', 'screener'],
    [
      "a phone's screener asking for a recorded name",
      "Hi, if you record your name and reason for calling, I'll see if this person is available.",
      'screener',
    ],
    [
      'an assistant asking for a name and a reason',
      "Hello, I'm an assistant for the person you're calling. What's your name and why are you calling?",
      'screener',
    ],
    ['the sandbox voicemail greeting', "Hi, you've reached Sam. Please leave a message after the tone.", 'voicemail'],
    [
      'the sandbox voicemail without beep',
      'You have reached the voicemail of Alex Morgan. Please leave a message.',
      'voicemail',
    ],
    [
      'a voicemail asking for a name and number',
      "Hi, you've got Terrence. I'm probably out fishing, so leave your name and number and I'll call you back.",
      'voicemail',
    ],
    ['"mailbox"', 'The mailbox is full.', 'voicemail'],
    ['a number out of service', 'The number you have dialed is not in service.', 'voicemail'],
    [
      "a voicemail's question after its unmistakable words",
      "Hi, you've reached Sam. Leave a message after the tone, okay?",
      'voicemail',
    ],
  ];
  for (const [what, text, kind] of rows) {
    it(`${what} decides ${kind}, even when short`, () => {
      const d = new AnswerDetector(ANSWERED);
      assert.equal(utteranceKind(text), kind);
      const results = feed(d, utter(text, 200, 1500));
      assert.deepEqual(results, [undefined, kind]);
      assert.equal(d.result, kind);
    });
  }

  // A speech menu asks for the reason for the call too: only a name, or screening, makes a screener.
  for (const text of [
    'Hello?',
    'Hi, this is Dana.',
    'Yes, speaking.',
    'Please tell me the reason for your call.',
    'Bella Napoli, we close at ten, can I take your order?',
    'Hello, Westbrook Veterinary Clinic, this is Alicia.',
    // A receptionist's opening says what a recording says, and more.
    "You've reached Acme support, this is Tom, how can I help you?",
    "Thanks for calling Acme, you've reached the service desk, how may I help?",
    "Smith residence. Mary's not available right now. Can I take a message",
    'Hello, you have reached the help desk, my name is Omar.',
  ]) {
    it(`${JSON.stringify(text)} is not classified by its words`, () => assert.equal(utteranceKind(text), undefined));
  }
});

/**
 * Words a recording says that a person may say too ("I am not available right now.", "You have
 * reached Officer Diaz."): in a short utterance that stops and waits they never hang up on anyone.
 */
describe("answer detector: a machine's words a person may say too", () => {
  const rows: [string, string, Answerer][] = [
    ['"not available"', 'I am not available right now.', 'voicemail'],
    ['"can\'t take your call"', "Sorry I can't take your call.", 'voicemail'],
    [
      "an office's closed message",
      'Thank you for calling Northgate Dental. Our office is currently closed. Our hours are Monday to Friday.',
      'voicemail',
    ],
    [
      'a closed message in contractions',
      "Thanks for calling Bright Smile Orthodontics. We're closed for the holiday and will reopen on Monday at eight.",
      'voicemail',
    ],
    [
      "a business's hours",
      'Thanks for calling Bella Napoli. Our opening hours are noon to ten, every day.',
      'voicemail',
    ],
    ['an emergency notice', 'If this is a medical emergency, please go to the nearest emergency room.', 'voicemail'],
    [
      'a greeting away from the desk',
      "Hi, it's Ana, I'm away from my desk until Monday, leave me a note and I'll get back to you.",
      'voicemail',
    ],
    ['a greeting out of the office', "This is Dave, I'm out of the office until Tuesday.", 'voicemail'],
    [
      'a greeting away from the office',
      "Hello, this is Dr. Evans. I'm away from the office until the fifteenth.",
      'voicemail',
    ],
    [
      "a business's hours as a range",
      'Thank you for calling Cedar Point Insurance. Our office hours are Monday to Friday, nine to five.',
      'voicemail',
    ],
  ];
  for (const [what, text] of rows) {
    it(`${what}: a voicemail when the greeting goes on, at once when long, unknown after a pause`, () => {
      assert.equal(utteranceKind(text), 'voicemail');
      const goesOn = new AnswerDetector(ANSWERED);
      assert.deepEqual(feed(goesOn, utter(text, 200, 1500)), [undefined, undefined]);
      assert.deepEqual(feed(goesOn, utter('We will get back to you as soon as we can, thank you.', 2000, 3200)), [
        undefined,
        'voicemail',
      ]);
      const long = new AnswerDetector(ANSWERED);
      assert.deepEqual(feed(long, utter(text, 200, 3400)), [undefined, 'voicemail']);
      const waits = new AnswerDetector(ANSWERED);
      feed(waits, utter(text, 200, 1500));
      assert.equal(waits.confirmPause(), 'unknown');
      assert.equal(waits.observe(tone(3500, 1000, 400)), 'voicemail', 'a beep after it still makes it a voicemail');
    });
  }

  it('"Hello, you have reached Officer Diaz." and then a question is a person', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.deepEqual(feed(d, utter('Hello, you have reached Officer Diaz.', 300, 2200)), [undefined, undefined]);
    assert.deepEqual(feed(d, utter('Hello? Who is this?', 3700, 1000)), [undefined, 'human']);
  });

  it('two short utterances of such words are a voicemail', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Our office is closed.', 300, 1400));
    assert.deepEqual(feed(d, utter('Our hours are nine to five.', 2000, 1500)), [undefined, 'voicemail']);
  });

  it('with nothing more within the five seconds, or still under way then, it is unknown', () => {
    const quiet = new AnswerDetector(ANSWERED);
    feed(quiet, utter("Sorry I can't take your call.", 300, 1500));
    assert.equal(quiet.timeout(), 'unknown');
    const late = new AnswerDetector(ANSWERED);
    feed(late, [speechStart(3500)]);
    assert.equal(late.timeout(), undefined);
    assert.equal(late.observe(speech('I am not available right now.', 3500, 2000)), 'unknown');
  });

  it('on audio, the sound decides: its machine verdict agrees with the words, its person verdict overrules them', () => {
    const machine = new AnswerDetector(ANSWERED, { acoustic: true });
    assert.deepEqual(feed(machine, utter('I am not available right now.', 200, 1500)), [undefined, undefined]);
    assert.equal(
      machine.observe({ type: 'answered_by', at: at(2500), answeredBy: 'voicemail', messageEnded: false }),
      'voicemail',
    );
    const person = new AnswerDetector(ANSWERED, { acoustic: true });
    feed(person, utter('You have reached Officer Diaz.', 200, 1500));
    assert.equal(
      person.observe({ type: 'answered_by', at: at(2500), answeredBy: 'human', messageEnded: false }),
      'human',
    );
  });
});

describe('answer detector: a short greeting and a pause is a person', () => {
  it('"Hello?" then confirmPause decides human', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.deepEqual(feed(d, utter('Hello?', 400, 600)), [undefined, undefined]);
    assert.equal(d.pending, true);
    assert.equal(d.confirmPause(), 'human');
    assert.equal(d.result, 'human');
    assert.equal(d.pending, false);
  });

  it('confirmPause without a pending greeting decides nothing', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.equal(d.confirmPause(), undefined);
    assert.equal(d.result, undefined);
  });

  it('speech_start right after a short greeting cancels the pending human', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Hello.', 300, 700));
    assert.equal(d.pending, true);
    assert.equal(d.observe(speechStart(1300)), undefined);
    assert.equal(d.pending, false);
    assert.equal(d.confirmPause(), undefined);
    assert.equal(d.result, undefined);
  });

  it('a short greeting, then a long recorded one, is a voicemail', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Hello.', 300, 700));
    const results = feed(d, utter('Thanks for calling the Morgan family, we will get back to you soon', 1200, 3600));
    assert.deepEqual(results, [undefined, 'voicemail']);
  });

  it('a short greeting of more than six words waits for more', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Good morning this is the front desk speaking', 300, 1800));
    assert.equal(d.pending, false);
    assert.equal(d.confirmPause(), undefined);
  });

  it('a greeting between 2 and 3 s is neither short nor long: it waits', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.deepEqual(feed(d, utter('Good afternoon', 300, 2500)), [undefined, undefined]);
    assert.equal(d.pending, false);
  });
});

describe('answer detector: one long greeting (over 3 s) is a machine unless it opens like a person', () => {
  // 'waits': not a person's opening; its next words decide (here: more words, a voicemail).
  const rows: [string, string, Answerer | 'waits'][] = [
    ['"Hello? ..." opening', "Hello? Yes, listen, I'm driving right now so make it quick", 'human'],
    ['a question before any full stop', 'Who on earth is calling me at this hour of the morning?', 'human'],
    ['"Hi ... ?" opening', 'Hi, sorry, I was in the garden, who is it?', 'human'],
    ["a business's answer naming who speaks", 'Main Street Motors, service department, this is Kevin.', 'human'],
    ['"NAME speaking"', 'Good morning, Sullivan and Burke Law, Frank speaking.', 'human'],
    ['...asking the caller to hold', 'Pinecrest Dental, this is Marcus, one moment please.', 'human'],
    ['...or to hold on', 'Harbor Marine, Luis here, hold on a second.', 'human'],
    ['"NAME here"', 'Riverside Plumbing, good morning, Dana here.', 'human'],
    ['"you\'ve got NAME"', "Johnson and Reyes Accounting, good morning, you've got Tom.", 'human'],
    [
      'a recording that greets with a name first',
      'Hey! You got Fiona. Say something nice when you call back.',
      'waits',
    ],
    ['an offer of help', 'Thank you for calling City Dry Cleaners, this is Mei, how can I help.', 'human'],
    ['a recorded greeting naming its owner first', 'This is Kevin, I will be back in the office on Monday.', 'waits'],
  ];
  for (const [what, text, kind] of rows) {
    it(`${what} (3.5 s) -> ${kind}`, () => {
      const d = new AnswerDetector(ANSWERED);
      assert.deepEqual(feed(d, utter(text, 200, 3500)), [undefined, kind === 'waits' ? undefined : kind]);
      if (kind === 'waits') assert.equal(d.observe(speech('Bye for now.', 4000, 800)), 'voicemail');
    });
  }

  it('a long greeting whose words name nothing waits for the next words: more words make a voicemail', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.deepEqual(feed(d, utter('Thanks for calling the Morgan family, we will get back to you soon', 200, 3500)), [
      undefined,
      undefined,
    ]);
    assert.equal(d.observe(speech('Bye for now.', 4000, 800)), 'voicemail');
  });

  it('...and none within the five seconds leave it unknown: a person may read a business name at length', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Good morning, thank you for calling Harper and Associates Law Offices', 200, 3500));
    assert.equal(d.timeout(), 'unknown');
  });

  it('exactly 3 s is not yet long', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.deepEqual(feed(d, utter('Thanks for calling the Morgan family', 200, 3000)), [undefined, undefined]);
  });
});

describe('answer detector: the five-second window', () => {
  it('nothing heard in five seconds: timeout() decides unknown', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.equal(d.timeout(), 'unknown');
    assert.equal(d.result, 'unknown');
  });

  it('a short greeting whose pause was not yet confirmed: timeout() decides human', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Hello?', 4000, 500));
    assert.equal(d.timeout(), 'human');
  });

  it('speech heard but undecided (a 2.5 s greeting): timeout() decides human', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Good afternoon', 300, 2500));
    assert.equal(d.timeout(), 'human');
  });

  it('speech still going on at five seconds: deferred, then a short utterance decides human', () => {
    const d = new AnswerDetector(ANSWERED);
    d.observe(speechStart(4500));
    assert.equal(d.timeout(), undefined);
    assert.equal(d.result, undefined);
    assert.equal(d.observe(speech('Hello, who is it?', 4500, 1500)), 'human');
  });

  it('speech still going on at five seconds: deferred, then a long greeting naming nothing is unknown', () => {
    const d = new AnswerDetector(ANSWERED);
    d.observe(speechStart(4000));
    assert.equal(d.timeout(), undefined);
    assert.equal(
      d.observe(speech('Thanks for calling the Morgan family, we will be back soon', 4000, 4000)),
      'unknown',
    );
    assert.equal(d.observe(tone(8500, 1000, 500)), 'voicemail', 'its beep still tells');
  });

  it('speech still going on at five seconds: deferred, then machine words decide voicemail', () => {
    const d = new AnswerDetector(ANSWERED);
    d.observe(speechStart(4800));
    d.timeout();
    assert.equal(d.observe(speech('Please leave a message.', 4800, 1500)), 'voicemail');
  });

  it('a deferred window is decided by the utterance that was going on at five seconds, whatever its length', () => {
    const d = new AnswerDetector(ANSWERED);
    d.observe(speechStart(4500));
    assert.equal(d.timeout(), undefined);
    d.observe(speech('Good afternoon to you', 4500, 2500));
    assert.notEqual(d.result, undefined, 'the utterance in progress at five seconds decides');
    d.observe(speechStart(30_000));
    d.observe(speech('So let me tell you about the trouble we had with the last delivery', 30_000, 4000));
    assert.notEqual(d.result, 'voicemail', 'speech 30 s into the call does not reclassify a person');
  });

  it('speech that starts after the window, without a deferral, is not judged', () => {
    const d = new AnswerDetector(ANSWERED);
    assert.deepEqual(feed(d, utter('Thanks for calling the Morgan family, we will be back soon', 5500, 3500)), [
      undefined,
      undefined,
    ]);
    assert.equal(d.result, undefined);
  });
});

describe('answer detector: decides once', () => {
  it('after a decision, later events, confirmPause and timeout return nothing and the result stays', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Hello?', 300, 500));
    assert.equal(d.confirmPause(), 'human');
    assert.equal(d.observe(tone(14_000, 1000, 500)), undefined, 'a beep twelve seconds on is the conversation');
    assert.deepEqual(feed(d, utter('Please leave a message.', 15_000, 1200)), [undefined, undefined]);
    assert.equal(d.timeout(), undefined);
    assert.equal(d.confirmPause(), undefined);
    assert.equal(d.result, 'human');
  });

  it('"Hello!", a pause, then a beep or a voicemail\'s words: the person was a recording', () => {
    const beep = new AnswerDetector(ANSWERED);
    feed(beep, utter('Hello!', 300, 500));
    assert.equal(beep.confirmPause(), 'human');
    assert.equal(beep.observe(tone(3000, 1000, 500)), 'voicemail');
    const words = new AnswerDetector(ANSWERED);
    feed(words, utter('Hello!', 300, 500));
    assert.equal(words.confirmPause(), 'human');
    assert.deepEqual(feed(words, utter('Ha, got you. Leave me a message.', 2000, 1800)), [undefined, 'voicemail']);
  });

  it('a greeting still under way at five seconds, judged a person when it ends, is revised by a beep right after', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Hey, this is Jen.', 0, 1700));
    assert.deepEqual(feed(d, [speechStart(2600)]), [undefined]);
    assert.equal(d.timeout(), undefined, 'speech under way at five seconds waits for its end');
    assert.equal(d.observe(speech('Text me instead, I never check these.', 2600, 2800)), 'human');
    assert.equal(d.observe(tone(5700, 1800, 250)), 'voicemail');
  });

  it('a long beep counts from its start: one that starts within twelve seconds of the verdict revises it', () => {
    // "Hello?" ends at 0.8 s, the person's verdict; a beep from 12.5 s to 14 s started 11.7 s on.
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter('Hello?', 300, 500));
    assert.equal(d.confirmPause(), 'human');
    assert.equal(d.observe(tone(14_000, 1000, 1500)), 'voicemail');
  });

  it('a beep after a voicemail greeting already decided changes nothing', () => {
    const d = new AnswerDetector(ANSWERED);
    feed(d, utter("Hi, you've reached Sam. Please leave a message after the tone.", 100, 3800));
    assert.equal(d.observe(tone(4000, 1000, 500)), undefined);
    assert.equal(d.result, 'voicemail');
  });
});

describe('answeredByOf: the seed 2.3 answered_by of each detected answerer', () => {
  const rows: [Answerer | undefined, 'human' | 'voicemail' | 'unknown'][] = [
    ['human', 'human'],
    ['screener', 'human'],
    ['voicemail', 'voicemail'],
    ['ivr', 'unknown'],
    ['unknown', 'unknown'],
    [undefined, 'unknown'],
  ];
  for (const [answer, answeredBy] of rows) {
    it(`${String(answer)} -> ${answeredBy}`, () => assert.equal(answeredByOf(answer), answeredBy));
  }
});

describe('isBeep: a single tone of 300-3400 Hz lasting 100-2000 ms', () => {
  const rows: [number, number, boolean][] = [
    [1000, 500, true],
    [300, 500, true],
    [299, 500, false],
    [3400, 500, true],
    [3401, 500, false],
    [1000, 100, true],
    [1000, 99, false],
    [1000, 2000, true],
    [1000, 2001, false],
    [60, 3000, false],
  ];
  for (const [frequencyHz, durationMs, beep] of rows) {
    it(`${frequencyHz} Hz for ${durationMs} ms is ${beep ? '' : 'not '}a beep`, () =>
      assert.equal(isBeep({ frequencyHz, durationMs }), beep));
  }
});

describe('endOfTurnMs: the wait after the other side stops, from interruption_threshold', () => {
  const rows: [number, number][] = [
    [0, 100],
    [10, 100],
    [25, 100],
    [50, 200],
    [100, 400],
    [200, 800],
    [500, 2000],
    [10_000, 2000],
  ];
  for (const [threshold, ms] of rows) {
    it(`threshold ${threshold} -> ${ms} ms`, () => assert.equal(endOfTurnMs(threshold), ms));
  }

  it('stays within 100..2000 ms and never shrinks as the threshold grows (lower = faster, seed 2.1)', () => {
    let previous = -Infinity;
    for (let threshold = -50; threshold <= 1000; threshold += 5) {
      const ms = endOfTurnMs(threshold);
      assert.ok(ms >= 100 && ms <= 2000, `threshold ${threshold}: ${ms}`);
      assert.ok(ms >= previous, `threshold ${threshold}: ${ms} < ${previous}`);
      previous = ms;
    }
  });

  it('the recommended range 50-200 is strictly increasing', () => {
    assert.ok(endOfTurnMs(50) < endOfTurnMs(100) && endOfTurnMs(100) < endOfTurnMs(200));
  });
});

describe('answer detector: a menu corrects an early "human"', () => {
  it('"Thank you for calling" judged a person, then a menu within seconds: ivr', () => {
    const d = new AnswerDetector(ANSWERED);
    d.observe(speechStart(500));
    d.observe(speech('Thank you for calling Acme.', 500, 1500));
    assert.equal(d.confirmPause(), 'human');
    assert.equal(d.observe(speech('Press 1 for sales, 2 for support.', 3500, 2500)), 'ivr');
    assert.equal(d.result, 'ivr');
  });

  it('a menu long after the start does not change the answer', () => {
    const d = new AnswerDetector(ANSWERED);
    d.observe(speechStart(500));
    d.observe(speech('Hello?', 500, 600));
    assert.equal(d.confirmPause(), 'human');
    assert.equal(d.observe(speech('Press 1 for sales.', 30_000, 2000)), undefined);
    assert.equal(d.result, 'human');
  });
});

describe('answer detector: inbound calls', () => {
  it('detects nothing on a call that came to us: a caller is never taken for a voicemail', () => {
    const d = new AnswerDetector(ANSWERED, { acoustic: true, off: true });
    const events: LegEvent[] = [
      { type: 'answered_by', at: at(4000), answeredBy: 'voicemail', messageEnded: false },
      ...utter('Hello, I would like to know your opening hours please, leave a message after the tone.', 300, 4500),
      tone(5200, 1000, 500),
    ];
    assert.deepEqual(
      feed(d, events),
      events.map(() => undefined),
    );
    assert.equal(d.timeout(), undefined);
    assert.equal(d.confirmPause(), undefined);
    assert.equal(d.result, undefined);
  });
});

describe("answer detector: the language model's reading, under the cost rule", () => {
  /** A receptionist's greeting that names nobody and asks nothing, that the audio leaned machine on. */
  function businessGreeting(): AnswerDetector {
    const d = new AnswerDetector(ANSWERED, { acoustic: true });
    d.observe(speechStart(300));
    d.observe({ type: 'answered_by', at: at(2500), answeredBy: 'voicemail', messageEnded: false });
    assert.equal(d.observe(speech('Good morning, Acme Dental, front desk.', 300, 2600)), undefined);
    return d;
  }

  it('one that names who is on the line is a person by its words alone', () => {
    const d = new AnswerDetector(ANSWERED, { acoustic: true });
    d.observe(speechStart(300));
    d.observe({ type: 'answered_by', at: at(2500), answeredBy: 'voicemail', messageEnded: false });
    assert.equal(d.observe(speech('Good morning, Acme Dental, Maria speaking.', 300, 2600)), 'human');
  });

  it("a person's business greeting the audio leaned machine on: a person when the model says so", () => {
    const d = businessGreeting();
    assert.equal(d.modelSaid('human', at(3600)), 'human');
    assert.equal(d.timeout(), undefined);
    assert.equal(d.result, 'human');
    assert.match(d.modelEvidence ?? '', /language model: a person, over the audio leaning to a machine/);
  });

  it('without the model the same greeting stays unknown (the agent speaks, nobody hangs up)', () => {
    const d = businessGreeting();
    assert.equal(d.timeout(), 'unknown');
  });

  it("a machine by the model and the audio's lean together", () => {
    const d = businessGreeting();
    assert.equal(d.modelSaid('voicemail', at(3600)), 'voicemail');
    assert.match(d.modelEvidence ?? '', /audio's lean to a machine/);
  });

  /** The audio heard a person: a short greeting that paused. */
  function pausedGreeting(): AnswerDetector {
    const d = new AnswerDetector(ANSWERED, { acoustic: true });
    d.observe(speechStart(300));
    assert.equal(d.observe(speech('Hi, this is Mark.', 300, 1200)), undefined);
    assert.equal(d.observe({ type: 'answered_by', at: at(2000), answeredBy: 'human', messageEnded: false }), 'human');
    return d;
  }

  it('the model alone never makes a machine of what the audio heard as a person', () => {
    const d = pausedGreeting();
    assert.equal(d.modelSaid('voicemail', at(2800)), undefined);
    assert.equal(d.modelSaid('ivr', at(2900)), undefined);
    assert.equal(d.observe(speech('Talk to you soon.', 5500, 1200)), undefined);
    assert.equal(d.result, 'human');
  });

  it("a voicemail greeting without a beep: voicemail once the model's reading has a machine's words beside it", () => {
    const d = pausedGreeting();
    assert.equal(d.modelSaid('voicemail', at(2800)), undefined);
    assert.equal(d.observe(speech("Sorry I can't get to the phone right now.", 5500, 2200)), 'voicemail');
    assert.match(d.modelEvidence ?? '', /language model \(voicemail\) with a machine's words/);
  });

  it("a machine's words long after the greeting are the conversation's: the model's voicemail stays unheeded", () => {
    // A person by the words of a greeting the audio leaned machine on.
    const d = new AnswerDetector(ANSWERED, { acoustic: true });
    d.observe(speechStart(300));
    d.observe({ type: 'answered_by', at: at(2500), answeredBy: 'voicemail', messageEnded: false });
    assert.equal(d.observe(speech('Good morning, Acme Dental, how can I help you?', 300, 2600)), 'human');
    assert.equal(d.modelSaid('voicemail', at(3600)), undefined);
    assert.equal(d.observe(speech("Tuesday I'm not available, sorry.", 20_000, 2000)), undefined);
    assert.equal(d.result, 'human');
  });

  it("the same words without the model's reading leave the person a person", () => {
    const d = pausedGreeting();
    assert.equal(d.observe(speech("Sorry I can't get to the phone right now.", 5500, 2200)), undefined);
    assert.equal(d.result, 'human');
  });

  it('a person confirmed by the model: recorded, unchanged', () => {
    const d = pausedGreeting();
    assert.equal(d.modelSaid('human', at(2800)), undefined);
    assert.equal(d.result, 'human');
    assert.match(d.modelEvidence ?? '', /audio and the language model: a person/);
  });

  it("a machine's verdict is settled: the model's reading changes nothing", () => {
    const d = new AnswerDetector(ANSWERED, { acoustic: true });
    assert.equal(d.observe(tone(2000, 1000, 500)), 'voicemail');
    assert.equal(d.openAt(at(2100)), false);
    assert.equal(d.modelSaid('human', at(2500)), undefined);
    assert.equal(d.result, 'voicemail');
  });
});
