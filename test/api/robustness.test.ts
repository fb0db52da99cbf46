import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

interface Operation {
  method: string;
  path: string;
  properties: string[];
}

const WRONG_VALUES: unknown[] = [null, [], {}, '', 'x', -1, 1e308, true, [null], [{}], { a: { b: null } }];

/**
 * Every operation of the OpenAPI document, fed wrong values in every body field: the answer is a
 * 4xx with the error shape, never a 500 (bad input gets a clear error, never a crash).
 */
/** The contract's error shape; the MCP server answers in JSON-RPC's own (an `error` with a code). */
function errorShaped(path: string, body: Record<string, unknown>): boolean {
  if (path.endsWith('/mcp') && body.jsonrpc === '2.0')
    return typeof (body.error as { code?: unknown })?.code === 'number';
  return body.status === 'error';
}

describe('robustness: wrong values in every field of every endpoint', () => {
  let t: TestApp;
  const operations: Operation[] = [];
  before(async () => {
    t = await createTestApp();
    await t.app.ready();
    const doc = t.app.swagger() as {
      paths: Record<
        string,
        Record<string, { requestBody?: { content?: Record<string, { schema?: { properties?: object } }> } }>
      >;
    };
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const schema = op.requestBody?.content?.['application/json']?.schema;
        operations.push({ method: method.toUpperCase(), path, properties: Object.keys(schema?.properties ?? {}) });
      }
    }
  });
  after(() => t.close());

  it('finds the documented operations', () => {
    assert.ok(operations.length >= 40, `only ${operations.length} operations`);
  });

  it('never answers 500', async () => {
    const failures: string[] = [];
    for (const op of operations) {
      const url = op.path.replace(/\{[^}]+\}/g, 'x1').replace(/:(\w+)/g, 'x1');
      const bodies: unknown[] =
        op.method === 'GET' || op.method === 'DELETE' ? [undefined] : [null, [], 'text', 42, {}];
      for (const property of op.properties) {
        for (const value of WRONG_VALUES) bodies.push({ [property]: value });
      }
      for (const body of bodies) {
        const r = await t.app.inject({
          method: op.method as 'GET',
          url: `${url}?limit=abc&cursor=%00`,
          headers: { authorization: t.key, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        });
        if (r.statusCode >= 500)
          failures.push(`${op.method} ${op.path} ${JSON.stringify(body)} -> ${r.statusCode} ${r.body}`);
        else if (r.statusCode >= 400 && !errorShaped(op.path, JSON.parse(r.body) as Record<string, unknown>))
          failures.push(`${op.method} ${op.path}: no error shape`);
      }
    }
    assert.deepEqual(failures.slice(0, 20), []);
  });
});
