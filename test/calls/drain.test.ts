import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('graceful restart: drain on SIGTERM', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('turns unready at once, dials nothing new, and ends the calls still live at the deadline with a reason', async () => {
    // A caller who keeps talking: the call is live when the drain begins.
    const live = await t.request('POST', '/v1/calls', { phone_number: '+14155550112', task: 'Take a long order.' });
    assert.equal(live.status, 200);
    const liveId = String(live.body.call_id);
    await until(
      async () => (await t.request('GET', `/v1/calls/${liveId}`)).body.queue_status === 'started',
      'the call to start',
    );

    const drained = t.services.drain(300);
    assert.equal((await t.request('GET', '/readyz')).status, 503, 'a load balancer stops sending at once');
    const late = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Say hello.' });
    assert.equal(late.status, 200, 'the API still takes calls: another process will place them');
    const { cut } = await drained;
    assert.equal(cut, 1);

    const ended = await waitForCall(t, liveId);
    assert.match(String(ended.error_message), /server shut down/);
    const queued = await t.request('GET', `/v1/calls/${String(late.body.call_id)}`);
    assert.equal(queued.body.queue_status, 'queued', 'a draining process dials no new call');
  });
});
