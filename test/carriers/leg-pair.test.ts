import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createLegPair, speakingTimeMs, DEFAULT_TIMING } from '../../src/carriers/sandbox/leg-pair.js';
import type { LegEvent } from '../../src/carriers/types.js';
import { ScriptedAgent, assertBetween, clockMs } from './scripted-agent.js';

const SCALE = 50;

describe('leg pair: speech', () => {
  it('speaking time is words at 165 a minute plus 300 ms', () => {
    assert.equal(speakingTimeMs('one two three four five six seven eight nine ten eleven'), 4300);
    assert.equal(speakingTimeMs('   '), 0);
    assert.equal(DEFAULT_TIMING.msPerWord, 60_000 / 165);
  });

  it('the far end hears speech_start at once and the speech after the speaking time', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const far = new ScriptedAgent(b, clock);
    const text = 'one two three four five six seven eight nine ten eleven';
    const startedAt = clockMs(clock);
    const result = await a.speak(text);
    const spokeFor = clockMs(clock) - startedAt;
    assert.deepEqual(result, { played: text, interrupted: false });
    assertBetween(spokeFor, 4300, 4300, 'speaking time');
    const start = await far.next('speech_start');
    assertBetween(start.at.getTime() - startedAt, 0, 0, 'speech_start delay');
    const speech = await far.next('speech');
    assert.equal(speech.text, text);
    assert.equal(speech.durationMs, 4300);
    assert.deepEqual(
      far.events.map((e) => e.type),
      ['speech_start', 'speech'],
    );
  });

  it('delivers events asynchronously, in order, and keeps them until someone listens', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const seen: LegEvent['type'][] = [];
    await a.speak('hello there');
    await a.sendDtmf('5');
    // Nobody listened yet: nothing is lost.
    b.on((event) => event.type !== 'speech_partial' && seen.push(event.type));
    assert.deepEqual(seen, []);
    await Promise.resolve();
    assert.deepEqual(seen, ['speech_start', 'speech', 'dtmf']);

    const late: string[] = [];
    const { a: a2, b: b2 } = createLegPair(clock);
    b2.on((event) => late.push(event.type));
    void a2.speak('hi');
    assert.deepEqual(late, [], 'not delivered inside the sender call');
    await new Promise(setImmediate);
    assert.deepEqual(late, ['speech_start']);
    await a2.hangup();
  });

  it('sends an interim transcript after each word but the last, as streaming recognition does', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const far = new ScriptedAgent(b, clock);
    await a.speak('please hold the line');
    assert.deepEqual(far.partials, ['please', 'please hold', 'please hold the']);
    assert.deepEqual(far.heard, ['please hold the line']);
  });

  it('utterances of one end play one after the other', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const far = new ScriptedAgent(b, clock);
    await Promise.all([a.speak('first words here'), a.speak('second')]);
    assert.deepEqual(far.heard, ['first words here', 'second']);
    assert.deepEqual(
      far.events.map((e) => e.type),
      ['speech_start', 'speech', 'speech_start', 'speech'],
    );
  });

  it('an aborted speak resolves early with the words played so far, which is all the far end hears', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const far = new ScriptedAgent(b, clock);
    const text = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    const full = speakingTimeMs(text);
    const barge = new AbortController();
    clock.setTimer(() => barge.abort(), full / 2);
    const startedAt = clockMs(clock);
    const result = await a.speak(text, { signal: barge.signal });
    assertBetween(clockMs(clock) - startedAt, full / 2, full / 2, 'time to the cut');
    assert.equal(result.interrupted, true);
    assert.ok(text.startsWith(result.played), 'played is the start of the text');
    const count = result.played.split(' ').length;
    // The cut comes at half time or (on a loaded machine) later, never at the end.
    assert.ok(count >= 18 && count < 40, `about half the words or more, got ${count}`);
    const speech = await far.next('speech');
    assert.equal(speech.text, result.played);
    assert.ok(speech.durationMs < full);

    const already = new AbortController();
    already.abort();
    assert.deepEqual(await a.speak('never said', { signal: already.signal }), { played: '', interrupted: true });
  });
});

