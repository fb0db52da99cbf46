import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isInterruption } from '../../src/calls/session.js';

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
