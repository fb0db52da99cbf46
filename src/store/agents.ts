import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';
import type { Agent, AgentConfig } from '../schemas/agent.js';

function toAgent(row: { id: string; created_at: string; config: string }): Agent {
  return { agent_id: row.id, ...(JSON.parse(row.config) as AgentConfig), created_at: row.created_at };
}

/** Agents (seed 2.6) of each account. */
export class AgentStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async create(accountId: string, config: AgentConfig): Promise<Agent> {
    const now = this.clock.now().toISOString();
    // The hosted service's agent ids are plain UUIDs; clients may validate them as such.
    const row = { id: randomUUID(), account_id: accountId, created_at: now, updated_at: now };
    await this.db
      .insertInto('agents')
      .values({ ...row, config: JSON.stringify(config) })
      .execute();
    return toAgent({ ...row, config: JSON.stringify(config) });
  }

  async list(accountId: string): Promise<Agent[]> {
    const rows = await this.db
      .selectFrom('agents')
      .select(['id', 'created_at', 'config'])
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toAgent);
  }

  async get(accountId: string, id: string): Promise<Agent | undefined> {
    const row = await this.db
      .selectFrom('agents')
      .select(['id', 'created_at', 'config'])
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? toAgent(row) : undefined;
  }

  async replace(accountId: string, id: string, config: AgentConfig): Promise<Agent | undefined> {
    const result = await this.db
      .updateTable('agents')
      .set({ config: JSON.stringify(config), updated_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return undefined;
    return this.get(accountId, id);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('agents')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
