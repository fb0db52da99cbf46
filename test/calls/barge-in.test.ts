import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isInterruption, mayEcho } from '../../src/calls/session.js';

describe('barge-in: what heard over the agent makes it stop', () => {
  const table: [string, number, boolean][] = [
    ['uh huh', 100, false],
    ['Uh huh, yes, go on', 100, false],
    ['okay', 100, false],
    ['mm hmm right', 100, false],
    ['Hello?', 100, false],
    ['wait a second', 100, true],
    ['no that is wrong', 100, true],
    ['sorry I', 50, true],
    ['sorry I', 100, false],
    ['stop stop stop stop stop', 200, false],
    ['hold on I need to tell you something', 200, true],
  ];
  for (const [partial, threshold, stops] of table) {
    it(`"${partial}" at interruption_threshold ${threshold}: ${stops ? 'interrupts' : 'does not interrupt'}`, () => {
      assert.equal(isInterruption(partial, threshold), stops);
    });
  }
});

describe("barge-in: the agent's own words coming back are not an interruption", () => {
  const saying = 'Hello, this is Openline calling about your order number four five six.';
  const table: [string, boolean][] = [
    ['Hello this is', false],
    ['calling about your order', false],
    ['order number four five six', false],
    ['wait this is wrong', true],
    ['your order is late', true],
    ['number six five four', true],
    ['order number four five six hello this is openline', false],
    ['order number four wait five six', true],
    // The interim words of a second pass of the echo come one at a time.
    ['Hello this Hello', false],
    ['Hello this your order', false],
    ['Hello this wait', true],
    ['number this is', true],
  ];
  for (const [partial, stops] of table) {
    it(`"${partial}" over "${saying}": ${stops ? 'interrupts' : 'its own voice'}`, () => {
      assert.equal(isInterruption(partial, 100, saying), stops);
    });
  }
  it('with the agent silent, the same words interrupt', () => {
    assert.equal(isInterruption('calling about your order', 100, ''), true);
  });
});

describe('barge-in: what of a cut utterance may still come back as its echo', () => {
  const text = 'Hello, this is Openline calling about your order number four five six.';
  it('cut before its first word was played: its first words went out all the same', () => {
    assert.equal(mayEcho(text, ''), 'Hello, this is');
    assert.equal(isInterruption('Hello this is', 100, mayEcho(text, '')), false);
  });
  it('cut after some words: those, and the few under way', () => {
    assert.equal(mayEcho(text, 'Hello, this is Openline'), 'Hello, this is Openline calling about your');
    assert.equal(isInterruption('order number four', 100, mayEcho(text, 'Hello, this is Openline')), true);
  });
  it('played whole: all of it', () => {
    assert.equal(mayEcho(text, text), text);
  });
});
