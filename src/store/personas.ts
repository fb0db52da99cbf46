import { takeRow } from './db.js';
import type { Kysely, Selectable } from 'kysely';
import type { Database, PersonasTable, PersonaVersionsTable } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';
import type { PersonaBehaviour } from '../schemas/persona.js';

/** Who a persona is: changed in place. */
export interface PersonaIdentity {
  name: string;
  role: string | null;
  description: string | null;
  tags: unknown[];
  image_url: string | null;
}

export type StoredVersion = PersonaBehaviour & {
  id: string;
  persona_id: string;
  version_type: 'draft' | 'production' | 'archived';
  version_number: number;
  promoted_from_version_id: string | null;
  promoted_at: string | null;
  created_at: string;
  updated_at: string;
};

export type StoredPersona = PersonaIdentity & {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  production: StoredVersion;
  draft: StoredVersion;
};

function toVersion(row: Selectable<PersonaVersionsTable>): StoredVersion {
  return {
    ...(JSON.parse(row.behaviour) as PersonaBehaviour),
    id: row.id,
    persona_id: row.persona_id,
    version_type: row.version_type as StoredVersion['version_type'],
    version_number: Number(row.version_number),
    promoted_from_version_id: row.promoted_from_version_id,
    promoted_at: row.promoted_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Personas of each account. A persona has a draft version, which updates change, and a production
 * version, which calls use; promoting copies the draft into a new production version and keeps the
 * replaced one as `archived`.
 */
export class PersonaStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async create(accountId: string, identity: PersonaIdentity, behaviour: PersonaBehaviour): Promise<StoredPersona> {
    const now = this.clock.now().toISOString();
    const id = newId();
    const production = { id: newId(), version_type: 'production', version_number: 1, promoted_at: now };
    const draft = { id: newId(), version_type: 'draft', version_number: 2, promoted_at: null };
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('personas')
        .values({
          id,
          account_id: accountId,
          ...identity,
          tags: JSON.stringify(identity.tags),
          production_version_id: production.id,
          draft_version_id: draft.id,
          created_at: now,
          updated_at: now,
          deleted_at: null,
        })
        .execute();
      await trx
        .insertInto('persona_versions')
        .values(
          [production, draft].map((v) => ({
            ...v,
            persona_id: id,
            behaviour: JSON.stringify(behaviour),
            promoted_from_version_id: null,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
    });
    return (await this.get(accountId, id))!;
  }

  async list(accountId: string): Promise<StoredPersona[]> {
    const rows = await this.db
      .selectFrom('personas')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    if (rows.length === 0) return [];
    const ids = rows.flatMap((r) => [r.production_version_id, r.draft_version_id]);
    const versions = new Map(
      (await this.db.selectFrom('persona_versions').selectAll().where('id', 'in', ids).execute()).map((v) => [
        v.id,
        toVersion(v),
      ]),
    );
    return rows.flatMap((row) => {
      const production = versions.get(row.production_version_id);
      const draft = versions.get(row.draft_version_id);
      return production && draft ? [this.toPersona(row, production, draft)] : [];
    });
  }

  async get(accountId: string, id: string, db: Kysely<Database> = this.db): Promise<StoredPersona | undefined> {
    const row = await db
      .selectFrom('personas')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    const versions = await db
      .selectFrom('persona_versions')
      .selectAll()
      .where('id', 'in', [row.production_version_id, row.draft_version_id])
      .execute();
    const byId = new Map(versions.map((v) => [v.id, toVersion(v)]));
    const production = byId.get(row.production_version_id);
    const draft = byId.get(row.draft_version_id);
    return production && draft ? this.toPersona(row, production, draft) : undefined;
  }

  /** Every version of the persona, newest first. */
  async versions(accountId: string, id: string): Promise<StoredVersion[] | undefined> {
    if (!(await this.get(accountId, id))) return undefined;
    const rows = await this.db
      .selectFrom('persona_versions')
      .selectAll()
      .where('persona_id', '=', id)
      .orderBy('version_number', 'desc')
      .execute();
    return rows.map(toVersion);
  }

  /** Changes who the persona is, and its draft's behaviour. */
  async update(
    accountId: string,
    id: string,
    identity: Partial<PersonaIdentity>,
    behaviour: Partial<PersonaBehaviour>,
  ): Promise<StoredPersona | undefined> {
    const now = this.clock.now().toISOString();
    return this.db.transaction().execute(async (trx) => {
      const current = await this.get(accountId, id, trx);
      if (!current) return undefined;
      const { tags, ...rest } = identity;
      await trx
        .updateTable('personas')
        .set({ ...rest, ...(tags !== undefined && { tags: JSON.stringify(tags) }), updated_at: now })
        .where('id', '=', id)
        .execute();
      if (Object.keys(behaviour).length > 0) {
        const { draft } = current;
        const merged: PersonaBehaviour = { ...behaviourOf(draft), ...behaviour };
        await trx
          .updateTable('persona_versions')
          .set({ behaviour: JSON.stringify(merged), updated_at: now })
          .where('id', '=', draft.id)
          .execute();
      }
      return this.get(accountId, id, trx);
    });
  }

  /**
   * Puts the draft in production: a new production version, a copy of the draft, numbered after
   * every other; the one it replaces is kept as `archived`. The draft stays the draft.
   */
  async promote(accountId: string, id: string): Promise<StoredPersona | undefined> {
    const now = this.clock.now().toISOString();
    return this.db.transaction().execute(async (trx) => {
      // Promotions of one persona take turns, each numbering its version after the one before.
      if (!(await takeRow(trx, 'personas', accountId, id))) return undefined;
      const current = await this.get(accountId, id, trx);
      if (!current) return undefined;
      const last = await trx
        .selectFrom('persona_versions')
        .select((eb) => eb.fn.max('version_number').as('n'))
        .where('persona_id', '=', id)
        .executeTakeFirstOrThrow();
      const production = newId();
      await trx
        .insertInto('persona_versions')
        .values({
          id: production,
          persona_id: id,
          version_type: 'production',
          version_number: Number(last.n ?? 0) + 1,
          behaviour: JSON.stringify(behaviourOf(current.draft)),
          promoted_from_version_id: current.draft.id,
          promoted_at: now,
          created_at: now,
          updated_at: now,
        })
        .execute();
      await trx
        .updateTable('persona_versions')
        .set({ version_type: 'archived', updated_at: now })
        .where('id', '=', current.production.id)
        .execute();
      await trx
        .updateTable('personas')
        .set({ production_version_id: production, updated_at: now })
        .where('id', '=', id)
        .execute();
      return this.get(accountId, id, trx);
    });
  }

  /** Marks the persona deleted: it is gone from the API, and calls and numbers naming it are refused. */
  async delete(accountId: string, id: string): Promise<StoredPersona | undefined> {
    const now = this.clock.now().toISOString();
    const current = await this.get(accountId, id);
    if (!current) return undefined;
    await this.db
      .updateTable('personas')
      .set({ deleted_at: now, updated_at: now })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();
    return { ...current, deleted_at: now, updated_at: now };
  }

  private toPersona(row: Selectable<PersonasTable>, production: StoredVersion, draft: StoredVersion): StoredPersona {
    return {
      id: row.id,
      account_id: row.account_id,
      name: row.name,
      role: row.role,
      description: row.description,
      tags: JSON.parse(row.tags) as unknown[],
      image_url: row.image_url,
      created_at: row.created_at,
      updated_at: row.updated_at,
      deleted_at: row.deleted_at,
      production,
      draft,
    };
  }
}

/** A version's behaviour alone. */
export function behaviourOf(version: PersonaBehaviour): PersonaBehaviour {
  return {
    orchestration_prompt: version.orchestration_prompt,
    personality_prompt: version.personality_prompt,
    call_config: version.call_config,
    default_tools: version.default_tools,
    pathway_conditions: version.pathway_conditions,
    kb_ids: version.kb_ids,
  };
}
