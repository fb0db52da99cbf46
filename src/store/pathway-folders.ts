import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from './types.js';

export interface PathwayFolder {
  folder_id: string;
  /** The same as folder_id, where some clients read it. */
  id: string;
  name: string;
  parent_folder_id: string | null;
  created_at: string;
  updated_at: string;
}

/** A pathway as a folder lists it. */
export interface FiledPathway {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
}

const FOLDER_COLUMNS = ['id', 'name', 'parent_folder_id', 'created_at', 'updated_at'] as const;

function toFolder(row: {
  id: string;
  name: string;
  parent_folder_id: string | null;
  created_at: string;
  updated_at: string;
}): PathwayFolder {
  const { id, ...rest } = row;
  return { folder_id: id, id, ...rest };
}

/**
 * The folders an account files its pathways in. A folder may sit in another; deleting one puts
 * what it held (pathways and folders) in its parent.
 */
export class PathwayFolderStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async list(accountId: string): Promise<PathwayFolder[]> {
    const rows = await this.db
      .selectFrom('pathway_folders')
      .select(FOLDER_COLUMNS)
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toFolder);
  }

  async get(accountId: string, id: string): Promise<PathwayFolder | undefined> {
    const row = await this.db
      .selectFrom('pathway_folders')
      .select(FOLDER_COLUMNS)
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toFolder(row);
  }

  async create(accountId: string, name: string, parentId: string | null): Promise<PathwayFolder> {
    const now = this.clock.now().toISOString();
    const row = {
      id: randomUUID(),
      account_id: accountId,
      name,
      parent_folder_id: parentId,
      created_at: now,
      updated_at: now,
    };
    await this.db.insertInto('pathway_folders').values(row).execute();
    return toFolder(row);
  }

  async rename(accountId: string, id: string, name: string): Promise<PathwayFolder | undefined> {
    await this.db
      .updateTable('pathway_folders')
      .set({ name, updated_at: this.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();
    return this.get(accountId, id);
  }

  /** Deletes a folder; its pathways and folders move up to its parent. False: no such folder. */
  async delete(accountId: string, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const folder = await trx
        .selectFrom('pathway_folders')
        .select(['parent_folder_id'])
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (!folder) return false;
      await trx
        .updateTable('pathways')
        .set({ folder_id: folder.parent_folder_id })
        .where('account_id', '=', accountId)
        .where('folder_id', '=', id)
        .execute();
      await trx
        .updateTable('pathway_folders')
        .set({ parent_folder_id: folder.parent_folder_id })
        .where('account_id', '=', accountId)
        .where('parent_folder_id', '=', id)
        .execute();
      await trx.deleteFrom('pathway_folders').where('account_id', '=', accountId).where('id', '=', id).execute();
      return true;
    });
  }

  /** The account's pathways filed directly in the folder, oldest first. */
  async pathways(accountId: string, folderId: string): Promise<FiledPathway[]> {
    return this.db
      .selectFrom('pathways')
      .select(['id', 'name', 'description', 'created_at'])
      .where('account_id', '=', accountId)
      .where('folder_id', '=', folderId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /**
   * Files the pathway in the folder (null: the top level). The folder it was in before, or
   * undefined when the account has no such pathway.
   */
  async move(
    accountId: string,
    pathwayId: string,
    folderId: string | null,
  ): Promise<{ old_folder_id: string | null } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const pathway = await trx
        .selectFrom('pathways')
        .select(['folder_id'])
        .where('account_id', '=', accountId)
        .where('id', '=', pathwayId)
        .executeTakeFirst();
      if (!pathway) return undefined;
      await trx
        .updateTable('pathways')
        .set({ folder_id: folderId })
        .where('account_id', '=', accountId)
        .where('id', '=', pathwayId)
        .execute();
      return { old_folder_id: pathway.folder_id };
    });
  }
}
