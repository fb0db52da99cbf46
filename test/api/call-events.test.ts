import http from 'node:http';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

/** The events of a text/event-stream body, in order. */
function parseEvents(body: string): { event: string; data: Record<string, unknown> }[] {
  return body
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => {
      const [eventLine, dataLine] = block.split('\n');
      return { event: eventLine!.slice('event: '.length), data: JSON.parse(dataLine!.slice('data: '.length)) };
    });
}

describe('GET /v1/calls/{id}/events: server-sent events of a call (sandbox, clock 50x)', () => {
  let t: TestApp;
  let origin = '';
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(50) });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => t.close());

  it('streams the status, each transcript line and the engine events over a real socket, then ends with the call', async () => {
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the appointment.',
      wait_for_greeting: true,
    });
    const id = String(sent.body.call_id);
    const body = await new Promise<string>((resolve, reject) => {
      const req = http.get(`${origin}/v1/calls/${id}/events`, { headers: { authorization: t.key } }, (res) => {
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/event-stream/);
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
    });
    const events = parseEvents(body);
    assert.equal(events[0]!.event, 'status');
    assert.equal(events.at(-1)!.event, 'end');
    assert.equal(events.at(-1)!.data.queue_status, 'complete');
    const lines = events.filter((e) => e.event === 'transcript').map((e) => e.data);
    const record = (await t.request('GET', `/v1/calls/${id}`)).body;
    assert.deepEqual(
      lines.map((l) => l.text),
      (record.transcripts as { text: string }[]).map((x) => x.text),
      'every transcript line, once, in order',
    );
    assert.ok(
      events.some((e) => e.event === 'call' && e.data.message === 'Call connected'),
      body,
    );
    assert.ok(events.some((e) => e.event === 'status' && e.data.queue_status === 'started'));
  });

  it('is 404 for a call of another account', async () => {
    const sent = await t.request('POST', '/v1/calls', { phone_number: '+14155550105', task: 'Hi.' });
    const r = await t.request('GET', `/v1/calls/${String(sent.body.call_id)}/events`, undefined, { as: t.otherKey });
    assert.equal(r.status, 404);
  });
});
