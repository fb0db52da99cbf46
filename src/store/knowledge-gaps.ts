import type { Kysely, Selectable } from 'kysely';
import type { Database, KnowledgeGapsTable } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';
import { ownedRows, type OwnedRows } from './owned.js';

export type KnowledgeGapStatus = 'open' | 'resolved' | 'dismissed';

/** A question a caller asked that the call's knowledge bases had nothing on. */
export interface KnowledgeGap {
  id: string;
  call_id: string;
  persona_id: string | null;
  knowledge_base_ids: string[];
  question: string;
  status: KnowledgeGapStatus;
  /** What the account answered it with, once resolved. */
  answer: string | null;
  created_at: string;
  resolved_at: string | null;
}

export interface NewKnowledgeGap {
  callId: string;
  personaId: string | null;
  knowledgeBaseIds: readonly string[];
  question: string;
}

function toGap(row: Selectable<KnowledgeGapsTable>): KnowledgeGap {
  return {
    id: row.id,
    call_id: row.call_id,
    persona_id: row.persona_id,
    knowledge_base_ids: JSON.parse(row.knowledge_base_ids) as string[],
    question: row.question,
    status: row.status === 'resolved' || row.status === 'dismissed' ? row.status : 'open',
    answer: row.answer,
    created_at: row.created_at,
    resolved_at: row.resolved_at,
  };
}

/** Knowledge gaps of each account (GET /v1/knowledge/gaps): what callers asked that went unanswered. */
export class KnowledgeGapStore {
  private readonly rows: OwnedRows<'knowledge_gaps'>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {
    this.rows = ownedRows(db, 'knowledge_gaps');
  }

  async record(accountId: string, gap: NewKnowledgeGap): Promise<void> {
    await this.db
      .insertInto('knowledge_gaps')
      .values({
        id: newId('GAP-'),
        account_id: accountId,
        call_id: gap.callId,
        persona_id: gap.personaId,
        knowledge_base_ids: JSON.stringify(gap.knowledgeBaseIds),
        question: gap.question,
        status: 'open',
        answer: null,
        created_at: this.clock.now().toISOString(),
        resolved_at: null,
      })
      .execute();
  }

  /** One page of the account's gaps, newest first, filtered; and how many match in all. */
  async list(
    accountId: string,
    filter: { knowledgeBaseId?: string; personaId?: string; status?: KnowledgeGapStatus },
    page: { offset: number; limit: number },
  ): Promise<{ gaps: KnowledgeGap[]; total: number }> {
    let mine = this.db.selectFrom('knowledge_gaps').where('account_id', '=', accountId);
    if (filter.status) mine = mine.where('status', '=', filter.status);
    if (filter.personaId) mine = mine.where('persona_id', '=', filter.personaId);
    if (filter.knowledgeBaseId)
      mine = mine.where('knowledge_base_ids', 'like', `%${JSON.stringify(filter.knowledgeBaseId)}%`);
    const [rows, count] = await Promise.all([
      mine
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .offset(page.offset)
        .limit(page.limit)
        .execute(),
      mine.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { gaps: rows.map(toGap), total: Number(count.n) };
  }

  async get(accountId: string, id: string): Promise<KnowledgeGap | undefined> {
    const row = await this.rows.get(accountId, id);
    return row && toGap(row);
  }

  /** Closes a gap: resolved (with the answer given, if any) or dismissed. */
  async close(
    accountId: string,
    id: string,
    outcome: { status: 'resolved' | 'dismissed'; answer: string | null },
  ): Promise<KnowledgeGap | undefined> {
    await this.db
      .updateTable('knowledge_gaps')
      .set({ status: outcome.status, answer: outcome.answer, resolved_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();
    return this.get(accountId, id);
  }
}
