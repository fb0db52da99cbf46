import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import type { BlockedNumbersTable, Database } from './types.js';

export type BlockedNumber = Selectable<Omit<BlockedNumbersTable, 'account_id'>>;

/** An account's blocked numbers (E.164): never called, their calls never answered. */
export class BlockedStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Adds a number (or updates its reason); returns it as stored. */
  async add(accountId: string, phone: string, reason: string | null): Promise<BlockedNumber> {
    const row = { account_id: accountId, phone_number: phone, reason, created_at: this.clock.now().toISOString() };
    await this.db
      .insertInto('blocked_numbers')
      .values(row)
      .onConflict((oc) => oc.columns(['account_id', 'phone_number']).doUpdateSet({ reason }))
      .execute();
    return (await this.get(accountId, phone))!;
  }

  get(accountId: string, phone: string): Promise<BlockedNumber | undefined> {
    return this.db
      .selectFrom('blocked_numbers')
      .select(['phone_number', 'reason', 'created_at'])
      .where('account_id', '=', accountId)
      .where('phone_number', '=', phone)
      .executeTakeFirst();
  }

  list(accountId: string): Promise<BlockedNumber[]> {
    return this.db
      .selectFrom('blocked_numbers')
      .select(['phone_number', 'reason', 'created_at'])
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('phone_number')
      .execute();
  }

  /** The numbers of `phones` that are blocked. */
  async blockedAmong(accountId: string, phones: string[]): Promise<Set<string>> {
    if (phones.length === 0) return new Set();
    const found = new Set<string>();
    for (let i = 0; i < phones.length; i += 500) {
      const rows = await this.db
        .selectFrom('blocked_numbers')
        .select('phone_number')
        .where('account_id', '=', accountId)
        .where('phone_number', 'in', phones.slice(i, i + 500))
        .execute();
      for (const r of rows) found.add(r.phone_number);
    }
    return found;
  }

  async remove(accountId: string, phone: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('blocked_numbers')
      .where('account_id', '=', accountId)
      .where('phone_number', '=', phone)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
