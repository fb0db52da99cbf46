import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Database, KnowledgeBasesTable, KnowledgeVersionsTable } from './types.js';
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

/** One text a knowledge base has had (its versions, oldest first: the last is the current one). */
export interface KnowledgeVersion {
  id: string;
  version_number: number;
  /** What made it: `created`, `content` (its text replaced), `urls` (its pages replaced), `restored from version N`. */
  change: string;
  characters: number;
  source_urls: string[] | null;
  created_at: string;
}

/** A change of a knowledge base's words: its text, and the pages it was read from when they changed. */
export interface KnowledgeTextChange {
  text: string;
  source_urls?: string[];
  /** Recorded with the version it makes (KnowledgeVersion.change). */
  change: string;
}

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

/** Records one text of a knowledge base (inside the transaction that changes it). */
async function addVersion(
  tx: Kysely<Database>,
  version: Omit<Insertable<KnowledgeVersionsTable>, 'id'>,
): Promise<void> {
  await tx
    .insertInto('knowledge_versions')
    .values({ id: newId('KBV-'), ...version })
    .execute();
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
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('knowledge_bases').values(row).execute();
      await addVersion(tx, {
        kb_id: row.id,
        account_id: accountId,
        version_number: 1,
        text: row.text,
        source_urls: row.source_urls,
        change: 'created',
        created_at: now,
      });
    });
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

  /**
   * Changes the fields given; a change of its words (`words`) becomes its next version. Undefined
   * when the account has no such knowledge base.
   */
  async update(
    accountId: string,
    id: string,
    change: { name?: string; description?: string | null; words?: KnowledgeTextChange },
  ): Promise<KnowledgeBaseWithText | undefined> {
    const now = this.clock.now().toISOString();
    const { words, ...about } = change;
    const updated = await this.db.transaction().execute(async (tx) => {
      const result = await tx
        .updateTable('knowledge_bases')
        .set({
          ...about,
          ...(words && { text: words.text }),
          ...(words?.source_urls && { source_urls: JSON.stringify(words.source_urls), type: 'WEB_SCRAPE' }),
          updated_at: now,
        })
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return false;
      if (words) {
        const last = await tx
          .selectFrom('knowledge_versions')
          .select((eb) => eb.fn.max('version_number').as('n'))
          .where('kb_id', '=', id)
          .executeTakeFirst();
        const current = await tx
          .selectFrom('knowledge_bases')
          .select('source_urls')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        await addVersion(tx, {
          kb_id: id,
          account_id: accountId,
          version_number: Number(last?.n ?? 0) + 1,
          text: words.text,
          source_urls: current.source_urls,
          change: words.change,
          created_at: now,
        });
      }
      return true;
    });
    return updated ? this.get(accountId, id) : undefined;
  }

  /** The versions of one of the account's knowledge bases, oldest first; undefined when it has none such. */
  async versionsOf(accountId: string, id: string): Promise<KnowledgeVersion[] | undefined> {
    const rows = await this.db
      .selectFrom('knowledge_versions')
      .select(['id', 'version_number', 'change', 'source_urls', 'created_at'])
      .select((eb) => eb.fn<number>('length', [eb.ref('text')]).as('characters'))
      .where('account_id', '=', accountId)
      .where('kb_id', '=', id)
      .orderBy('version_number')
      .execute();
    // Every knowledge base has its version 1 (made with it, or by migration 105): none, no such base.
    if (rows.length === 0) return undefined;
    return rows.map((row) => ({
      id: row.id,
      version_number: Number(row.version_number),
      change: row.change,
      characters: Number(row.characters),
      source_urls: row.source_urls === null ? null : (JSON.parse(row.source_urls) as string[]),
      created_at: row.created_at,
    }));
  }

  /** One version's words, by its id or its number. */
  async version(
    accountId: string,
    id: string,
    version: string,
  ): Promise<{ version_number: number; text: string; source_urls: string[] | null } | undefined> {
    const number = /^\d+$/.test(version) ? Number(version) : undefined;
    const row = await this.db
      .selectFrom('knowledge_versions')
      .select(['version_number', 'text', 'source_urls'])
      .where('account_id', '=', accountId)
      .where('kb_id', '=', id)
      .where((eb) => (number === undefined ? eb('id', '=', version) : eb('version_number', '=', number)))
      .executeTakeFirst();
    return (
      row && {
        version_number: Number(row.version_number),
        text: row.text,
        source_urls: row.source_urls === null ? null : (JSON.parse(row.source_urls) as string[]),
      }
    );
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const result = await tx
        .deleteFrom('knowledge_bases')
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) return false;
      await tx.deleteFrom('knowledge_versions').where('kb_id', '=', id).execute();
      return true;
    });
  }
}
