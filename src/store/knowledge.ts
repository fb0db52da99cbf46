import type { Kysely, Selectable } from 'kysely';
import type { Database, KnowledgeBasesTable } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';

/** The file a knowledge base was read from. */
export interface KnowledgeFile {
  file_name: string;
  file_size: number;
  file_type: string;
}

/** A knowledge base as Openline keeps it. */
export interface KnowledgeBase {
  id: string;
  name: string;
  description: string | null;
  type: 'TEXT' | 'FILE' | 'WEB_SCRAPE';
  file: KnowledgeFile | null;
  /** The pages it was read from (WEB_SCRAPE). */
  source_urls: string[] | null;
  created_at: string;
  updated_at: string;
}

export type KnowledgeBaseWithText = KnowledgeBase & { text: string };

export interface NewKnowledgeBase {
  name: string;
  description: string | null;
  text: string;
  file?: KnowledgeFile;
  source_urls?: string[];
}

const LISTED = [
  'id',
  'name',
  'description',
  'type',
  'file_name',
  'file_size',
  'file_type',
  'source_urls',
  'created_at',
  'updated_at',
] as const;

type Listed = Pick<Selectable<KnowledgeBasesTable>, (typeof LISTED)[number]>;

function toKnowledgeBase(row: Listed): KnowledgeBase {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    type: row.type === 'FILE' || row.type === 'WEB_SCRAPE' ? row.type : 'TEXT',
    file:
      row.file_name === null
        ? null
        : { file_name: row.file_name, file_size: Number(row.file_size ?? 0), file_type: row.file_type ?? '' },
    source_urls: row.source_urls === null ? null : (JSON.parse(row.source_urls) as string[]),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Knowledge bases of each account: a name, a description and the text the agent searches. */
export class KnowledgeStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async create(accountId: string, kb: NewKnowledgeBase): Promise<KnowledgeBase> {
    const now = this.clock.now().toISOString();
    const row = {
      id: newId('KB-'),
      account_id: accountId,
      name: kb.name,
      description: kb.description,
      type: kb.file ? 'FILE' : kb.source_urls ? 'WEB_SCRAPE' : 'TEXT',
      text: kb.text,
      file_name: kb.file?.file_name ?? null,
      file_size: kb.file?.file_size ?? null,
      file_type: kb.file?.file_type ?? null,
      source_urls: kb.source_urls ? JSON.stringify(kb.source_urls) : null,
      created_at: now,
      updated_at: now,
    };
    await this.db.insertInto('knowledge_bases').values(row).execute();
    return toKnowledgeBase(row);
  }

  /** One page of the account's knowledge bases, oldest first, and how many it has in all. */
  async list(
    accountId: string,
    page: { offset: number; limit: number },
  ): Promise<{ kbs: KnowledgeBase[]; total: number }> {
    const mine = this.db.selectFrom('knowledge_bases').where('account_id', '=', accountId);
    const [rows, count] = await Promise.all([
      mine.select(LISTED).orderBy('created_at').orderBy('id').offset(page.offset).limit(page.limit).execute(),
      mine.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { kbs: rows.map(toKnowledgeBase), total: Number(count.n) };
  }

  async get(accountId: string, id: string): Promise<KnowledgeBaseWithText | undefined> {
    const row = await this.db
      .selectFrom('knowledge_bases')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? { ...toKnowledgeBase(row), text: row.text } : undefined;
  }

  /** The account's knowledge bases among `ids`, with their text (a call's tools name them). */
  async getMany(accountId: string, ids: readonly string[]): Promise<KnowledgeBaseWithText[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('knowledge_bases')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', 'in', [...ids])
      .execute();
    return rows.map((row) => ({ ...toKnowledgeBase(row), text: row.text }));
  }

  /** Which of `ids` are the account's knowledge bases, with the version of each; no text. */
  async versions(accountId: string, ids: readonly string[]): Promise<{ id: string; updated_at: string }[]> {
    if (ids.length === 0) return [];
    return this.db
      .selectFrom('knowledge_bases')
      .select(['id', 'updated_at'])
      .where('account_id', '=', accountId)
      .where('id', 'in', [...ids])
      .execute();
  }

  /** Which of `ids` are the account's knowledge bases (a call's tools may name them). */
  async existing(accountId: string, ids: readonly string[]): Promise<string[]> {
    return (await this.versions(accountId, ids)).map((row) => row.id);
  }

  /** Changes the fields given; undefined when the account has no such knowledge base. */
  async update(
    accountId: string,
    id: string,
    change: { name?: string; description?: string | null; text?: string },
  ): Promise<KnowledgeBaseWithText | undefined> {
    const result = await this.db
      .updateTable('knowledge_bases')
      .set({ ...change, updated_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return undefined;
    return this.get(accountId, id);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('knowledge_bases')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
