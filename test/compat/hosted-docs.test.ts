import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { HOSTED_DOC_EXAMPLES, type DocExample, type JsonType } from './hosted-docs.examples.js';

type Kept = Record<string, string>;

/** `{name}` (not `{{name}}`) in every string of a value, from the values kept so far. */
function fill<T>(value: T, kept: Kept): T {
  if (typeof value === 'string') {
    return value.replace(/(?<!\{)\{([a-z0-9_]+)\}(?!\})/g, (whole, name: string) => kept[name] ?? whole) as T;
  }
  if (Array.isArray(value)) return value.map((v: unknown) => fill(v, kept)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, kept)])) as T;
  }
  return value;
}

function typeOf(value: unknown): JsonType | 'undefined' {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value as JsonType;
}

/**
 * Every value at a path: `a.b`, `a[0].b`, `a[].b` (each item of a non-empty array); a path that
 * starts with `[]` reads the body itself as an array. A step that cannot go on yields `undefined`.
 */
function valuesAt(body: unknown, path: string): unknown[] {
  const steps = path
    .replace(/\[(\d*)\]/g, '.[$1]')
    .split('.')
    .filter(Boolean);
  let current: unknown[] = [body];
  for (const step of steps) {
    const next: unknown[] = [];
    for (const value of current) {
      if (step === '[]') {
        if (!Array.isArray(value) || value.length === 0) next.push(undefined);
        else next.push(...(value as unknown[]));
      } else if (step.startsWith('[')) {
        next.push(Array.isArray(value) ? (value as unknown[])[Number(step.slice(1, -1))] : undefined);
      } else {
        next.push(value && typeof value === 'object' ? (value as Record<string, unknown>)[step] : undefined);
      }
    }
    current = next;
  }
  return current;
}

describe('the hosted API documentation examples, sent as a hosted client sends them, over HTTP', () => {
  let t: TestApp;
  let origin = '';
  const kept: Kept = {};

  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(50) });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => t.close());

  /** As a client of the hosted API: the key alone in `authorization`, JSON bodies. */
  async function send(
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { ...extra, authorization: t.key };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(`${origin}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  async function waitUntilEnded(callId: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      const call = (await (await send('GET', `/v1/calls/${callId}`)).json()) as Record<string, unknown>;
      if (call.completed === true || String(call.queue_status).endsWith('error')) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`call ${callId} did not end`);
  }

  async function run(example: DocExample): Promise<void> {
    if (example.afterCallEnds) await waitUntilEnded(kept[example.afterCallEnds]!);
    const path = fill(example.path, kept);
    const body = fill(example.body, kept);
    const response = await send(example.method, path, body, fill(example.headers, kept));
    const where = `${example.method} ${path} (${example.source})`;

    if (example.answer === 'audio') {
      const audio = Buffer.from(await response.arrayBuffer());
      assert.equal(response.status, example.status, `${where}: ${audio.toString('utf8', 0, 300)}`);
      assert.match(String(response.headers.get('content-type')), /^audio\//, where);
      assert.equal(audio.toString('ascii', 0, 4), 'RIFF', `${where}: a WAV file`);
      return;
    }

    const text = await response.text();
    assert.equal(response.status, example.status, `${where}: ${text.slice(0, 800)}`);
    let json: unknown;
    if (example.answer === 'events') {
      assert.match(String(response.headers.get('content-type')), /^text\/event-stream/, where);
      json = text
        .split('\n\n')
        .filter((block) => block.startsWith('event: '))
        .map((block) => {
          const [event, data] = block.split('\n');
          return { event: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) as unknown };
        });
    } else {
      assert.match(String(response.headers.get('content-type')), /application\/json/, where);
      json = JSON.parse(text) as unknown;
    }

    const wrong: string[] = [];
    for (const [field, expected] of Object.entries(example.reads ?? {})) {
      const allowed = Array.isArray(expected) ? expected : [expected];
      for (const value of valuesAt(json, field)) {
        const actual = typeOf(value);
        if (!(allowed as string[]).includes(actual))
          wrong.push(`${field}: ${actual}, the docs show ${allowed.join(' or ')}`);
      }
    }
    for (const [field, expected] of Object.entries(example.equals ?? {})) {
      for (const value of valuesAt(json, field)) {
        if (JSON.stringify(value) !== JSON.stringify(expected)) {
          wrong.push(`${field}: ${JSON.stringify(value)}, the docs show ${JSON.stringify(expected)}`);
        }
      }
    }
    assert.deepEqual(wrong, [], `${where}\n${text.slice(0, 1500)}`);

    for (const [name, field] of Object.entries(example.keep ?? {})) {
      const value = valuesAt(json, field)[0];
      assert.ok(typeof value === 'string' || typeof value === 'number', `${where}: ${field} to keep`);
      kept[name] = String(value);
      // The inbound path's other documented form: the number's digits without the `+`.
      if (kept[name].startsWith('+')) kept[`${name}_digits`] = kept[name].slice(1);
    }
  }

  for (const example of HOSTED_DOC_EXAMPLES) {
    it(`${example.title}: ${example.method} ${example.path}`, () => run(example));
  }
});
