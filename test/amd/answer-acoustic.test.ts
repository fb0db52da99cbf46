import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnswerDetector } from '../../src/amd/answer-detector.js';
import type { LegEvent } from '../../src/carriers/types.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);
const amd = (ms: number, answeredBy: 'human' | 'voicemail' | 'unknown', messageEnded = false): LegEvent => ({
  type: 'answered_by',
  at: at(ms),
  answeredBy,
  messageEnded,
});
const start = (ms: number): LegEvent => ({ type: 'speech_start', at: at(ms) });
const speech = (ms: number, text: string, durationMs: number): LegEvent => ({
  type: 'speech',
  at: at(ms),
  text,
  durationMs,
});

test("acoustic mode: the audio AMD decides; a machine's greeting waits for its words", () => {
  const person = new AnswerDetector(t0, { acoustic: true });
  person.observe(start(500));
  assert.equal(person.observe(speech(1000, 'Hello?', 500)), undefined, 'no timing rule of its own');
  assert.equal(person.timeout(), undefined, 'the five seconds are the audio detector’s');
  assert.equal(person.observe(amd(1700, 'human')), 'human');

  const beep = new AnswerDetector(t0, { acoustic: true });
  beep.observe(start(300));
  assert.equal(beep.observe(amd(900, 'voicemail', true)), 'voicemail', 'a beep decides at once');

  const ivr = new AnswerDetector(t0, { acoustic: true });
  ivr.observe(start(400));
  assert.equal(ivr.observe(amd(2000, 'voicemail')), undefined, 'machine while the greeting runs: wait for its words');
  assert.equal(ivr.observe(speech(5000, 'Press 1 for sales, 2 for support.', 4600)), 'ivr');

  const voicemail = new AnswerDetector(t0, { acoustic: true });
  voicemail.observe(start(400));
  voicemail.observe(amd(2000, 'voicemail'));
  assert.equal(voicemail.observe(speech(5000, 'Hi, this is Dana. Sorry I missed you.', 4600)), 'voicemail');

  const talker = new AnswerDetector(t0, { acoustic: true });
  talker.observe(start(400));
  talker.observe(amd(2000, 'voicemail'));
  assert.equal(talker.observe(speech(6000, 'Hello? Yes, hi, listen, I have been meaning to call.', 5600)), 'human');

  // A company's greeting with no telling words: the next utterance decides.
  const company = new AnswerDetector(t0, { acoustic: true });
  company.observe(start(400));
  company.observe(amd(1900, 'voicemail'));
  assert.equal(company.observe(speech(2300, 'Thank you for calling Acme.', 1900)), undefined, 'not yet a voicemail');
  company.observe(start(2800));
  assert.equal(company.observe(speech(4800, 'For sales, press 1. For support, press 2.', 2000)), 'ivr');

  const greeting = new AnswerDetector(t0, { acoustic: true });
  greeting.observe(start(400));
  greeting.observe(amd(1900, 'voicemail'));
  assert.equal(greeting.observe(speech(2300, 'Hi, this is Dana.', 1900)), undefined);
  greeting.observe(start(2800));
  assert.equal(greeting.observe(speech(4500, 'Sorry I missed you.', 1700)), 'voicemail', 'two utterances, no menu');

  const quiet = new AnswerDetector(t0, { acoustic: true });
  quiet.observe(start(400));
  quiet.observe(amd(1900, 'voicemail'));
  assert.equal(quiet.observe(speech(2300, 'Thank you for calling Acme.', 1900)), undefined);
  assert.equal(quiet.timeout(), 'unknown', 'nothing more within the five seconds: not known to be a voicemail');
  assert.equal(quiet.observe(speech(8000, 'Press 1 for sales, 2 for support.', 2500)), 'ivr', 'a late menu');

  const lateBeep = new AnswerDetector(t0, { acoustic: true });
  lateBeep.observe(start(400));
  lateBeep.observe(amd(1900, 'voicemail'));
  lateBeep.observe(speech(2300, 'Thank you for calling Acme.', 1900));
  assert.equal(lateBeep.timeout(), 'unknown');
  assert.equal(
    lateBeep.observe({ type: 'tone', at: at(7000), frequencyHz: 1000, durationMs: 500 }),
    'voicemail',
    'a beep after all',
  );
  assert.equal(lateBeep.observe(speech(9000, 'Press 1 for sales.', 1000)), undefined, 'a voicemail verdict is final');

  // The menu started before the five seconds ended: its words decide when it ends.
  const late = new AnswerDetector(t0, { acoustic: true });
  late.observe(start(400));
  late.observe(amd(1900, 'voicemail'));
  assert.equal(late.observe(speech(2300, 'Thank you for calling Acme.', 1900)), undefined);
  late.observe(start(4700));
  assert.equal(late.timeout(), undefined, 'words still coming at five seconds');
  assert.equal(late.observe(speech(7200, 'Press 1 for sales, 2 for support.', 2500)), 'ivr');

  // The machine verdict came between two utterances: the words still decide which machine it is.
  const screener = new AnswerDetector(t0, { acoustic: true });
  screener.observe(start(300));
  assert.equal(screener.observe(speech(1500, 'Hello.', 1000)), undefined);
  assert.equal(screener.observe(amd(2600, 'voicemail')), undefined, 'not a voicemail yet: its words decide');
  screener.observe(start(2800));
  assert.equal(
    screener.observe(speech(5200, 'This number uses a call screening assistant. Please tell me who you are.', 2300)),
    'screener',
  );

  const nobody = new AnswerDetector(t0, { acoustic: true });
  assert.equal(nobody.observe(amd(5000, 'unknown')), undefined);
  assert.equal(nobody.result, undefined);
});

