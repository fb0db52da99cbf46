import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { verifyWebhook, webhookHeaders } from '../../src/outbound/signing.js';

describe('webhook signatures', () => {
  const secret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
  const body = JSON.stringify({ call_id: 'c1', metadata: { a: 'é' } });
  const now = new Date();
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers = webhookHeaders(secret, { id: 'msg_1', timestamp, body });

  it('X-Webhook-Signature is the hex HMAC-SHA256 of the body keyed with the secret text', () => {
    const expected = crypto
      .createHmac('sha256', Buffer.from(secret, 'utf8'))
      .update(Buffer.from(body, 'utf8'))
      .digest('hex');
    assert.equal(headers['x-webhook-signature'], expected);
  });

  it('webhook-signature follows Standard Webhooks: v1, base64 HMAC of id.timestamp.body keyed with the base64 part', () => {
    const key = Buffer.from(secret.split('_')[1] ?? '', 'base64');
    assert.equal(key.length, 24);
    const expected = crypto.createHmac('sha256', key).update(`msg_1.${timestamp}.${body}`).digest('base64');
    assert.equal(headers['webhook-signature'], `v1,${expected}`);
    assert.equal(headers['webhook-id'], 'msg_1');
    assert.equal(headers['webhook-timestamp'], String(timestamp));
  });

  it('verifyWebhook accepts the real thing and refuses tampering, another secret, stale timestamps', () => {
    assert.equal(verifyWebhook(headers, body, secret, { now }), true);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    assert.equal(verifyWebhook(upper, body, secret, { now }), true);
    assert.equal(verifyWebhook(headers, body.replace('c1', 'c2'), secret, { now }), false);
    assert.equal(verifyWebhook(headers, body, `whsec_${crypto.randomBytes(24).toString('base64')}`, { now }), false);
    assert.equal(verifyWebhook({ ...headers, 'webhook-id': 'msg_2' }, body, secret, { now }), false);
    assert.equal(verifyWebhook(headers, body, secret, { now: new Date(now.getTime() + 600_000) }), false);
    assert.equal(verifyWebhook({ ...headers, 'x-webhook-signature': undefined }, body, secret, { now }), false);
  });
});
