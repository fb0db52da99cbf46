import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyRequest } from 'fastify';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { credentialFromHeader } from '../../src/api/accounts.js';
import { ApiError } from '../../src/errors.js';
import type { Account } from '../../src/store/accounts.js';

const SID = 'AC0123456789abcdef0123456789ABCDEF';
const TOKEN = 'super-secret-auth-token-0123456789';
const twilio = { provider: 'twilio', account_sid: SID, auth_token: TOKEN };

/** The two fields credentialFromHeader reads from a request. */
function fakeRequest(account: Account, encryptedKey?: string): FastifyRequest {
  const headers: Record<string, string> = encryptedKey === undefined ? {} : { encrypted_key: encryptedKey };
  return { account, headers } as unknown as FastifyRequest;
}

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`account endpoints (${storage})`, () => {
    let t: TestApp;
    let me: Account;
    let other: Account;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
      me = (await t.services.accounts.authenticate(t.key)) as Account;
      other = (await t.services.accounts.authenticate(t.otherKey)) as Account;
    });
    after(() => t.close());

    describe('GET /v1/me', () => {
      it('returns the account and its keys without key material', async () => {
        const r = await t.request('GET', '/v1/me');
        assert.equal(r.status, 200);
        assert.equal(r.body.status, 'success');
        assert.deepEqual(r.body.account, { id: me.id, name: 'test', created_at: me.created_at });
        const keys = r.body.keys as Record<string, unknown>[];
        assert.equal(keys.length, 1);
        assert.deepEqual(Object.keys(keys[0] ?? {}).sort(), ['created_at', 'id', 'prefix', 'revoked_at']);
        assert.equal(keys[0]?.prefix, t.key.slice(0, 7));
        assert.ok(!JSON.stringify(r.body).includes(t.key), 'the key itself is never returned');
        const alsoApi = await t.request('GET', '/api/v1/me');
        assert.deepEqual(alsoApi.body, r.body);
      });

      it('answers for the account of the key used', async () => {
        const r = await t.request('GET', '/v1/me', undefined, { as: `Bearer ${t.otherKey}` });
        assert.equal(r.status, 200);
        assert.equal((r.body.account as Account).id, other.id);
      });

      it('needs a valid key', async () => {
        assert.equal((await t.request('GET', '/v1/me', undefined, { as: null })).status, 401);
        assert.equal((await t.request('GET', '/v1/me', undefined, { as: 'ol_nope' })).status, 401);
      });
    });

    describe('POST /v1/webhook-secret', () => {
      it('rotates the secret and returns the new one once', async () => {
        const before = await t.services.accounts.webhookSecret(me.id);
        const r = await t.request('POST', '/v1/webhook-secret');
        assert.equal(r.status, 200);
        assert.equal(r.body.status, 'success');
        const secret = String(r.body.webhook_secret);
        assert.match(secret, /^whsec_/);
        assert.notEqual(secret, before);
        assert.equal(await t.services.accounts.webhookSecret(me.id), secret);
        const again = await t.request('POST', '/v1/webhook-secret');
        assert.notEqual(again.body.webhook_secret, secret);
        assert.ok(!JSON.stringify((await t.request('GET', '/v1/me')).body).includes('whsec_'));
      });

      it("leaves other accounts' secrets alone and needs a key", async () => {
        const others = await t.services.accounts.webhookSecret(other.id);
        await t.request('POST', '/v1/webhook-secret');
        assert.equal(await t.services.accounts.webhookSecret(other.id), others);
        assert.equal((await t.request('POST', '/v1/webhook-secret', undefined, { as: null })).status, 401);
      });
    });

    describe('carrier credentials', () => {
      it('stores credentials encrypted and returns an opaque encrypted_key', async () => {
        const r = await t.request('POST', '/v1/accounts', { ...twilio, label: 'ignored', extra: 1 });
        assert.equal(r.status, 200);
        assert.equal(r.body.status, 'success');
        const ek = String(r.body.encrypted_key);
        assert.match(ek, /^ek_[A-Za-z0-9_-]{32}$/);
        assert.ok(!ek.includes(SID) && !ek.includes(TOKEN));
        const row = await t.services.storage.db
          .selectFrom('carrier_credentials')
          .selectAll()
          .where('id', '=', ek)
          .executeTakeFirstOrThrow();
        assert.equal(row.account_id, me.id);
        assert.equal(row.provider, 'twilio');
        assert.ok(!row.secret_enc.includes(TOKEN), 'the token is not stored in plain text');
        assert.ok(!row.secret_enc.includes(SID), 'the SID is not stored in plain text');
        assert.ok(!row.secret_enc.includes(Buffer.from(TOKEN).toString('base64')));
        assert.deepEqual(await t.services.credentials.resolve(me.id, ek), {
          provider: 'twilio',
          account_sid: SID,
          auth_token: TOKEN,
        });
      });

      it('lists references and labels, never secrets, and deletes them', async () => {
        const { body } = await t.request('POST', '/v1/accounts', twilio);
        const ek = String(body.encrypted_key);
        const list = await t.request('GET', '/v1/accounts');
        assert.equal(list.status, 200);
        const item = (list.body.accounts as Record<string, unknown>[]).find((a) => a.id === ek);
        assert.ok(item);
        assert.deepEqual(Object.keys(item).sort(), ['created_at', 'id', 'label', 'provider']);
        assert.equal(item.provider, 'twilio');
        assert.equal(item.label, 'AC…CDEF');
        assert.ok(!JSON.stringify(list.body).includes(TOKEN));
        assert.ok(!JSON.stringify(list.body).includes(SID));

        assert.equal((await t.request('DELETE', `/v1/accounts/${ek}`)).status, 200);
        assert.equal(await t.services.credentials.resolve(me.id, ek), undefined);
        assert.equal((await t.request('DELETE', `/v1/accounts/${ek}`)).status, 404);
        const after = await t.request('GET', '/v1/accounts');
        assert.ok(!(after.body.accounts as { id: string }[]).some((a) => a.id === ek));
      });

      it('refuses to delete credentials an inbound number still uses', async () => {
        const { body } = await t.request('POST', '/v1/accounts', twilio);
        const ek = String(body.encrypted_key);
        const now = new Date().toISOString();
        await t.services.storage.db
          .insertInto('inbound_numbers')
          .values({
            phone_number: '+14155550177',
            account_id: me.id,
            created_at: now,
            updated_at: now,
            carrier: 'twilio',
            credential_id: ek,
            config: '{}',
            sms_webhook: null,
          })
          .execute();
        const r = await t.request('DELETE', `/v1/accounts/${ek}`);
        assert.equal(r.status, 409);
        assert.equal(r.body.status, 'error');
        await t.services.storage.db.deleteFrom('inbound_numbers').where('phone_number', '=', '+14155550177').execute();
        assert.equal((await t.request('DELETE', `/v1/accounts/${ek}`)).status, 200);
      });

      const invalid: [string, Record<string, unknown>, string[]][] = [
        ['empty body', {}, ['provider is required']],
        ['unknown provider', { ...twilio, provider: 'vonage' }, ['provider must be one of: twilio, sip']],
        ['missing sid and token', { provider: 'twilio' }, ['account_sid is required', 'auth_token is required']],
        [
          'malformed sid, empty token',
          { provider: 'twilio', account_sid: 'AC123', auth_token: '' },
          [
            'account_sid must be a Twilio account SID: "AC" followed by 32 hexadecimal characters',
            'auth_token must not be empty',
          ],
        ],
        [
          'sid with a wrong prefix',
          { ...twilio, account_sid: 'SK0123456789abcdef0123456789abcdef' },
          ['account_sid must be a Twilio account SID: "AC" followed by 32 hexadecimal characters'],
        ],
        ['token not a string', { ...twilio, auth_token: 12 }, ['auth_token must be a string']],
      ];
      for (const [name, payload, errors] of invalid) {
        it(`rejects ${name}, naming the fields`, async () => {
          const r = await t.request('POST', '/v1/accounts', payload);
          assert.equal(r.status, 400);
          assert.equal(r.body.status, 'error');
          for (const e of errors)
            assert.ok((r.body.errors as string[]).includes(e), `${e} in ${String(r.body.errors)}`);
          assert.ok(!JSON.stringify(r.body).includes(TOKEN));
        });
      }

      it('rejects a body that is not an object', async () => {
        const r = await t.request('POST', '/v1/accounts', '[1]', { headers: { 'content-type': 'application/json' } });
        assert.equal(r.status, 400);
      });

      it("keeps each account's credentials to itself", async () => {
        const { body } = await t.request('POST', '/v1/accounts', twilio);
        const ek = String(body.encrypted_key);
        const theirs = await t.request('GET', '/v1/accounts', undefined, { as: t.otherKey });
        assert.ok(!(theirs.body.accounts as { id: string }[]).some((a) => a.id === ek));
        assert.equal((await t.request('DELETE', `/v1/accounts/${ek}`, undefined, { as: t.otherKey })).status, 404);
        assert.equal(await t.services.credentials.resolve(other.id, ek), undefined);
        assert.ok(await t.services.credentials.resolve(me.id, ek), 'still there for its owner');
        for (const [method, url] of [
          ['GET', '/v1/accounts'],
          ['POST', '/v1/accounts'],
          ['DELETE', `/v1/accounts/${ek}`],
        ] as const) {
          assert.equal(
            (await t.request(method, url, method === 'POST' ? twilio : undefined, { as: null })).status,
            401,
          );
        }
      });

      it('cannot be opened once moved to another account (the ciphertext is bound to its owner)', async () => {
        const { body } = await t.request('POST', '/v1/accounts', twilio);
        const ek = String(body.encrypted_key);
        await t.services.storage.db
          .updateTable('carrier_credentials')
          .set({ account_id: other.id })
          .where('id', '=', ek)
          .execute();
        await assert.rejects(t.services.credentials.resolve(other.id, ek), /cannot be decrypted/);
        await t.services.storage.db.deleteFrom('carrier_credentials').where('id', '=', ek).execute();
      });
    });

    describe('credentialFromHeader', () => {
      it('is undefined without the header, the credentials with a valid one', async () => {
        const { body } = await t.request('POST', '/v1/accounts', twilio);
        const ek = String(body.encrypted_key);
        assert.equal(await credentialFromHeader(fakeRequest(me), t.services), undefined);
        assert.equal(await credentialFromHeader(fakeRequest(me, '  '), t.services), undefined);
        assert.deepEqual(await credentialFromHeader(fakeRequest(me, ek), t.services), {
          provider: 'twilio',
          account_sid: SID,
          auth_token: TOKEN,
          encrypted_key: ek,
        });
      });

      it('throws UNKNOWN_ENCRYPTED_KEY (400) for an unknown or foreign reference', async () => {
        const { body } = await t.request('POST', '/v1/accounts', twilio);
        const ek = String(body.encrypted_key);
        for (const [account, key] of [
          [other, ek],
          [me, 'ek_doesnotexist'],
        ] as const) {
          await assert.rejects(credentialFromHeader(fakeRequest(account, key), t.services), (error: unknown) => {
            assert.ok(error instanceof ApiError);
            assert.equal(error.code, 'UNKNOWN_ENCRYPTED_KEY');
            assert.equal(error.statusCode, 400);
            assert.match(error.message, /^Unknown encrypted_key/);
            return true;
          });
        }
      });
    });
  });