test("acoustic mode: after the audio's `unknown`, a beep within twelve seconds makes a voicemail; a later one is the conversation's", () => {
  const tone = (ms: number): LegEvent => ({ type: 'tone', at: at(ms), frequencyHz: 1000, durationMs: 500 });
  // A greeting still under way at 8 s (read slowly), then its beep at 15 s.
  const long = new AnswerDetector(t0, { acoustic: true });
  assert.equal(long.observe(amd(8000, 'unknown')), undefined);
  assert.equal(long.observe(tone(15_000)), 'voicemail');
  // A person in a loud room the sound could not tell; a timer beeps in the room at 21 s.
  const room = new AnswerDetector(t0, { acoustic: true });
  assert.equal(room.observe(amd(8000, 'unknown')), undefined);
  assert.equal(room.observe(tone(21_000)), undefined);
  assert.equal(room.result, 'unknown');
  assert.equal(room.observe(speech(25_000, 'Please leave a message with my assistant.', 2000)), undefined);
});

test('text mode is unchanged: the timing rules decide', () => {
  const text = new AnswerDetector(t0);
  text.observe(start(500));
  assert.equal(
    text.observe(speech(6000, 'Hi, this is Dana. Sorry I missed you. Leave your number.', 4000)),
    'voicemail',
  );
});

test("acoustic mode: a voicemail's words after the audio said person make it a voicemail; a person's words never do", () => {
  // "Hi, it's Mark." and a pause: a person by the sound. Then the greeting goes on in a voicemail's words.
  const paused = new AnswerDetector(t0, { acoustic: true });
  paused.observe(start(300));
  assert.equal(paused.observe(speech(1500, "Hi, it's Mark.", 900)), undefined);
  assert.equal(paused.observe(amd(2300, 'human')), 'human');
  paused.observe(start(3000));
  assert.equal(paused.observe(speech(5400, 'Leave a message after the beep.', 2000)), 'voicemail');

  // A person who asks, or who says such words later, in the conversation: still a person.
  const asks = new AnswerDetector(t0, { acoustic: true });
  asks.observe(start(300));
  asks.observe(speech(1200, 'Hello?', 600));
  asks.observe(amd(1900, 'human'));
  assert.equal(asks.observe(speech(4000, 'Sorry, is this about the voicemail you left?', 1800)), undefined);
  assert.equal(asks.result, 'human');
  const later = new AnswerDetector(t0, { acoustic: true });
  later.observe(start(300));
  later.observe(speech(1200, 'Hello?', 600));
  later.observe(amd(1900, 'human'));
  assert.equal(later.observe(speech(9000, "I'm driving, I'll check my voicemail later.", 2000)), undefined);
  assert.equal(later.result, 'human');

  // Ordinary words after a person by the sound change nothing.
  const talks = new AnswerDetector(t0, { acoustic: true });
  talks.observe(start(300));
  talks.observe(speech(1200, 'Hello?', 600));
  talks.observe(amd(1900, 'human'));
  assert.equal(talks.observe(speech(4200, 'Yes, speaking.', 900)), undefined);
  assert.equal(talks.result, 'human');
});

test('acoustic mode: a person by the sound whose line then beeps is a voicemail (no person makes a steady tone)', () => {
  const late = new AnswerDetector(t0, { acoustic: true });
  late.observe(start(300));
  late.observe(speech(1800, "Hi, it's Mark.", 1300));
  late.observe(amd(2500, 'human'));
  late.observe(start(5600));
  assert.equal(late.observe({ type: 'tone', at: at(8400), frequencyHz: 2900, durationMs: 120 }), 'voicemail');

  // Outside the band, or starting more than twelve seconds after the verdict: the conversation's,
  // not the greeting's.
  const low = new AnswerDetector(t0, { acoustic: true });
  low.observe(amd(2500, 'human'));
  assert.equal(low.observe({ type: 'tone', at: at(4000), frequencyHz: 200, durationMs: 500 }), undefined);
  assert.equal(low.observe({ type: 'tone', at: at(15_100), frequencyHz: 1000, durationMs: 500 }), undefined);
  assert.equal(low.result, 'human');
});

test("acoustic mode: a machine verdict after words that opened as a person's (the agent's opener went out late): a person", () => {
  const receptionist = new AnswerDetector(t0, { acoustic: true });
  receptionist.observe(start(300));
  receptionist.observe(
    speech(5200, 'Good afternoon, Lakeside Family Practice, this is Joanna, how can I help you?', 4500),
  );
  assert.equal(receptionist.observe(amd(5600, 'voicemail')), 'human');
  const recording = new AnswerDetector(t0, { acoustic: true });
  recording.observe(start(300));
  recording.observe(speech(3200, 'Thank you for calling Acme.', 2500));
  assert.equal(recording.observe(amd(3600, 'voicemail')), undefined, 'words that named nothing: the next ones decide');
});
