import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

type Schema = Record<string, unknown>;
type Operation = { requestBody?: { content?: Record<string, { schema?: Schema }> } };

/** What clients send for "not given". */
const EMPTY: unknown[] = [null, '', {}, [], [{}]];

describe('the leniency rule on every endpoint (from the OpenAPI document)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('an optional field sent empty is never the reason a request fails, on any operation with a body', async () => {
    const spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, Operation>>;
    };
    // Only to know which values a field would refuse: the rule drops exactly those.
    const ajv = new Ajv({ strict: false, allErrors: false });
    let checked = 0;
    const failures: string[] = [];
    for (const [route, methods] of Object.entries(spec.paths)) {
      if (!route.startsWith('/v1/') && !route.startsWith('/v2/')) continue;
      for (const [method, operation] of Object.entries(methods)) {
        const schema = operation.requestBody?.content?.['application/json']?.schema;
        const properties = schema?.properties as Record<string, Schema> | undefined;
        if (!properties) continue;
        const required = new Set((schema!.required as string[] | undefined) ?? []);
        const url = route.replace(/\{[^}]+\}/g, '00000000-0000-0000-0000-000000000000');
        for (const [field, fieldSchema] of Object.entries(properties)) {
          if (required.has(field)) continue;
          let accepts: (value: unknown) => boolean;
          try {
            accepts = ajv.compile({ ...fieldSchema, $id: undefined }) as (value: unknown) => boolean;
          } catch {
            continue;
          }
          for (const value of EMPTY) {
            if (accepts(value)) continue;
            checked++;
            const r = await t.request(method.toUpperCase() as 'POST', url, { [field]: value });
            const errors = (r.body.errors as string[] | undefined) ?? [];
            // Treated as not given: "is required" is the one thing the field may still be told (a
            // field the route needs unless another is given, such as task without pathway_id).
            const named = errors.filter(
              (e) =>
                (e.startsWith(`${field} `) || e.startsWith(`${field}.`) || e.startsWith(`${field}[`)) &&
                !e.startsWith(`${field} is required`),
            );
            if (r.status >= 500 || named.length > 0) {
              failures.push(
                `${method.toUpperCase()} ${route} ${field}=${JSON.stringify(value)}: ${r.status} ${named.join('; ')}`,
              );
            }
          }
        }
      }
    }
    assert.ok(checked > 100, `only ${checked} cases`);
    assert.deepEqual(failures, []);
  });
});
