import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

/** The value of one sample line of the Prometheus text, e.g. `openline_live_calls 0`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const ok = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (ok) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('GET /metrics', () => {
  let t: TestApp;
  let dataDir: string;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-metrics-'));
    // Audio mode, so that the answered turns have latency to record.
    t = await createTestApp({ clock: new ScaledClock(4), env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('counts calls by state and carrier, jobs, requests by route and the turns of an audio call', async () => {
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the dentist appointment for tomorrow.',
    });
    assert.equal(r.status, 200);
    const call = await waitForCall(t, String(r.body.call_id));
    assert.equal(call.status, 'completed');
    const scrape = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(scrape.statusCode, 200);
    assert.match(String(scrape.headers['content-type']), /text\/plain/);
    const text = scrape.body;
    assert.equal(sample(text, 'openline_calls', { state: 'complete', carrier: 'sandbox' }), 1);
    assert.equal(sample(text, 'openline_live_calls'), 0);
    assert.equal(sample(text, 'openline_job_duration_seconds_count', { job: 'dial', outcome: 'done' }), 1);
    assert.notEqual(sample(text, 'openline_jobs_pending'), undefined, 'the queue depth is reported');
    assert.equal(
      sample(text, 'openline_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/v1/calls',
        status: '200',
      }),
      1,
    );
    const turns = sample(text, 'openline_turn_latency_seconds_count', { stage: 'voice_to_voice' }) ?? 0;
    assert.ok(turns >= 1, `${turns} turns recorded`);
    assert.notEqual(sample(text, 'openline_nodejs_eventloop_lag_p99_seconds'), undefined, 'event-loop delay');
    assert.ok(!text.includes('/v1/calls/' + String(r.body.call_id)), 'routes are patterns, never paths with ids');
  });

  it('answers off-host scrapers 403 without a token', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.1.2.3' });
    assert.equal(r.statusCode, 403);
    assert.equal((JSON.parse(r.body) as { status: string }).status, 'error');
    const forwarded = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '10.1.2.3',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    assert.equal(forwarded.statusCode, 403, 'a forwarded address does not make a request local');
  });
});

describe('GET /metrics with OPENLINE_METRICS_TOKEN', () => {
  let t: TestApp;
  const token = 'metrics-token-0123456789';
  before(async () => {
    t = await createTestApp({ env: { OPENLINE_METRICS_TOKEN: token } });
  });
  after(() => t.close());

  it('needs the token, from anywhere', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(none.statusCode, 401);
    const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer nope' } });
    assert.equal(wrong.statusCode, 401);
    const ok = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '10.1.2.3',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(ok.statusCode, 200);
    assert.match(ok.body, /openline_live_calls 0/);
  });
});
