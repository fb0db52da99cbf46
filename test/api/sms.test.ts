import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { A2P_BUSINESS_TYPES, A2P_VERTICALS, isExecutivePosition } from '../../src/schemas/a2p.js';
import type { Account } from '../../src/store/accounts.js';
import { ScaledClock } from '../../src/clock.js';
import { A2P_REGISTRATION } from '../../src/testing/a2p.js';

const valid = A2P_REGISTRATION;

const ACCEPTED_POSITIONS = [
  'CEO',
  'ceo',
  'CFO',
  'COO',
  'CTO',
  'CIO',
  'CMO',
  'CISO',
  'Co-CEO',
  'President & CEO',
  'Chief Executive Officer',
  'Chief Revenue Officer',
  'chief marketing officer',
  'President',
  'Vice President',
  'Vice-President of Sales',
  'VP',
  'VP Engineering',
  'VP, Marketing',
  'SVP',
  'EVP Operations',
  'Senior Vice President',
];
const REJECTED_POSITIONS = [
  'Manager',
  'Director',
  'Office Manager',
  'Engineer',
  'Chief of Staff',
  'Assistant Vice President',
  'Executive Assistant to the CEO',
  'Cargo handler',
  '???',
];

/** Real time plus an offset the tests move by hand (the other services still see time pass). */
class ShiftedClock extends ScaledClock {
  private offset = 0;
  override now(): Date {
    return new Date(super.now().getTime() + this.offset);
  }
  advance(seconds: number): void {
    this.offset += seconds * 1000;
  }
}

function errorsOf(body: Record<string, unknown>): string[] {
  return (body.errors as string[] | undefined) ?? [];
}

