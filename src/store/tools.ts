import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';
import type { CustomTool, StoredTool } from '../schemas/tool.js';

type Definition = Omit<StoredTool, 'tool_id' | 'created_at' | 'updated_at'>;

function toStored(row: { id: string; created_at: string; updated_at: string; definition: string }): StoredTool {
  return {
    tool_id: row.id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    ...(JSON.parse(row.definition) as Definition),
  };
}

/** Custom tools (seed 2.5) of each account. */
export class ToolStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async create(accountId: string, tool: CustomTool & { method: string; timeout: number }): Promise<StoredTool> {
    const now = this.clock.now().toISOString();
    const row = {
      id: newId('TL-'),
      account_id: accountId,
      created_at: now,
      updated_at: now,
      name: tool.name,
      definition: JSON.stringify(tool),
    };
    await this.db.insertInto('tools').values(row).execute();
    return toStored(row);
  }

  async list(accountId: string): Promise<StoredTool[]> {
    const rows = await this.db
      .selectFrom('tools')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toStored);
  }

  async get(accountId: string, id: string): Promise<StoredTool | undefined> {
    const row = await this.db
      .selectFrom('tools')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? toStored(row) : undefined;
  }

  /** The account's tools among `ids` (Send Call resolves tool ids with it). */
  async getMany(accountId: string, ids: string[]): Promise<StoredTool[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('tools')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', 'in', ids)
      .execute();
    return rows.map(toStored);
  }

  async replace(
    accountId: string,
    id: string,
    tool: CustomTool & { method: string; timeout: number },
  ): Promise<StoredTool | undefined> {
    const now = this.clock.now().toISOString();
    const result = await this.db
      .updateTable('tools')
      .set({ name: tool.name, definition: JSON.stringify(tool), updated_at: now })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return undefined;
    return this.get(accountId, id);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('tools')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
