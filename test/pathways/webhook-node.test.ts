import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callWebhook } from '../../src/pathways/webhook.js';
import type { OutboundClient, OutboundRequest } from '../../src/outbound/http.js';

/** An outbound client that answers 200 and keeps what it was asked to send. */
function recordingClient(): { client: OutboundClient; sent: OutboundRequest[] } {
  const sent: OutboundRequest[] = [];
  const client = {
    async request(request: OutboundRequest) {
      sent.push(request);
      return { status: 200, headers: {}, body: '{}', durationMs: 1, url: request.url };
    },
  } as unknown as OutboundClient;
  return { client, sent };
}

test("a Webhook node's auth sends an Authorization header: bearer, basic, basic encoded", async () => {
  const cases: [Record<string, unknown>, string | undefined][] = [
    [{ type: 'bearer', token: 'sk-{{api_key}}' }, 'Bearer sk-123'],
    [{ type: 'Bearer', token: 'plain' }, 'Bearer plain'],
    [{ type: 'basic', token: 'dXNlcjpwYXNz' }, 'Basic dXNlcjpwYXNz'],
    [{ type: 'basic', token: 'user:pass', encode: true }, `Basic ${Buffer.from('user:pass').toString('base64')}`],
    [{ type: 'bearer', token: '' }, undefined],
    [{}, undefined],
  ];
  for (const [auth, expected] of cases) {
    const { client, sent } = recordingClient();
    const result = await callWebhook({ url: 'https://hooks.example.com/lead', auth }, { api_key: '123' }, client);
    assert.equal(result.ok, true);
    assert.equal(sent[0]?.headers?.Authorization, expected, JSON.stringify(auth));
  }
  // An Authorization header of the node's own wins over auth.
  const { client, sent } = recordingClient();
  await callWebhook(
    {
      url: 'https://hooks.example.com/lead',
      headers: [['authorization', 'Token mine']],
      auth: { type: 'bearer', token: 'other' },
    },
    {},
    client,
  );
  assert.deepEqual(sent[0]?.headers, { authorization: 'Token mine' });
});
