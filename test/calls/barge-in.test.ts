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
