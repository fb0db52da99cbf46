import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { check, type CallView } from '../../src/agent-tests/expect.js';

function call(lines: [string, string][]): CallView {
  return {
    status: 'completed',
    answered_by: 'human',
    call_ended_by: 'ASSISTANT',
    call_length: 1,
    transferred_to: null,
    variables: null,
    pathway_logs: null,
    transcripts: lines.map(([user, text]) => ({ user, text })),
    latency: null,
  };
}

/**
 * A test's regular expressions are the user's: one with nested repetition ("(a+)+b") backtracks for
 * hours on a line it nearly matches (the caller's line is the user's too), holding the server's
 * event loop. Such a pattern fails its expectation, named, instead.
 */
describe('regular expressions of expectations', () => {
  const record = call([
    ['user', `${'a'.repeat(40)}!`],
    ['assistant', 'Thanks, goodbye.'],
  ]);

  it('still match as before', () => {
    assert.deepEqual(check(record, { transcript_contains: ['/GOOD(bye)?/', 'thanks'] }), []);
    assert.deepEqual(check(record, { transcript_not_contains: ['/hello/'] }), []);
    assert.deepEqual(check(record, { transcript_contains: ['/hello/'] }), [
      'transcript_contains: "/hello/" was not said',
    ]);
  });

  it('a pattern that backtracks without end fails, named, in transcript_contains and transcript_not_contains', () => {
    for (const expect of [{ transcript_contains: ['/(a+)+b/'] }, { transcript_not_contains: ['/(a+)+b/'] }]) {
      const failures = check(call([['user', `${'a'.repeat(40)}!`]]), expect);
      assert.equal(failures.length, 1, failures.join('\n'));
      assert.match(failures[0]!, /"\/\(a\+\)\+b\/" took too long to match/);
    }
  });

  it("one call's patterns share one allowance of time: those after a slow one are not run, and say so", () => {
    // A scenario's assertions are checked one by one, each with check().
    const failures = [
      ...check(record, { transcript_contains: ['/(a+)+b/', '/(a+)+c/'] }),
      ...check(record, { transcript_not_contains: ['/(a+)+d/'] }),
      ...check(record, { transcript_contains: ['/goodbye/'] }),
    ];
    assert.equal(failures.length, 4, failures.join('\n'));
    assert.match(failures[0]!, /"\/\(a\+\)\+b\/" took too long to match/);
    for (const failure of failures.slice(1))
      assert.match(failure, /was not tried: the call's regular expressions took their 200 ms before it/);
    // Words are matched as ever; another call has its own allowance.
    assert.deepEqual(check(record, { transcript_contains: ['thanks'] }), []);
    assert.deepEqual(check(call([['assistant', 'Goodbye.']]), { transcript_contains: ['/goodbye/'] }), []);
  });
});
