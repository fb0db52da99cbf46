import type { Kysely } from 'kysely';
import type { Database, InboundNumbersTable } from './types.js';
import type { Clock } from '../clock.js';
import { conflict } from '../errors.js';
import { DEFAULT_INBOUND_CONFIG, type InboundConfig, type InboundNumber } from '../schemas/inbound.js';

/** The sandbox numbers an account can hold: 555-0200..0999; 0100-0199 are the sandbox personas. */
export const SANDBOX_FIRST_LINE = 200;
export const SANDBOX_LAST_LINE = 999;

export function sandboxNumber(areaCode: string, line: number): string {
  return `+1${areaCode}555${String(line).padStart(4, '0')}`;
}

/** Whether the number is one of the sandbox personas (CONTRACT.md section 6), which nobody can hold. */
export function isSandboxPersona(e164: string): boolean {
  return /^\+1\d{3}55501\d{2}$/.test(e164);
}

type Row = Pick<InboundNumbersTable, 'phone_number' | 'created_at' | 'updated_at' | 'carrier' | 'config'>;

function toNumber(row: Row): InboundNumber {
  // Settings added after a number was stored read as their defaults.
  const config = { ...DEFAULT_INBOUND_CONFIG, ...(JSON.parse(row.config) as Partial<InboundConfig>) };
  return {
    phone_number: row.phone_number,
    created_at: row.created_at,
    updated_at: row.updated_at,
    carrier: row.carrier,
    ...config,
  };
}

const COLUMNS = ['phone_number', 'created_at', 'updated_at', 'carrier', 'config'] as const;
// A compare-and-set fails only when another writer succeeded, so 25 concurrent updates of one row all land.
const MAX_UPDATE_ATTEMPTS = 25;

/**
 * Inbound numbers and their configuration (seed 2.4). A number is held by at most one account
 * (phone_number is the primary key), so every read is scoped by account except the carrier's
 * lookup of who answers a call.
 */
export class InboundStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Takes `phone` for the account; undefined when any account already holds it. */
  async create(
    accountId: string,
    phone: string,
    config: InboundConfig,
    options: { carrier?: string; credentialId?: string | null } = {},
  ): Promise<InboundNumber | undefined> {
    const now = this.clock.now().toISOString();
    const row = {
      phone_number: phone,
      account_id: accountId,
      created_at: now,
      updated_at: now,
      carrier: options.carrier ?? 'sandbox',
      credential_id: options.credentialId ?? null,
      config: JSON.stringify(config),
      sms_webhook: null,
    };
    // ON CONFLICT DO NOTHING rather than a read first: two purchases of one number may race.
    const result = await this.db
      .insertInto('inbound_numbers')
      .values(row)
      .onConflict((oc) => oc.column('phone_number').doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) return undefined;
    return toNumber(row);
  }

  /** Whether any account holds the number. */
  async isHeld(phone: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('inbound_numbers')
      .select('phone_number')
      .where('phone_number', '=', phone)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Gives the account the first free sandbox number of the area code, with `config`; undefined
   * when all of them are held.
   */
  async allocateSandbox(
    accountId: string,
    areaCode: string,
    config: InboundConfig,
  ): Promise<InboundNumber | undefined> {
    const first = sandboxNumber(areaCode, SANDBOX_FIRST_LINE);
    const last = sandboxNumber(areaCode, SANDBOX_LAST_LINE);
    const held = new Set(
      (
        await this.db
          .selectFrom('inbound_numbers')
          .select('phone_number')
          .where('phone_number', '>=', first)
          .where('phone_number', '<=', last)
          .execute()
      ).map((r) => r.phone_number),
    );
    for (let line = SANDBOX_FIRST_LINE; line <= SANDBOX_LAST_LINE; line++) {
      const phone = sandboxNumber(areaCode, line);
      if (held.has(phone)) continue;
      const created = await this.create(accountId, phone, config);
      if (created) return created;
    }
    return undefined;
  }

  /** The account's numbers with their carrier and credentials, oldest first (who can send an SMS). */
  senders(accountId: string): Promise<{ phone_number: string; carrier: string; credential_id: string | null }[]> {
    return this.db
      .selectFrom('inbound_numbers')
      .select(['phone_number', 'carrier', 'credential_id'])
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('phone_number')
      .execute();
  }

  async list(accountId: string): Promise<InboundNumber[]> {
    const rows = await this.db
      .selectFrom('inbound_numbers')
      .select(COLUMNS)
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('phone_number')
      .execute();
    return rows.map(toNumber);
  }

  async get(accountId: string, phone: string): Promise<InboundNumber | undefined> {
    const row = await this.db
      .selectFrom('inbound_numbers')
      .select(COLUMNS)
      .where('account_id', '=', accountId)
      .where('phone_number', '=', phone)
      .executeTakeFirst();
    return row ? toNumber(row) : undefined;
  }

  /**
   * Removes the account's number from Openline (and its SMS settings): its calls and messages are
   * no longer answered here. The carrier keeps the number. False: the account does not hold it.
   */
  async remove(accountId: string, phone: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom('inbound_numbers')
        .where('account_id', '=', accountId)
        .where('phone_number', '=', phone)
        .executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) return false;
      await trx
        .deleteFrom('sms_configs')
        .where('account_id', '=', accountId)
        .where('phone_number', '=', phone)
        .execute();
      return true;
    });
  }

  /**
   * Puts the account's number on a carrier's credentials (an account's own SIP trunk: the number
   * is one of the trunk's). false when the account does not hold the number.
   */
  async bindCarrier(accountId: string, phone: string, carrier: string, credentialId: string): Promise<boolean> {
    const result = await this.db
      .updateTable('inbound_numbers')
      .set({ carrier, credential_id: credentialId, updated_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('phone_number', '=', phone)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Who holds a number, for routing a call that arrives on it (not for API replies). */
  async findHolder(
    phone: string,
  ): Promise<{ accountId: string; credentialId: string | null; number: InboundNumber } | undefined> {
    const row = await this.db
      .selectFrom('inbound_numbers')
      .select([...COLUMNS, 'account_id', 'credential_id'])
      .where('phone_number', '=', phone)
      .executeTakeFirst();
    return row ? { accountId: row.account_id, credentialId: row.credential_id, number: toNumber(row) } : undefined;
  }

  /**
   * Replaces the configuration with `change(current)`. The write only succeeds if the stored
   * configuration is still the one `change` saw (compare-and-set), and is retried otherwise, so
   * that two concurrent partial updates cannot silently undo each other. undefined when the
   * account does not hold the number; errors thrown by `change` propagate and nothing is written.
   */
  async modifyConfig(
    accountId: string,
    phone: string,
    change: (current: InboundNumber) => InboundConfig,
  ): Promise<InboundNumber | undefined> {
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const row = await this.db
        .selectFrom('inbound_numbers')
        .select(COLUMNS)
        .where('account_id', '=', accountId)
        .where('phone_number', '=', phone)
        .executeTakeFirst();
      if (!row) return undefined;
      const config = change(toNumber(row));
      const result = await this.db
        .updateTable('inbound_numbers')
        .set({ config: JSON.stringify(config), updated_at: this.clock.now().toISOString() })
        .where('account_id', '=', accountId)
        .where('phone_number', '=', phone)
        .where('config', '=', row.config)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) > 0) return this.get(accountId, phone);
    }
    throw conflict('The inbound number was changed by concurrent requests; retry the update');
  }
}
