import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OutboundClient } from '../../src/outbound/http.js';
import { inputMismatch, jsonPath, runTool, functionName, findTool, templatedBody } from '../../src/agent/tools.js';
import { DynamicData } from '../../src/agent/dynamic-data.js';
import type { CallTool } from '../../src/schemas/call-request.js';
import { ScaledClock } from '../../src/clock.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A local tool server: records each request and answers with what `answer` says. */
async function server(answer: (seen: Seen) => { status?: number; body: string; delayMs?: number }) {
  const seen: Seen[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const s = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(s);
      const a = answer(s);
      setTimeout(() => {
        res.writeHead(a.status ?? 200, { 'content-type': 'application/json' });
        res.end(a.body);
      }, a.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  return {
    seen,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

const client = new OutboundClient({ allowPrivate: true });
const tool = (over: Partial<CallTool>): CallTool => ({
  name: 'Check Stock',
  description: 'Checks the stock',
  url: 'http://x',
  method: 'GET',
  timeout: 10000,
  ...over,
});

describe('custom tools at run time (src/agent/tools.ts)', () => {
  let s: Awaited<ReturnType<typeof server>>;
  before(async () => {
    s = await server((seen) =>
      seen.url.startsWith('/slow')
        ? { body: '{}', delayMs: 500 }
        : seen.url.startsWith('/fail')
          ? { status: 500, body: '{"error":"boom"}' }
          : { body: JSON.stringify({ booking: { id: 'B-42', slots: ['3pm', '4pm'] }, message: 'Booked for 3pm' }) },
    );
  });
  after(() => s.close());

  it('renders url, query, headers and a POST body from variables and {{input}} / {{input.field}}', async () => {
    const before = s.seen.length;
    const result = await runTool(
      tool({
        url: `${s.url}/book/{{call_id}}`,
        method: 'POST',
        query: { phone: '{{phone_number}}', day: '{{input.day}}' },
        headers: { authorization: 'Bearer {{token}}', 'x-input': '{{input}}' },
        body: {
          who: '{{name}}',
          day: '{{input.day}}',
          count: '{{input.count}}',
          all: '{{input}}',
          note: 'For {{name}} on {{input.day}}',
        },
      }),
      { day: 'Monday', count: 2 },
      { call_id: 'c1', phone_number: '+14155550100', token: 'sekret', name: 'Sam' },
      client,
    );
    assert.equal(result.ok, true, String(result.error));
    const seen = s.seen[before]!;
    assert.equal(seen.method, 'POST');
    const url = new URL(seen.url, 'http://h');
    assert.equal(url.pathname, '/book/c1');
    assert.equal(url.searchParams.get('phone'), '+14155550100');
    assert.equal(url.searchParams.get('day'), 'Monday');
    assert.equal(seen.headers.authorization, 'Bearer sekret');
    assert.deepEqual(JSON.parse(String(seen.headers['x-input'])), { day: 'Monday', count: 2 });
    assert.equal(seen.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(seen.body), {
      who: 'Sam',
      day: 'Monday',
      count: 2,
      all: { day: 'Monday', count: 2 },
      note: 'For Sam on Monday',
    });
  });

  it('GET sends no body, and without a response mapping the whole body becomes {{data}}', async () => {
    const before = s.seen.length;
    const result = await runTool(tool({ url: `${s.url}/stock`, body: { ignored: true } }), {}, {}, client);
    assert.equal(s.seen[before]!.method, 'GET');
    assert.equal(s.seen[before]!.body, '');
    assert.equal(result.ok, true);
    assert.deepEqual(result.variables, {
      data: { booking: { id: 'B-42', slots: ['3pm', '4pm'] }, message: 'Booked for 3pm' },
    });
    assert.equal(result.spokenResult, 'Booked for 3pm');
  });

  it('maps response JSON paths into new variables', async () => {
    const result = await runTool(
      tool({
        url: `${s.url}/book`,
        response: { booking_id: '$.booking.id', first_slot: '$.booking.slots[0]', missing: '$.nope.x' },
      }),
      {},
      {},
      client,
    );
    assert.equal(result.ok, true);
    assert.deepEqual(result.variables, { booking_id: 'B-42', first_slot: '3pm' });
    assert.match(result.spokenResult, /booking id: B-42, first slot: 3pm/);
  });

  it('skips the tool when the input does not match input_schema, tolerating the seed loose forms', async () => {
    const before = s.seen.length;
    const schema = {
      example: { day: 'Monday', date: '2025-01-01' },
      type: 'object',
      properties: { day: { type: 'string' }, date: 'YYYY-MM-DD', email: { type: 'string', format: 'email-ish' } },
      required: ['day'],
    };
    const skipped = await runTool(tool({ url: `${s.url}/book`, input_schema: schema }), { date: 'x' }, {}, client);
    assert.equal(skipped.ok, false);
    assert.equal(skipped.skipped, true);
    assert.match(String(skipped.error), /input_schema.*day/);
    assert.equal(s.seen.length, before, 'no request for a skipped tool');
    const used = await runTool(
      tool({ url: `${s.url}/book`, input_schema: schema }),
      { day: 'Monday', email: 'nope' },
      {},
      client,
    );
    assert.equal(used.ok, true, String(used.error));
    // A schema that cannot be compiled does not make the tool unusable.
    assert.equal(inputMismatch({ type: 'object', properties: { a: { $ref: '#/nowhere' } } }, {}), null);
  });

  it('fails on timeout and on an HTTP error status; a very large timeout means wait', async () => {
    const slow = await runTool(tool({ url: `${s.url}/slow`, timeout: 100 }), {}, {}, client);
    assert.deepEqual([slow.ok, slow.error], [false, 'timeout']);
    const patient = await runTool(tool({ url: `${s.url}/slow`, timeout: 99999999 }), {}, {}, client);
    assert.equal(patient.ok, true, String(patient.error));
    const failed = await runTool(tool({ url: `${s.url}/fail` }), {}, {}, client);
    assert.deepEqual([failed.ok, failed.error], [false, 'HTTP 500']);
  });

  it('refuses http:// and loopback tool URLs when private URLs are not allowed', async () => {
    const before = s.seen.length;
    const guarded = new OutboundClient({ allowPrivate: false });
    const result = await runTool(tool({ url: `${s.url}/book` }), {}, {}, guarded);
    assert.equal(result.ok, false);
    assert.match(String(result.error), /https/);
    assert.equal(s.seen.length, before, 'nothing reached the server');
  });

  it('a body typed as JSON text stays JSON when a value holds a quote, a backslash or a line break', () => {
    const headers: Record<string, string> = {};
    const vars = { name: 'Joe "JJ" Smith', notes: 'line one\nline two \\ end', party: 2, tags: ['a', 'b'] };
    const body = templatedBody(
      '{"name": "{{name}}", "notes": "{{notes}}", "party": {{party}}, "tags": {{tags}}}',
      vars,
      headers,
    );
    assert.deepEqual(JSON.parse(body), {
      name: 'Joe "JJ" Smith',
      notes: 'line one\nline two \\ end',
      party: 2,
      tags: ['a', 'b'],
    });
    assert.equal(headers['content-type'], 'application/json');
    // An escaped quote in the template is part of its string; plain text is rendered as it was.
    assert.equal(templatedBody('{"a": "say \\"{{party}}\\""}', vars, {}), '{"a": "say \\"2\\""}');
    const plain: Record<string, string> = {};
    assert.equal(templatedBody('Hello "{{name}}"', vars, plain), 'Hello "Joe "JJ" Smith"');
    assert.equal(plain['content-type'], 'text/plain; charset=utf-8');
  });

  it('JSONPath subset, function names and tool lookup', () => {
    const doc = { a: { 'b c': [{ d: 1 }] } };
    assert.equal(jsonPath(doc, "$.a['b c'][0].d"), 1);
    assert.equal(jsonPath(doc, 'a["b c"][0].d'), 1);
    assert.deepEqual(jsonPath(doc, '$'), doc);
    assert.equal(jsonPath(doc, '$.a.x.y'), undefined);
    assert.equal(functionName('Check Stock!'), 'Check_Stock');
    const tools = [tool({ name: 'Check Stock' })];
    assert.equal(findTool(tools, 'check stock')?.name, 'Check Stock');
    assert.equal(findTool(tools, 'Check_Stock')?.name, 'Check Stock');
    assert.equal(findTool(tools, 'other'), undefined);
  });

  it('dynamic_data: placeholders rendered, response_data mapped to variables and knowledge; failures logged', async () => {
    const before = s.seen.length;
    const variables: Record<string, unknown> = {
      from: '+14155550999',
      to: '+14155550100',
      short_to: '4155550100',
      call_id: 'c9',
    };
    const warnings: object[] = [];
    const dynamic = new DynamicData(
      [
        {
          url: `${s.url}/customer?to={{short_to}}`,
          method: 'POST',
          cache: true,
          headers: { 'x-call': '{{call_id}}' },
          body: { from: '{{from}}', to: '{{to}}' },
          response_data: [
            { name: 'booking_ref', data: '$.booking.id', context: 'The booking reference is {{booking_ref}}.' },
          ],
        },
        { url: `${s.url}/fail`, method: 'GET', cache: true, response_data: [{ name: 'x', data: '$.x' }] },
      ],
      variables,
      client,
      { callId: 'c9', log: { warn: (o) => warnings.push(o) } },
    );
    await dynamic.load();
    const seen = s.seen.slice(before).find((x) => x.url.startsWith('/customer'))!;
    assert.equal(seen.url, '/customer?to=4155550100');
    assert.equal(seen.headers['x-call'], 'c9');
    assert.deepEqual(JSON.parse(seen.body), { from: '+14155550999', to: '+14155550100' });
    assert.equal(variables.booking_ref, 'B-42');
    assert.deepEqual(dynamic.knowledge, ['The booking reference is B-42.']);
    assert.equal(warnings.length, 1);
  });

  it('dynamic_data with cache false is fetched again every 30 s of clock time until stopped', async () => {
    let n = 0;
    const counter = await server(() => ({ body: JSON.stringify({ queue: ++n }) }));
    try {
      const variables: Record<string, unknown> = {};
      const dynamic = new DynamicData(
        [
          { url: `${counter.url}/q`, method: 'GET', cache: false, response_data: [{ name: 'queue', data: '$.queue' }] },
          {
            url: `${counter.url}/once`,
            method: 'GET',
            cache: true,
            response_data: [{ name: 'once', data: '$.queue' }],
          },
        ],
        variables,
        client,
      );
      await dynamic.load();
      // 1000x: 30 s of clock time is 30 ms.
      const stop = dynamic.refresh(new ScaledClock(1000));
      await new Promise((resolve) => setTimeout(resolve, 250));
      stop();
      const fetched = n;
      assert.ok(Number(variables.queue) > 2, `refreshed: ${String(variables.queue)}`);
      assert.ok(counter.seen.filter((x) => x.url === '/once').length === 1, 'cache: true is fetched once');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(n <= fetched + 1, 'no more fetches once stopped');
    } finally {
      await counter.close();
    }
  });
});
