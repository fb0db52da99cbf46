import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import type { BatchesTable, Database } from './types.js';
import { ownedRows, type OwnedRows } from './owned.js';

export type BatchRow = Selectable<BatchesTable>;

/** Batches of calls (the hosted API's /v1/batches and /v2/batches); their calls carry batch_id. */
export class BatchStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {
    this.rows = ownedRows(db, 'batches');
  }

  private readonly rows: OwnedRows<'batches'>;

  newId(): string {
    return randomUUID();
  }

  async create(
    accountId: string,
    batch: { id: string; label: string | null; call_count: number; settings: Record<string, unknown> },
  ): Promise<BatchRow> {
    const row: BatchRow = {
      id: batch.id,
      account_id: accountId,
      created_at: this.clock.now().toISOString(),
      label: batch.label,
      call_count: batch.call_count,
      settings: JSON.stringify(batch.settings),
      stopped_at: null,
    };
    await this.db.insertInto('batches').values(row).execute();
    return row;
  }

  get(accountId: string, id: string): Promise<BatchRow | undefined> {
    return this.rows.get(accountId, id);
  }

  list(accountId: string, limit = 1000): Promise<BatchRow[]> {
    return this.rows.list(accountId, limit);
  }

  async markStopped(accountId: string, id: string): Promise<void> {
    await this.db
      .updateTable('batches')
      .set({ stopped_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .where('stopped_at', 'is', null)
      .execute();
  }

  /** The calls of a batch by queue_status: what its progress is made of. */
  async counts(accountId: string, id: string): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('calls')
      .select(['queue_status', (eb) => eb.fn.countAll<number | string>().as('n')])
      .where('account_id', '=', accountId)
      .where('batch_id', '=', id)
      .groupBy('queue_status')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.queue_status, Number(r.n)]));
  }
}
