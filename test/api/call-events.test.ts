import http from 'node:http';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { MAX_EVENT_STREAMS } from '../../src/api/calls.js';

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
      const headers = { authorization: t.key, accept: 'text/event-stream' };
      const req = http.get(`${origin}/v1/calls/${id}/events`, { headers }, (res) => {
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
    // The call's last event, recorded just after its final status, comes before the stream's end.
    assert.ok(
      events.some((e) => e.event === 'queue' && e.data.message === 'Call ended with queue_status complete'),
      body,
    );
    // The hosted API's last event, which webhook receivers and event-stream readers wait for.
    assert.deepEqual(
      events.filter((e) => !['status', 'transcript', 'end'].includes(e.event)).at(-1),
      events.find((e) => e.event === 'call' && e.data.message === 'Closing call stream.'),
      body,
    );

    // Asked without text/event-stream, the same address lists the stored events as JSON, as the
    // hosted event stream answers (also under /v1/event_stream/{id}).
    // The events of the end are recorded once the call's after-call job ran.
    for (let i = 0; i < 100; i++) {
      const list = await t.request('GET', `/v1/calls/${id}/events`);
      if (JSON.stringify(list.body).includes('Closing call stream.')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const url of [`/v1/calls/${id}/events`, `/v1/event_stream/${id}`]) {
      const list = await t.request('GET', url);
      assert.equal(list.status, 200);
      const items = list.body as unknown as Array<Record<string, unknown>>;
      assert.ok(Array.isArray(items));
      const connected = items.find((e) => e.message === 'Call connected');
      assert.deepEqual(
        { level: connected?.level, category: connected?.category, call_id: connected?.call_id },
        { level: 'call', category: 'info', call_id: id },
      );
      assert.match(String(connected?.timestamp), /^\d{4}-\d\d-\d\dT/);
      assert.deepEqual(
        items.map((e) => e.message).slice(0, 3),
        ['Call allocated', 'Call started', 'Call connected'],
        'oldest first',
      );
      assert.ok(items.some((e) => e.message === 'Call ended with queue_status complete'));
      assert.deepEqual(
        { level: items.at(-1)?.level, message: items.at(-1)?.message },
        { level: 'call', message: 'Closing call stream.' },
      );
    }
  });

  it('a stream opened after the call ended gives every event of it, once, then ends', async () => {
    const sent = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the appointment.',
    });
    const id = String(sent.body.call_id);
    for (let i = 0; i < 400; i++) {
      const list = await t.request('GET', `/v1/calls/${id}/events`);
      if (JSON.stringify(list.body).includes('Closing call stream.')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const stored = (await t.request('GET', `/v1/calls/${id}/events`)).body as unknown as Array<{ message: string }>;
    const body = await new Promise<string>((resolve, reject) => {
      const headers = { authorization: t.key, accept: 'text/event-stream' };
      http
        .get(`${origin}/v1/event_stream/${id}`, { headers }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    const events = parseEvents(body).filter((e) => !['status', 'transcript', 'end'].includes(e.event));
    assert.deepEqual(
      events.map((e) => e.data.message),
      stored.map((e) => e.message),
    );
    assert.equal(events[0]!.data.message, 'Call allocated');
    assert.equal(parseEvents(body).at(-1)!.event, 'end');
  });

  it('is 404 for a call of another account', async () => {
    const sent = await t.request('POST', '/v1/calls', { phone_number: '+14155550105', task: 'Hi.' });
    const r = await t.request('GET', `/v1/calls/${String(sent.body.call_id)}/events`, undefined, { as: t.otherKey });
    assert.equal(r.status, 404);
  });
});

describe('server-sent event streams: an account holds a bounded number open', () => {
  let t: TestApp;
  let origin = '';
  before(async () => {
    // No workers: the call stays queued, and its streams stay open.
    t = await createTestApp();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => t.close());

  /** Opens a stream; resolves with its status once the headers came, and the request to end it. */
  const open = (url: string, key: string) =>
    new Promise<{ status: number; body: () => Promise<string>; close: () => void }>((resolve, reject) => {
      const req = http.get(
        `${origin}${url}`,
        { headers: { authorization: key, accept: 'text/event-stream' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          const ended = new Promise<string>((done) => res.on('end', () => done(text)));
          resolve({ status: res.statusCode ?? 0, body: () => ended, close: () => req.destroy() });
        },
      );
      req.on('error', reject);
    });

  it('answers 429 beyond MAX_EVENT_STREAMS, for that account only, and again once one is closed', async () => {
    const sent = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Hi.' });
    const url = `/v1/calls/${String(sent.body.call_id)}/events`;
    const streams = [];
    for (let i = 0; i < MAX_EVENT_STREAMS; i++) streams.push(await open(url, t.key));
    assert.ok(
      streams.every((s) => s.status === 200),
      streams.map((s) => s.status).join(),
    );
    const over = await open(url, t.key);
    assert.equal(over.status, 429);
    assert.match(await over.body(), /at most 100 event streams open at once/);
    // Another account's streams are its own.
    const other = await t.request(
      'POST',
      '/v1/calls',
      { phone_number: '+14155550100', task: 'Hi.' },
      { as: t.otherKey },
    );
    const theirs = await open(`/v1/calls/${String(other.body.call_id)}/events`, t.otherKey);
    assert.equal(theirs.status, 200);
    theirs.close();
    // A closed stream gives its place back.
    streams.pop()!.close();
    let again = await open(url, t.key);
    for (let i = 0; again.status === 429 && i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      again = await open(url, t.key);
    }
    assert.equal(again.status, 200);
    for (const s of [...streams, again]) s.close();
  });
});
