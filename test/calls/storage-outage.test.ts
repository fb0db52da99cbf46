import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { waitFor } from '../../src/testing/wait.js';
import type { CallLeg } from '../../src/carriers/types.js';

/**
 * The database going away while a call runs (a PostgreSQL restart, a failover): the call cannot
 * write its end, and the process must live on to serve the calls and requests that follow.
 */
describe('a live call whose storage goes away', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(20) });
    await t.services.startWorkers();
  });
  after(async () => {
    await t?.close();
  });

  it('ends without an unhandled rejection when neither its end nor its post-call job can be written', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    const { calls, queue, engine } = t.services;
    const transition = calls.transition.bind(calls);
    const enqueue = queue.enqueue.bind(queue);
    try {
      const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Confirm the visit.' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const id = String(r.body.call_id);
      await waitFor('the call to start', async () => (await calls.byId(id))?.queue_status === 'started');

      const down = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
      calls.transition = down;
      queue.enqueue = down;
      assert.ok(engine.stop(id), 'the call runs in this process');
      await waitFor('the call to leave the engine', () => !engine.liveIds().includes(id));
      // Rejections are reported after the microtasks of the turn that left them unhandled.
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(rejections.map(String), []);
    } finally {
      calls.transition = transition;
      queue.enqueue = enqueue;
      process.off('unhandledRejection', onRejection);
    }
  });

  it('hangs up the answered leg of a call whose start cannot be written', async () => {
    const { calls, carrier } = t.services;
    const transition = calls.transition.bind(calls);
    const dial = carrier.dial.bind(carrier);
    let hungUp = false;
    try {
      calls.transition = (id, from, changes) =>
        changes.queue_status === 'started'
          ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'))
          : transition(id, from, changes);
      carrier.dial = async (request) => {
        const result = await dial(request);
        if (result.status === 'answered') {
          const hangup = result.leg.hangup.bind(result.leg);
          result.leg.hangup = () => {
            hungUp = true;
            return hangup();
          };
        }
        return result;
      };
      const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Confirm the visit.' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const call = await waitForCall(t, String(r.body.call_id));
      assert.equal(call.queue_status, 'call_error');
      assert.ok(hungUp, 'the carrier leg is hung up, not left open with nobody speaking');
    } finally {
      calls.transition = transition;
      carrier.dial = dial;
    }
  });

  it('hangs up an inbound leg it cannot read the call of, and the carrier hears no rejection', async () => {
    const { calls, engine } = t.services;
    const byId = calls.byId.bind(calls);
    let hungUp = false;
    const leg = {
      hangup: async () => {
        hungUp = true;
      },
    } as unknown as CallLeg;
    try {
      calls.byId = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
      // As the carriers hand a leg over: `void engine.answer(...)`.
      await engine.answer('a-call-id', leg);
      assert.ok(hungUp, 'the leg is hung up');
    } finally {
      calls.byId = byId;
    }
  });
});