describe('leg pair: keys and tones', () => {
  it('DTMF digits arrive one by one, in order, about 100 ms each, w pausing 500 ms', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const far = new ScriptedAgent(b, clock);
    const startedAt = clockMs(clock);
    await a.sendDtmf('12w#*9');
    // Real timers wait at least 1 ms, i.e. 200 ms of clock time per digit at this scale.
    assertBetween(clockMs(clock) - startedAt, 5 * 100 + 500, 5 * 200 + 500, 'keying time');
    const digits = far.events.map((e) => (e.type === 'dtmf' ? e.digit : e.type));
    assert.deepEqual(digits, ['1', '2', '#', '*', '9']);
    const times = far.events.map((e) => e.at.getTime());
    assert.ok(times.every((t, i) => i === 0 || t >= (times[i - 1] as number)));
  });

  it('rejects characters that are not DTMF', async () => {
    const { a } = createLegPair(new ScaledClock(SCALE));
    await assert.rejects(a.sendDtmf('12x'), /invalid DTMF/);
  });

  it('a tone reaches the far end with its frequency and length when it ends', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const far = new ScriptedAgent(b, clock);
    await a.playTone(1000, 500);
    const tone = await far.next('tone');
    assert.equal(tone.frequencyHz, 1000);
    assert.equal(tone.durationMs, 500);
  });
});

describe('leg pair: hangup and transfer', () => {
  it('hangup: the other end hears one remote hangup, the hanging-up end nothing more; idempotent', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const near_ = new ScriptedAgent(a, clock);
    const far = new ScriptedAgent(b, clock);
    const speaking = a.speak('this sentence is long enough to be cut off by the hangup of the other side');
    const farSpeaking = b.speak('and this one too is going to be cut off in the middle somewhere');
    await clock.sleep(1000);
    await a.hangup();
    await a.hangup();
    await b.hangup();
    const [mine, theirs] = await Promise.all([speaking, farSpeaking]);
    assert.equal(mine.interrupted, true);
    assert.equal(theirs.interrupted, true);
    await clock.sleep(6000);
    assert.deepEqual(
      far.events.map((e) => e.type),
      ['speech_start', 'hangup'],
    );
    const hangup = far.events.at(-1);
    assert.equal(hangup?.type === 'hangup' && hangup.reason, 'remote');
    assert.deepEqual(
      near_.events.map((e) => e.type),
      ['speech_start'],
      'the end that hung up hears nothing after its hangup',
    );
    assert.equal(a.finished && b.finished, true);
    assert.deepEqual(await a.speak('after'), { played: '', interrupted: true });
    await a.sendDtmf('123');
    assert.deepEqual(await b.transfer('+14155550110'), { ok: false, reason: 'The call has already ended' });
  });

  it('drop: both ends hear a network hangup', async () => {
    const clock = new ScaledClock(SCALE);
    const { a, b } = createLegPair(clock);
    const one = new ScriptedAgent(a, clock);
    const two = new ScriptedAgent(b, clock);
    a.drop();
    assert.equal((await one.next('hangup')).reason, 'network');
    assert.equal((await two.next('hangup')).reason, 'network');
  });

  it('transfer goes to the handler; on success the transferring end is done and silent', async () => {
    const clock = new ScaledClock(SCALE);
    const plain = createLegPair(clock);
    assert.equal((await plain.a.transfer('+14155550110')).ok, false);

    const asked: string[] = [];
    const { a, b } = createLegPair(clock, {
      onTransfer: async (end, to) => {
        asked.push(`${end.label}->${to}`);
        end.far?.rebind('target');
        return { ok: true };
      },
    });
    const mine = new ScriptedAgent(a, clock);
    assert.deepEqual(await a.transfer('+14155550110'), { ok: true });
    assert.deepEqual(asked, ['A->+14155550110']);
    assert.equal(a.finished, true);
    assert.equal(b.finished, false, 'the far end now talks to the target');
    await b.speak('hello target');
    assert.deepEqual(mine.events, []);
  });
});
