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
    const failures = check(record, { transcript_contains: ['/(a+)+b/'], transcript_not_contains: ['/(a+)+b/'] });
    assert.equal(failures.length, 2, failures.join('\n'));
    for (const failure of failures) assert.match(failure, /"\/\(a\+\)\+b\/" took too long to match/);
  });
});
