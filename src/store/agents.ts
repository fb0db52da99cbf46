import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';
import type { Agent, AgentConfig } from '../schemas/agent.js';
import { conflict } from '../errors.js';

// A compare-and-set fails only when another writer succeeded, so 25 concurrent updates of one row all land.
const MAX_UPDATE_ATTEMPTS = 25;

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

  /**
   * Replaces the settings with `change(current)`, compare-and-set on the stored settings and
   * retried when another request changed them meanwhile, so concurrent partial updates all land.
   * undefined when the account has no such agent; errors thrown by `change` propagate.
   */
  async modify(accountId: string, id: string, change: (current: Agent) => AgentConfig): Promise<Agent | undefined> {
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const row = await this.db
        .selectFrom('agents')
        .select(['id', 'created_at', 'config'])
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) return undefined;
      const config = JSON.stringify(change(toAgent(row)));
      const result = await this.db
        .updateTable('agents')
        .set({ config, updated_at: this.clock.now().toISOString() })
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .where('config', '=', row.config)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) > 0) return toAgent({ ...row, config });
    }
    throw conflict('The agent was changed by concurrent requests; retry the update');
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
