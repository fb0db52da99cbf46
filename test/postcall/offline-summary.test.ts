import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { offlineSummary } from '../../src/postcall/summary.js';
import type { Call } from '../../src/store/calls.js';

/** A finished call's record, with only what the offline summary reads. */
const call = (fields: Partial<Call>): Call =>
  ({
    inbound: false,
    from_number: '+14155551200',
    to_number: '+14155550100',
    carrier: 'sandbox',
    corrected_duration: 12,
    call_length: 0.2,
    call_ended_by: 'USER',
    answered_by: null,
    transferred_to: null,
    error_message: null,
    ...fields,
  }) as Partial<Call> as Call;

describe('offline summary', () => {
  it('names who hung up from the side of the call: the person called, or the caller of an inbound call', () => {
    assert.match(offlineSummary(call({}), []), /Ended by the person called\.$/);
    const inbound = offlineSummary(call({ inbound: true, from_number: '+14155550100', to_number: '+14155550200' }), []);
    assert.match(inbound, /Inbound call from \+14155550100, 12 s/);
    assert.match(inbound, /Ended by the caller\.$/);
    assert.match(offlineSummary(call({ call_ended_by: 'ASSISTANT' }), []), /Ended by the agent\.$/);
  });

  it('says a web call came from the browser', () => {
    const web = offlineSummary(call({ inbound: true, from_number: null, to_number: 'agent-id', carrier: 'web' }), []);
    assert.match(web, /Web call from the browser, 12 s/);
    assert.match(web, /Ended by the caller\.$/);
  });
});
