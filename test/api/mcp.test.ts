import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';

type Json = Record<string, unknown>;

/** An MCP client (the official SDK's, as Claude Code and Cursor use) connected to /v1/mcp with `key`. */
async function connect(origin: string, key: string): Promise<Client> {
  const client = new Client({ name: 'openline-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/v1/mcp', origin), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

/** A tool's text, and the JSON in it when there is some. */
function textOf(result: Awaited<ReturnType<Client['callTool']>>): {
  text: string;
  json: Json | undefined;
  isError: boolean;
} {
  const r = result as CallToolResult;
  const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  let json: Json | undefined;
  try {
    json = JSON.parse(text) as Json;
  } catch {
    json = undefined;
  }
  return { text, json, isError: r.isError === true };
}

describe('the MCP server at /v1/mcp (Streamable HTTP, the official SDK as client)', () => {
  let t: TestApp;
  let origin: string;
  let client: Client;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(20) });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = await connect(origin, t.key);
  });
  after(async () => {
    await client.close();
    await t.close();
  });

  it('introduces itself and lists its tools, those with side effects marked destructive', async () => {
    assert.equal(client.getServerVersion()?.name, 'openline');
    assert.match(client.getInstructions() ?? '', /create_call/);
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    for (const name of ['create_call', 'wait_for_call', 'get_call_log', 'list_calls', 'call_api', 'list_api_endpoints'])
      assert.ok(names.includes(name), `${name} is listed`);
    const create = tools.find((tool) => tool.name === 'create_call')!;
    assert.equal(create.annotations?.destructiveHint, true);
    assert.deepEqual(create.inputSchema.required, ['phone_number']);
    assert.equal(tools.find((tool) => tool.name === 'get_call')!.annotations?.readOnlyHint, true);
  });

  it('places a call only once confirmed, waits for it and reads its transcript and events', async () => {
    const args = {
      phone_number: '+14155550100',
      task: 'Confirm the appointment tomorrow at 3 pm.',
      metadata: { ref: 'A-7' },
    };
    const preview = textOf(await client.callTool({ name: 'create_call', arguments: args }));
    assert.equal(preview.isError, false);
    assert.match(preview.text, /Not placed/);
    const before = await t.request('GET', '/v1/calls');
    assert.equal((before.body.calls as unknown[]).length, 0, 'nothing was placed without confirm');

    const placed = textOf(await client.callTool({ name: 'create_call', arguments: { ...args, confirm: true } }));
    assert.equal(placed.isError, false, placed.text);
    const callId = String(placed.json?.call_id);
    assert.ok(callId.length > 0, placed.text);

    const waited = textOf(
      await client.callTool({ name: 'wait_for_call', arguments: { call_id: callId, timeout_seconds: 60 } }),
    );
    assert.equal(waited.isError, false, waited.text);
    assert.equal(waited.json?.completed, true, waited.text);
    assert.equal(waited.json?.status, 'completed');
    assert.deepEqual(waited.json?.metadata, { ref: 'A-7' });
    assert.ok(String(waited.json?.concatenated_transcript).length > 0);

    const log = textOf(await client.callTool({ name: 'get_call_log', arguments: { call_id: callId } }));
    assert.equal(log.isError, false, log.text);
    assert.ok((log.json?.transcripts as unknown[]).length > 0);
    assert.ok(
      (log.json?.events as Json[]).some((e) => e.level === 'call'),
      'the event log is there',
    );

    const listed = textOf(await client.callTool({ name: 'list_calls', arguments: { limit: 5 } }));
    assert.ok((listed.json?.calls as Json[]).some((c) => c.call_id === callId));
  });

  it('names the wrong argument, and passes the API’s own errors on', async () => {
    const missing = textOf(await client.callTool({ name: 'create_call', arguments: { task: 'Hi' } }));
    assert.equal(missing.isError, true);
    assert.match(missing.text, /phone_number is required/);
    const extra = textOf(await client.callTool({ name: 'get_call', arguments: { call_id: 'x', colour: 'red' } }));
    assert.match(extra.text, /colour is not an argument of get_call/);
    const wait = textOf(
      await client.callTool({ name: 'wait_for_call', arguments: { call_id: 'x', timeout_seconds: 9999 } }),
    );
    assert.match(wait.text, /timeout_seconds must be <= 300/);
    const bad = textOf(
      await client.callTool({
        name: 'create_call',
        arguments: { phone_number: 'not a number', task: 'Hi', confirm: true },
      }),
    );
    assert.equal(bad.isError, true);
    assert.match(bad.text, /phone_number/);
    const unknown = textOf(await client.callTool({ name: 'get_call', arguments: { call_id: 'no-such-call' } }));
    assert.equal(unknown.isError, true);
    assert.match(unknown.text, /not found/i);
    const nameless = textOf(await client.callTool({ name: 'fly_to_the_moon', arguments: {} }));
    assert.match(nameless.text, /no tool is called fly_to_the_moon/);
  });

  it('reaches any endpoint through call_api, changes only when confirmed, never itself or outside /v1', async () => {
    const endpoints = textOf(await client.callTool({ name: 'list_api_endpoints', arguments: { filter: 'knowledge' } }));
    const listed = JSON.parse(endpoints.text) as { method: string; path: string }[];
    assert.ok(listed.some((e) => e.method === 'POST' && e.path === '/v1/knowledge/answer'));
    assert.ok(!listed.some((e) => e.path.startsWith('/v1/mcp')));

    const body = { name: 'Front desk', description: 'Opening hours', text: 'We open at 9 am and close at 5 pm.' };
    const unconfirmed = textOf(
      await client.callTool({ name: 'call_api', arguments: { method: 'POST', path: '/v1/knowledge/learn', body } }),
    );
    assert.match(unconfirmed.text, /Not sent/);
    const made = textOf(
      await client.callTool({
        name: 'call_api',
        arguments: { method: 'POST', path: '/v1/knowledge/learn', body, confirm: true },
      }),
    );
    assert.equal(made.isError, false, made.text);
    const got = textOf(
      await client.callTool({ name: 'call_api', arguments: { method: 'GET', path: '/v1/knowledge' } }),
    );
    assert.match(got.text, /Front desk/);

    for (const path of [
      '/v1/mcp',
      '/v1/../metrics',
      '/health',
      '/v1/calls?limit=1',
      // Escapes the router decodes: still outside /v1, or this server again.
      '/v1/%2e%2e/metrics',
      '/v1/%2E%2e/',
      '/v1/%6dcp',
      '/v1/%2e%2e/api/v1/mcp',
      '/v1/%zz',
    ]) {
      const refused = textOf(await client.callTool({ name: 'call_api', arguments: { method: 'GET', path } }));
      assert.equal(refused.isError, true, `${path}: ${refused.text}`);
    }
  });

  it('acts for the key’s account only: another account sees none of its calls', async () => {
    const other = await connect(origin, t.otherKey);
    try {
      const listed = textOf(await other.callTool({ name: 'list_calls', arguments: {} }));
      assert.deepEqual(listed.json?.calls, []);
      const mine = (await t.request('GET', '/v1/calls')).body.calls as Json[];
      const theirs = textOf(
        await other.callTool({ name: 'get_call', arguments: { call_id: String(mine[0]!.call_id) } }),
      );
      assert.equal(theirs.isError, true);
    } finally {
      await other.close();
    }
  });

  it('refuses a missing or wrong key (401), what is no JSON-RPC (400), and GET and DELETE (405: no sessions)', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    for (const authorization of [undefined, 'Bearer wrong-key']) {
      const r = await fetch(new URL('/v1/mcp', origin), {
        method: 'POST',
        headers: { ...headers, ...(authorization && { authorization }) },
        body: JSON.stringify(init),
      });
      assert.equal(r.status, 401);
      assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="openline"');
    }
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(new URL('/v1/mcp', origin), { method, headers: { authorization: `Bearer ${t.key}` } });
      assert.equal(r.status, 405);
      assert.equal(r.headers.get('allow'), 'POST');
    }
    const ok = await fetch(new URL('/v1/mcp', origin), {
      method: 'POST',
      headers: { ...headers, authorization: t.key },
      body: JSON.stringify(init),
    });
    // What is no JSON-RPC is answered in JSON-RPC's words: an invalid request, a parse error, a batch
    // under a protocol version that has none.
    const notRpc = await t.request('POST', '/v1/mcp', { method: 'tools/list' });
    assert.equal(notRpc.status, 400);
    assert.deepEqual([notRpc.body.jsonrpc, notRpc.body.id], ['2.0', null]);
    assert.equal((notRpc.body.error as { code: number }).code, -32600);
    const garbled = await fetch(new URL('/v1/mcp', origin), {
      method: 'POST',
      headers: { ...headers, authorization: t.key },
      body: '{"jsonrpc": "2.0", "id": 1, "method": ',
    });
    assert.equal(garbled.status, 400);
    assert.equal(((await garbled.json()) as { error: { code: number } }).error.code, -32700);
    const batch = await fetch(new URL('/v1/mcp', origin), {
      method: 'POST',
      headers: { ...headers, authorization: t.key, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify([{ jsonrpc: '2.0', id: 2, method: 'tools/list' }]),
    });
    assert.equal(((await batch.json()) as { error: { code: number; message: string } }).error.code, -32600);
    assert.equal(ok.status, 200, 'the key alone, without Bearer, as the API takes it');
    const answer = (await ok.json()) as { result: { serverInfo: { name: string } } };
    assert.equal(answer.result.serverInfo.name, 'openline');
  });
});
