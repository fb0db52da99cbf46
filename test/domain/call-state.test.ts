import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ENDED,
  canTransition,
  displayStatus,
  isEnded,
  statesBefore,
  type QueueStatus,
} from '../../src/domain/call-state.js';

const ALL: QueueStatus[] = [
  'new',
  'queued',
  'allocated',
  'started',
  'complete',
  'pre_queue_error',
  'queue_error',
  'call_error',
  'complete_error',
];

/** Every transition of the seed 3.1 table (the row "new -> new" is the initial state, not a move). */
const SEED_TRANSITIONS: [QueueStatus, QueueStatus, string][] = [
  ['new', 'queued', 'parameter validation and authentication succeed'],
  ['queued', 'allocated', 'dispatch'],
  ['allocated', 'started', 'phone call connects'],
  ['started', 'complete', 'call ends normally'],
  ['new', 'pre_queue_error', 'error before queueing'],
  ['queued', 'queue_error', 'error while queued (unserviced area)'],
  ['started', 'call_error', 'error during the live call (failed transfer)'],
  ['complete', 'complete_error', 'error after the call completed (post-call webhook failed)'],
];

/** Moves CONTRACT.md section 5 needs beyond the seed table. */
const CONTRACT_TRANSITIONS: [QueueStatus, QueueStatus, string][] = [
  ['queued', 'complete', 'a scheduled call stopped before it started reads canceled, queue_status complete'],
  ['allocated', 'complete', 'a call never answered or busy completes with answered_by no-answer'],
];

const ILLEGAL: [QueueStatus, QueueStatus, string][] = [
  ['new', 'started', 'a call cannot connect before it is queued'],
  ['new', 'complete', 'a request cannot complete without being queued'],
  ['queued', 'new', 'no way back to new'],
  ['queued', 'pre_queue_error', 'pre_queue_error is only before queueing'],
  ['queued', 'started', 'dispatch (allocated) comes first'],
  ['started', 'queued', 'a live call is never re-queued'],
  ['started', 'allocated', 'no way back to allocated'],
  ['started', 'queue_error', 'queue_error is only while queued'],
  ['started', 'complete_error', 'complete_error only follows complete'],
  ['complete', 'started', 'a completed call does not restart'],
  ['complete', 'call_error', 'call_error is only during the live call'],
  ['complete', 'queued', 'a completed call is not re-queued'],
  ['pre_queue_error', 'queued', 'an error before queueing is final'],
  ['queue_error', 'allocated', 'an error while queued is final'],
  ['call_error', 'complete', 'an error during the call is final'],
  ['new', 'new', 'new is the initial state, not a move'],
];

describe('call state: every transition of seed 3.1 is legal', () => {
  for (const [from, to, by] of SEED_TRANSITIONS) {
    it(`${from} -> ${to} (${by})`, () => assert.equal(canTransition(from, to), true));
  }
});

describe('call state: transitions CONTRACT.md section 5 relies on are legal', () => {
  for (const [from, to, why] of CONTRACT_TRANSITIONS) {
    it(`${from} -> ${to} (${why})`, () => assert.equal(canTransition(from, to), true));
  }
});

describe('call state: illegal transitions are refused', () => {
  for (const [from, to, why] of ILLEGAL) {
    it(`${from} -> ${to} is refused (${why})`, () => assert.equal(canTransition(from, to), false));
  }

  it('the error states of before, while queued and during the call are final', () => {
    for (const from of ['pre_queue_error', 'queue_error', 'call_error'] as const) {
      for (const to of ALL) assert.equal(canTransition(from, to), false, `${from} -> ${to}`);
    }
  });

  it('no state moves back to new', () => {
    for (const from of ALL) assert.equal(canTransition(from, 'new'), false, from);
  });
});

describe('call state: statesBefore is the inverse of canTransition', () => {
  for (const to of ALL) {
    it(`statesBefore(${to}) lists exactly the states that may move to ${to}`, () => {
      assert.deepEqual([...statesBefore(to)].sort(), ALL.filter((from) => canTransition(from, to)).sort());
    });
  }

  const SEED_BEFORE: [QueueStatus, QueueStatus[]][] = [
    ['queued', ['new']],
    ['allocated', ['queued']],
    ['started', ['allocated']],
    ['pre_queue_error', ['new']],
    ['new', []],
  ];
  for (const [to, expected] of SEED_BEFORE) {
    it(`only ${expected.join(', ') || 'nothing'} may precede ${to}`, () =>
      assert.deepEqual(statesBefore(to), expected));
  }

  it('complete may be entered from started (seed) and includes every seed predecessor', () => {
    assert.ok(statesBefore('complete').includes('started'));
    assert.ok(statesBefore('queue_error').includes('queued'));
    assert.ok(statesBefore('call_error').includes('started'));
    assert.ok(statesBefore('complete_error').includes('complete'));
  });
});

describe('call state: isEnded', () => {
  const rows: [string, boolean][] = [
    ['new', false],
    ['queued', false],
    ['allocated', false],
    ['started', false],
    ['complete', true],
    ['complete_error', true],
    ['pre_queue_error', true],
    ['queue_error', true],
    ['call_error', true],
    ['completed', false],
    ['canceled', false],
    ['', false],
  ];
  for (const [status, ended] of rows) {
    it(`${JSON.stringify(status)} is ${ended ? '' : 'not '}an ended queue_status`, () =>
      assert.equal(isEnded(status), ended));
  }

  it('ENDED holds complete, complete_error and the three error states', () => {
    assert.deepEqual([...ENDED].sort(), ['call_error', 'complete', 'complete_error', 'pre_queue_error', 'queue_error']);
  });
});

describe('call state: displayStatus spells a successful end "completed", the queue_status "complete"', () => {
  const rows: [QueueStatus, string][] = [
    ['complete', 'completed'],
    ['new', 'new'],
    ['queued', 'queued'],
    ['allocated', 'allocated'],
    ['started', 'started'],
    ['pre_queue_error', 'pre_queue_error'],
    ['queue_error', 'queue_error'],
    ['call_error', 'call_error'],
    ['complete_error', 'complete_error'],
  ];
  for (const [queueStatus, status] of rows) {
    it(`queue_status ${queueStatus} reads status ${status}`, () => assert.equal(displayStatus(queueStatus), status));
  }
});