describe('A2P rules (no storage)', () => {
  for (const position of ACCEPTED_POSITIONS) {
    it(`accepts the position "${position}"`, () => assert.equal(isExecutivePosition(position), true));
  }
  for (const position of REJECTED_POSITIONS) {
    it(`rejects the position "${position}"`, () => assert.equal(isExecutivePosition(position), false));
  }
});

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`SMS endpoints (${storage})`, () => {
    let t: TestApp;
    let me: Account;
    const clock = new ShiftedClock();
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres', clock });
      me = (await t.services.accounts.authenticate(t.key)) as Account;
    });
    after(() => t.close());

    async function register(body: unknown, url = '/v1/sms/register', as?: string) {
      return t.request('POST', url, body, as === undefined ? {} : { as });
    }

    describe('POST /v1/sms/register', () => {
      it('accepts a complete registration and stores it as pending', async () => {
        const r = await register({ ...valid, unknown_field: 'ignored' });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'success');
        assert.equal(r.body.message, 'A2P brand registration submitted');
        const data = r.body.data as Record<string, unknown>;
        assert.equal(data.status, 'pending');
        const age = clock.now().getTime() - Date.parse(String(data.created_at));
        assert.ok(age >= 0 && age < 60_000, String(data.created_at));
        const row = await t.services.storage.db
          .selectFrom('a2p_registrations')
          .selectAll()
          .where('id', '=', String(data.registration_id))
          .executeTakeFirstOrThrow();
        assert.equal(row.account_id, me.id);
        assert.equal(row.status, 'pending');
        const stored = JSON.parse(row.data) as Record<string, unknown>;
        assert.equal(stored.businessName, valid.businessName);
        assert.equal(stored.unknown_field, undefined, 'only the fields of seed 2.9 are kept');
      });

      it('is also served as POST /api/registerA2PBrand and under /api/v1', async () => {
        for (const url of ['/api/registerA2PBrand', '/api/v1/sms/register']) {
          const r = await register(valid, url);
          assert.equal(r.status, 200, url);
          assert.equal((r.body.data as Record<string, unknown>).status, 'pending');
          const bad = await register({ ...valid, state: 'XX' }, url);
          assert.equal(bad.status, 400, url);
          assert.equal((await register(valid, url, '')).status, 401, url);
        }
        assert.equal((await t.request('POST', '/api/registerA2PBrand', valid, { as: null })).status, 401);
      });

      it('names every missing field at once', async () => {
        const r = await register({});
        assert.equal(r.status, 400);
        assert.equal(r.body.status, 'error');
        const errors = errorsOf(r.body);
        for (const field of Object.keys(valid)) assert.ok(errors.includes(`${field} is required`), field);
        const nested = await register({ ...valid, trusted_user: {} });
        for (const field of Object.keys(valid.trusted_user)) {
          assert.ok(errorsOf(nested.body).includes(`trusted_user.${field} is required`), field);
        }
      });

      it('accepts every vertical of the seed and rejects others, naming the field', async () => {
        for (const vertical of A2P_VERTICALS) {
          assert.equal((await register({ ...valid, vertical })).status, 200, vertical);
        }
        for (const vertical of ['automotive', 'SPORTS', '', 3]) {
          const r = await register({ ...valid, vertical });
          assert.equal(r.status, 400, String(vertical));
          assert.ok(
            errorsOf(r.body).some((e) => e.startsWith('vertical must')),
            String(errorsOf(r.body)),
          );
        }
      });

      it('accepts every business type of the seed and rejects others', async () => {
        for (const type of A2P_BUSINESS_TYPES) {
          assert.equal((await register({ ...valid, type })).status, 200, type);
        }
        for (const type of ['LLC', 'corporation', 'Sole Proprietor']) {
          const r = await register({ ...valid, type });
          assert.equal(r.status, 400, type);
          assert.ok(errorsOf(r.body).some((e) => e.startsWith('type must be one of')));
        }
      });

      it('checks state codes', async () => {
        for (const state of ['CA', 'ny', 'DC', 'PR', 'TX']) {
          assert.equal((await register({ ...valid, state })).status, 200, state);
        }
        for (const state of ['XX', 'California', '', 'C']) {
          const r = await register({ ...valid, state });
          assert.equal(r.status, 400, state);
          assert.ok(errorsOf(r.body).includes('state must be a valid US state code such as CA'), state);
        }
      });

      it('checks EIN forms', async () => {
        for (const ein of ['12-3456789', '123456789']) {
          assert.equal((await register({ ...valid, ein })).status, 200, ein);
        }
        for (const ein of ['12345678', '123-456789', '12-34567890', 'AB-CDEFGHI', '', '12 3456789']) {
          const r = await register({ ...valid, ein });
          assert.equal(r.status, 400, ein);
          assert.ok(errorsOf(r.body).includes('ein must be a US EIN: NN-NNNNNNN or 9 digits'), ein);
        }
      });

      it('requires exactly three non-empty message samples', async () => {
        for (const messageSamples of [['a', 'b'], ['a', 'b', 'c', 'd'], [], 'one']) {
          const r = await register({ ...valid, messageSamples });
          assert.equal(r.status, 400, JSON.stringify(messageSamples));
          assert.ok(
            errorsOf(r.body).includes('messageSamples must be an array of exactly 3 sample messages'),
            String(errorsOf(r.body)),
          );
        }
        const blank = await register({ ...valid, messageSamples: ['a', ' ', 'c'] });
        assert.equal(blank.status, 400);
        assert.ok(errorsOf(blank.body).includes('messageSamples[1] must be a non-empty string'));
      });

      it('accepts C-suite and VP positions and rejects others', async () => {
        for (const position of ['CEO', 'Chief Operating Officer', 'VP of Sales', 'President', 'evp']) {
          const r = await register({ ...valid, trusted_user: { ...valid.trusted_user, position } });
          assert.equal(r.status, 200, position);
        }
        for (const position of ['Manager', 'Director', 'Assistant Vice President']) {
          const r = await register({ ...valid, trusted_user: { ...valid.trusted_user, position } });
          assert.equal(r.status, 400, position);
          assert.ok(
            errorsOf(r.body).some((e) => e.startsWith('trusted_user.position must be a C-suite or VP level title')),
            String(errorsOf(r.body)),
          );
        }
      });

      it('reports schema problems and the position rule together', async () => {
        const r = await register({
          ...valid,
          email: 'not-an-email',
          website: 'acme',
          trusted_user: { ...valid.trusted_user, position: 'Manager', phone_number: '555', email: 'x' },
        });
        assert.equal(r.status, 400);
        const errors = errorsOf(r.body);
        assert.ok(errors.includes('email must be a valid email'), String(errors));
        assert.ok(errors.includes('website must be a valid URL'), String(errors));
        assert.ok(errors.includes('trusted_user.email must be a valid email'), String(errors));
        assert.ok(
          errors.some((e) => e.startsWith('trusted_user.phone_number ')),
          String(errors),
        );
        assert.ok(
          errors.some((e) => e.startsWith('trusted_user.position ')),
          String(errors),
        );
      });
    });

    describe('POST /v1/sms/register/status', () => {
      async function submit(overrides: Record<string, unknown> = {}): Promise<string> {
        const r = await register({ ...valid, ...overrides });
        assert.equal(r.status, 200);
        return String((r.body.data as Record<string, unknown>).registration_id);
      }
      const status = (registration_id: string, as?: string) =>
        t.request('POST', '/v1/sms/register/status', { registration_id }, as === undefined ? {} : { as });

      it('is pending until the sandbox delay passes, then approved', async () => {
        const id = await submit();
        const pending = await status(id);
        assert.equal(pending.status, 200);
        assert.deepEqual(pending.body, {
          status: 'pending',
          registration_id: id,
          brandType: 'STANDARD',
          failureReason: null,
        });
        clock.advance(59);
        assert.equal((await status(id)).body.status, 'pending');
        clock.advance(2);
        const approved = await status(id);
        assert.deepEqual(approved.body, {
          status: 'approved',
          registration_id: id,
          brandType: 'STANDARD',
          failureReason: null,
        });
        assert.equal((await status(id)).body.status, 'approved', 'the verdict is stored');
      });

      it('fails deterministically for the zero EIN or a businessName containing FAIL', async () => {
        const zero = await submit({ ein: '000000000' });
        const named = await submit({ businessName: 'Acme FAIL Test' });
        clock.advance(61);
        const a = await status(zero);
        assert.equal(a.body.status, 'failed');
        assert.match(String(a.body.failureReason), /EIN 00-0000000/);
        const b = await status(named);
        assert.equal(b.body.status, 'failed');
        assert.match(String(b.body.failureReason), /businessName contains "FAIL"/);
        const row = await t.services.storage.db
          .selectFrom('a2p_registrations')
          .select(['status', 'failure_reason'])
          .where('id', '=', named)
          .executeTakeFirstOrThrow();
        assert.equal(row.status, 'failed');
        assert.ok(row.failure_reason);
      });

      it('answers 404 for unknown or foreign registrations, 400 without an id, 401 without a key', async () => {
        const id = await submit();
        assert.equal((await status(id, t.otherKey)).status, 404);
        assert.equal((await status('A2P-nope')).status, 404);
        const missing = await t.request('POST', '/v1/sms/register/status', {});
        assert.equal(missing.status, 400);
        assert.ok(errorsOf(missing.body).includes('registration_id is required'));
        assert.equal(
          (await t.request('POST', '/v1/sms/register/status', { registration_id: id }, { as: null })).status,
          401,
        );
      });
    });

    describe('POST /v1/sms/webhook/update', () => {
      const NUMBER = '+14155550142';
      const FOREIGN = '+14155550143';
      before(async () => {
        const other = (await t.services.accounts.authenticate(t.otherKey)) as Account;
        const now = new Date().toISOString();
        for (const [phone_number, account_id] of [
          [NUMBER, me.id],
          [FOREIGN, other.id],
        ] as const) {
          await t.services.storage.db
            .insertInto('inbound_numbers')
            .values({
              phone_number,
              account_id,
              created_at: now,
              updated_at: now,
              carrier: 'sandbox',
              credential_id: null,
              config: '{}',
              sms_webhook: null,
            })
            .execute();
        }
      });
      const stored = async (phone: string) => (await t.services.a2p.smsWebhook(phone))?.webhook;
      const update = (body: unknown, as?: string) =>
        t.request('POST', '/v1/sms/webhook/update', body, as === undefined ? {} : { as });

      it('sets the webhook, with the number in any of its forms', async () => {
        for (const phone_number of [NUMBER, '4155550142', '14155550142', '(415) 555-0142']) {
          const webhook = `https://hooks.example.com/sms/${phone_number.length}`;
          const r = await update({ phone_number, webhook });
          assert.equal(r.status, 200, phone_number);
          assert.deepEqual(r.body, { status: 'success', phone_number: NUMBER, webhook });
          assert.equal(await stored(NUMBER), webhook);
        }
      });

      it('clears it with null, false or ""', async () => {
        for (const webhook of [null, false, '']) {
          await update({ phone_number: NUMBER, webhook: 'https://hooks.example.com/sms' });
          const r = await update({ phone_number: NUMBER, webhook });
          assert.equal(r.status, 200, String(webhook));
          assert.deepEqual(r.body, { status: 'success', phone_number: NUMBER, webhook: null });
          assert.equal(await stored(NUMBER), null);
        }
      });

      it('rejects true, non-URLs and missing fields, naming them', async () => {
        const yes = await update({ phone_number: NUMBER, webhook: true });
        assert.equal(yes.status, 400);
        assert.deepEqual(errorsOf(yes.body), ['webhook must be a URL, or null/false to clear']);
        const notUrl = await update({ phone_number: NUMBER, webhook: 'hooks.example.com' });
        assert.equal(notUrl.status, 400);
        assert.deepEqual(errorsOf(notUrl.body), ['webhook must be a valid URL']);
        const ftp = await update({ phone_number: NUMBER, webhook: 'ftp://hooks.example.com' });
        assert.equal(ftp.status, 400);
        const missing = await update({});
        assert.deepEqual(errorsOf(missing.body).sort(), ['phone_number is required', 'webhook is required']);
        const badNumber = await update({ phone_number: 'call me', webhook: null });
        assert.equal(badNumber.status, 400);
        assert.ok(errorsOf(badNumber.body)[0]?.startsWith('phone_number '));
      });

      it("answers 404 for a number the account does not hold, and leaves others' numbers alone", async () => {
        const foreign = await update({ phone_number: FOREIGN, webhook: 'https://evil.example.com' });
        assert.equal(foreign.status, 404);
        assert.equal(foreign.body.status, 'error');
        assert.equal(await stored(FOREIGN), null);
        assert.equal((await update({ phone_number: '+14155550199', webhook: null })).status, 404);
        const theirs = await update({ phone_number: FOREIGN, webhook: 'https://ok.example.com' }, t.otherKey);
        assert.equal(theirs.status, 200);
        assert.equal((await update({ phone_number: NUMBER, webhook: null }, t.otherKey)).status, 404);
        assert.equal((await update({ phone_number: NUMBER, webhook: null }, '')).status, 401);
      });
    });
  });
