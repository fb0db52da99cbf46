import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import type { Agent } from '../../src/agent/types.js';
import type { CallLeg, SpeakResult, TransferResult } from '../../src/carriers/types.js';
import { callRequest } from '../../src/testing/call-request.js';
import { runSession } from '../../src/testing/session.js';
import { waitFor } from '../../src/testing/wait.js';

/**
 * A leg whose carrier bridges a transfer itself (SIP when REFER is refused): transfer() holds
 * until the bridge ends. `answers`: the target answers (the bridge is up); else it keeps ringing.
 * Hanging up ends the bridge, or the ringing, from our side.
 */
class BridgingLeg implements CallLeg {
  readonly mode = 'text' as const;
  transferring = false;
  hungUp = false;
  private endTransfer: ((result: TransferResult) => void) | undefined;

  constructor(private readonly answers: boolean) {}

  /** The far end says nothing here. */
  on(): () => void {
    return () => undefined;
  }

  speak(): Promise<SpeakResult> {
    return Promise.resolve({ played: '', interrupted: false });
  }

  sendDtmf(): Promise<void> {
    return Promise.resolve();
  }

  transfer(): Promise<TransferResult> {
    this.transferring = true;
    return new Promise((resolve) => (this.endTransfer = resolve));
  }

  hangup(): Promise<void> {
    this.hungUp = true;
    this.endTransfer?.(this.answers ? { ok: true, endedBy: 'ASSISTANT' } : { ok: false, reason: 'the caller hung up' });
    this.endTransfer = undefined;
    return Promise.resolve();
  }
}

/** Transfers at once. */
const transferring: Agent = {
  label: 'transferring',
  respond: () => Promise.resolve({ say: null, action: { type: 'transfer' } }),
};

function session(leg: BridgingLeg, scale: number) {
  return runSession(leg, transferring, {
    request: callRequest({ transfer_phone_number: '+14155550110', max_duration: 1 }),
    // A minute of call in `60 / scale` seconds.
    clock: new ScaledClock(scale),
  });
}

const LIMIT_LINE = 'Call ended: max_duration of 1 minutes reached';

describe('a transfer the carrier holds (its own bridge) still ends with the call', () => {
  it('max_duration hangs up a bridged call: transferred, ended by the assistant', async () => {
    const leg = new BridgingLeg(true);
    const { transcript, outcome } = session(leg, 300);
    const result = await outcome;
    assert.equal(leg.hungUp, true);
    assert.equal(result.transferredTo, '+14155550110');
    assert.equal(result.endedBy, 'ASSISTANT');
    assert.equal(result.error, null);
    assert.ok(
      transcript.some((t) => t.text === LIMIT_LINE),
      JSON.stringify(transcript),
    );
  });

  it('max_duration while the target still rings: no transfer, and no transfer failure', async () => {
    const leg = new BridgingLeg(false);
    const { transcript, outcome } = session(leg, 300);
    const result = await outcome;
    assert.equal(leg.hungUp, true);
    assert.equal(result.transferredTo, null);
    assert.equal(result.error, null);
    assert.ok(
      transcript.some((t) => t.text === LIMIT_LINE),
      JSON.stringify(transcript),
    );
  });

  it('a stop through the API hangs up a bridged call before max_duration', async () => {
    const leg = new BridgingLeg(true);
    const { transcript, stop, outcome } = session(leg, 1);
    await waitFor('the transfer', () => leg.transferring);
    stop.abort();
    const result = await outcome;
    assert.equal(leg.hungUp, true);
    assert.equal(result.transferredTo, '+14155550110');
    assert.ok(!transcript.some((t) => t.text === LIMIT_LINE));
  });
});
