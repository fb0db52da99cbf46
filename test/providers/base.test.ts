import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ProviderError, retryableStatus, withRetries, withoutSecret } from '../../src/providers/base.js';

/** A stream that yields `items` and then fails with `error` (or ends). */
async function* stream<T>(items: T[], error?: Error): AsyncGenerator<T> {
  for (const item of items) yield item;
  if (error) throw error;
}

async function drain<T>(source: AsyncIterable<T>): Promise<{ items: T[]; error: unknown }> {
  const items: T[] = [];
  try {
    for await (const item of source) items.push(item);
    return { items, error: undefined };
  } catch (error) {
    return { items, error };
  }
}

const retryable = (message = 'busy', retryAfterMs?: number) =>
  new ProviderError(message, true, 503, retryAfterMs === undefined ? {} : { retryAfterMs });

describe('provider base: retries of a stream that failed before its first item', () => {
  it('opens the stream again after a retryable failure with nothing produced, and yields the second whole', async () => {
    const opened: number[] = [];
    const told: number[] = [];
    const result = await drain(
      withRetries(
        () => {
          opened.push(opened.length);
          return opened.length === 1 ? stream<string>([], retryable()) : stream(['a', 'b']);
        },
        { retries: 2, backoffMs: 1, withinMs: 1000, onRetry: (_e, attempt) => told.push(attempt) },
      ),
    );
    assert.deepEqual(result, { items: ['a', 'b'], error: undefined });
    assert.equal(opened.length, 2);
    assert.deepEqual(told, [1]);
  });

  it('never retries once an item went out (it was used: words spoken, audio played)', async () => {
    let opened = 0;
    const result = await drain(
      withRetries(
        () => {
          opened++;
          return stream(['said'], retryable());
        },
        { retries: 3, backoffMs: 1, withinMs: 1000 },
      ),
    );
    assert.deepEqual(result.items, ['said']);
    assert.match(String(result.error), /busy/);
    assert.equal(opened, 1);
  });

  it('does not retry what cannot succeed later, nor past the retry count', async () => {
    let opened = 0;
    const final = await drain(
      withRetries(
        () => {
          opened++;
          return stream<string>([], new ProviderError('bad key', false, 401));
        },
        { retries: 3, backoffMs: 1, withinMs: 1000 },
      ),
    );
    assert.match(String(final.error), /bad key/);
    assert.equal(opened, 1);
    opened = 0;
    const many = await drain(
      withRetries(
        () => {
          opened++;
          return stream<string>([], retryable());
        },
        { retries: 2, backoffMs: 1, withinMs: 1000 },
      ),
    );
    assert.ok(many.error instanceof ProviderError);
    assert.equal(opened, 3);
  });

  it("waits the vendor's Retry-After, and gives up when the wait would end past withinMs", async () => {
    let opened = 0;
    const started = performance.now();
    const waited = await drain(
      withRetries(() => (++opened === 1 ? stream<string>([], retryable('slow down', 60)) : stream(['ok'])), {
        retries: 1,
        backoffMs: 1,
        withinMs: 5000,
      }),
    );
    assert.deepEqual(waited.items, ['ok']);
    assert.ok(performance.now() - started >= 55, 'the Retry-After was waited');
    opened = 0;
    const tooLong = await drain(
      withRetries(
        () => {
          opened++;
          return stream<string>([], retryable('come back in a minute', 60_000));
        },
        { retries: 1, backoffMs: 1, withinMs: 3000 },
      ),
    );
    assert.match(String(tooLong.error), /come back in a minute/);
    assert.equal(opened, 1);
  });

  it('an abort ends the wait and the retries', async () => {
    const controller = new AbortController();
    let opened = 0;
    const pending = drain(
      withRetries(
        () => {
          opened++;
          return stream<string>([], retryable());
        },
        { retries: 5, backoffMs: 10_000, withinMs: 60_000, signal: controller.signal },
      ),
    );
    setTimeout(() => controller.abort(), 20);
    const result = await pending;
    assert.ok(result.error instanceof ProviderError);
    assert.equal(opened, 1);
  });

  it('retryable statuses: 408, 409, 429, 5xx and a broken connection', () => {
    for (const status of [undefined, 408, 409, 429, 500, 503])
      assert.equal(retryableStatus(status), true, String(status));
    for (const status of [400, 401, 403, 404, 422]) assert.equal(retryableStatus(status), false, String(status));
  });
});

describe('provider base: vendor words without secrets', () => {
  it('cuts out the key wherever a vendor quoted it, and keys the vendor masked itself', () => {
    assert.equal(withoutSecret('bad key dg-123456 (dg-123456)', 'dg-123456'), 'bad key [redacted] ([redacted])');
    assert.equal(
      withoutSecret('Incorrect API key provided: sk-pr*************wxyz. See docs.', 'sk-other'),
      'Incorrect API key provided: [redacted]. See docs.',
    );
    assert.equal(withoutSecret('Rate limit reached', undefined), 'Rate limit reached');
  });
});
