import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { endOfTurnMs, endOfTurnSilenceMs, turnWords, type TurnWords } from '../../src/media/turn-detector.js';

function check(cases: [string, TurnWords][]): void {
  for (const [text, expected] of cases) it(`"${text}" -> ${expected}`, () => assert.equal(turnWords(text), expected));
}

describe('turnWords: how the words at a pause read', () => {
  describe('unfinished: the last words leave the grammar open', () => {
    check([
      ['I need to speak to someone about', 'unfinished'],
      ['We could do Friday or', 'unfinished'],
      ['Sure, and', 'unfinished'],
      ['I called because', 'unfinished'],
      ['Let me think, so', 'unfinished'],
      ['I would like the', 'unfinished'],
      ['Can I get an', 'unfinished'],
      ['Send it to my', 'unfinished'],
      ['It is, um', 'unfinished'],
      ['The order was uh.', 'unfinished'],
      ['and then we', 'unfinished'],
      ['Would you', 'unfinished'],
      ['Maybe it should be', 'unfinished'],
      ['My number is', 'unfinished'],
      ["The address's", 'unfinished'],
      ['My number is five five five', 'unfinished'],
      ['My phone number is 555', 'unfinished'],
      ['It is 212 555', 'unfinished'],
      // A recogniser's period at a pause does not close a sentence the grammar leaves open.
      ['I was thinking of.', 'unfinished'],
    ]);
  });
  describe('finished: a closed sentence or a short answer', () => {
    check([
      ['Yes.', 'finished'],
      ['no', 'finished'],
      ['Okay thanks', 'finished'],
      ['I would like to cancel my order.', 'finished'],
      ['Can you call me back tomorrow?', 'finished'],
      ['Yes it is.', 'finished'],
      ["That's who they are.", 'finished'],
      ['Thank you.', 'finished'],
      ['I think so too.', 'finished'],
      ['My number is 2125550123.', 'finished'],
      ['I am twenty five.', 'finished'],
    ]);
  });
  describe('unknown: no words, or nothing to tell', () => {
    check([
      ['', 'unknown'],
      ['   ', 'unknown'],
      ['I would like to book a table', 'unknown'],
      ['the blue one', 'unknown'],
    ]);
  });
});

describe('endOfTurnSilenceMs: the words scale the threshold', () => {
  for (const threshold of [50, 100, 200]) {
    it(`threshold ${threshold}: finished < unknown < unfinished in an answer`, () => {
      const base = endOfTurnMs(threshold);
      assert.equal(endOfTurnSilenceMs(threshold, 'unknown'), base);
      assert.ok(endOfTurnSilenceMs(threshold, 'finished') < base);
      assert.ok(endOfTurnSilenceMs(threshold, 'unfinished') > base);
    });
    it(`threshold ${threshold}: while the far end opens the call a closed sentence waits the threshold's silence`, () => {
      const base = endOfTurnMs(threshold);
      assert.equal(endOfTurnSilenceMs(threshold, 'finished', true), base);
      assert.equal(endOfTurnSilenceMs(threshold, 'unknown', true), base);
      assert.equal(endOfTurnSilenceMs(threshold, 'unfinished', true), endOfTurnSilenceMs(threshold, 'unfinished'));
    });
  }
  it('default threshold: 240 / 400 / 760 ms', () => {
    assert.deepEqual(
      (['finished', 'unknown', 'unfinished'] as const).map((w) => endOfTurnSilenceMs(100, w)),
      [240, 400, 760],
    );
  });
});
