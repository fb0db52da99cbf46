import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';
import type { A2pRegistrationRequest, A2pStatus } from '../schemas/a2p.js';

/**
 * The sandbox's deterministic verdicts, so that failures can be tested: the all-zero EIN, and a
 * businessName containing "FAIL". Null means approved.
 */
export function sandboxFailureReason(registration: A2pRegistrationRequest): string | null {
  if (/^0{2}-?0{7}$/.test(registration.ein)) {
    return 'The EIN 00-0000000 does not match a registered business (sandbox rule)';
  }
  if (registration.businessName.includes('FAIL')) {
    return 'The brand was rejected: businessName contains "FAIL" (sandbox rule)';
  }
  return null;
}

export interface A2pRegistration {
  registration_id: string;
  status: A2pStatus;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
}

type Row = Database['a2p_registrations'];

/** Where a registration handled by a carrier lives (stored with it). */
export interface ExternalA2p {
  name: 'twilio';
  /** The carrier's id of the brand registration (Twilio: BN...). */
  brand_id: string;
  /** The encrypted_key whose credentials submitted it; null: the server's own account. */
  credential_id: string | null;
}

function toRegistration(row: Pick<Row, 'id' | 'status' | 'failure_reason' | 'created_at' | 'updated_at'>) {
  return {
    registration_id: row.id,
    status: row.status as A2pStatus,
    failure_reason: row.failure_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A2P brand registrations (seed 2.9, 4.10) and the SMS webhook of inbound numbers (seed 2.10). */
export class A2pStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Stores a pending registration that the sandbox decides `delaySeconds` from now. */
  async create(
    accountId: string,
    registration: A2pRegistrationRequest,
    delaySeconds: number,
  ): Promise<A2pRegistration> {
    const now = this.clock.now();
    const row: Row = {
      id: newId('A2P-'),
      account_id: accountId,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      status: 'pending',
      failure_reason: null,
      data: JSON.stringify(registration),
      decide_at: new Date(now.getTime() + delaySeconds * 1000).toISOString(),
    };
    await this.db.insertInto('a2p_registrations').values(row).execute();
    return toRegistration(row);
  }

  /**
   * A registration of the account, decided on read once its time has come: there is no job to
   * schedule or lose, and every process answers the same.
   */
  async get(accountId: string, id: string): Promise<A2pRegistration | undefined> {
    const row = await this.db
      .selectFrom('a2p_registrations')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    const now = this.clock.now().toISOString();
    if (row.status !== 'pending' || row.decide_at === null || row.decide_at > now) return toRegistration(row);
    const reason = sandboxFailureReason(JSON.parse(row.data) as A2pRegistrationRequest);
    // Guarded by status so that concurrent readers record one verdict (the same one, as it is deterministic).
    await this.db
      .updateTable('a2p_registrations')
      .set({ status: reason ? 'failed' : 'approved', failure_reason: reason, updated_at: now })
      .where('id', '=', row.id)
      .where('status', '=', 'pending')
      .execute();
    return this.get(accountId, id);
  }

  /**
   * Stores a registration submitted to a carrier (Twilio's BrandRegistrations): pending with no
   * sandbox decision time; the carrier's verdict arrives through decide(). `carrier` says where to
   * ask (the carrier's brand id and the credentials reference used, null for the server's own).
   */
  async createExternal(
    accountId: string,
    registration: A2pRegistrationRequest,
    carrier: ExternalA2p,
  ): Promise<A2pRegistration> {
    const now = this.clock.now().toISOString();
    const row: Row = {
      id: newId('A2P-'),
      account_id: accountId,
      created_at: now,
      updated_at: now,
      status: 'pending',
      failure_reason: null,
      data: JSON.stringify({ ...registration, carrier }),
      decide_at: null,
    };
    await this.db.insertInto('a2p_registrations').values(row).execute();
    return toRegistration(row);
  }

  /** The carrier a registration of the account was submitted to; undefined for sandbox ones. */
  async external(accountId: string, id: string): Promise<ExternalA2p | undefined> {
    const row = await this.db
      .selectFrom('a2p_registrations')
      .select('data')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    const carrier = (JSON.parse(row.data) as { carrier?: ExternalA2p }).carrier;
    return carrier && typeof carrier.brand_id === 'string' ? carrier : undefined;
  }

  /** Records a carrier's verdict on a pending registration (once: a decided one stays decided). */
  async decide(id: string, status: A2pStatus, failureReason: string | null): Promise<void> {
    if (status === 'pending') return;
    await this.db
      .updateTable('a2p_registrations')
      .set({ status, failure_reason: failureReason, updated_at: this.clock.now().toISOString() })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .execute();
  }

  /** Sets (a URL) or clears (null) the SMS webhook of an inbound number; false when the account has no such number. */
  async setSmsWebhook(accountId: string, phoneNumber: string, webhook: string | null): Promise<boolean> {
    const result = await this.db
      .updateTable('inbound_numbers')
      .set({ sms_webhook: webhook, updated_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Where an SMS arriving on this number goes: its account and webhook, when the number is held. */
  async smsWebhook(phoneNumber: string): Promise<{ account_id: string; webhook: string | null } | undefined> {
    const row = await this.db
      .selectFrom('inbound_numbers')
      .select(['account_id', 'sms_webhook'])
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirst();
    return row ? { account_id: row.account_id, webhook: row.sms_webhook } : undefined;
  }
}
