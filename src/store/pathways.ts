import { takeRow } from './db.js';
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';
import { fromJson, toJson } from './json.js';
import {
  splitGraphNodes,
  type GraphNode,
  type PathwayEdge,
  type PathwayGraph,
  type PathwayNode,
} from '../domain/pathway-graph.js';
import type { Environment, PathwayDetail, PathwaySummary, VersionDetail, VersionSummary } from '../schemas/pathway.js';

/** The graph a call follows, as resolveVersion() picks it; version_number null is the draft. */
export interface ResolvedPathway {
  pathway_id: string;
  name: string;
  version_number: number | null;
  /** The nodes, without the global config entry. */
  nodes: PathwayNode[];
  edges: PathwayEdge[];
  /** The global config entry's prompt, when the graph has one. */
  globalPrompt?: string;
}

export type PublishResult = { ok: true; version_number: number } | { ok: false; reason: 'pathway' | 'version' };

const MAX_VERSION_ATTEMPTS = 8;

/** A second writer took the same version number (pathway_versions_number); try the next one. */
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

const asNumber = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

/**
 * Pathways (CONTRACT.md section 9) and their immutable versions (seed 2.8). The draft lives in
 * the pathways row; each version is a snapshot with a number 1, 2, 3, ... per pathway; the
 * production and staging pointers name one version each.
 */
/** The listing fields of a pathway row (list and get share them). */
function toSummary(row: {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
  updated_at: string;
  production_version: unknown;
  staging_version: unknown;
  latest_version: unknown;
  folder_id: string | null;
}): PathwaySummary {
  return {
    id: row.id,
    pathway_id: row.id,
    name: row.name,
    description: row.description,
    folder_id: row.folder_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    production_version: asNumber(row.production_version),
    production_version_number: asNumber(row.production_version),
    staging_version: asNumber(row.staging_version),
    latest_version: asNumber(row.latest_version),
  };
}

export class PathwayStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  async create(
    accountId: string,
    input: { name: string; description: string | null; nodes: GraphNode[]; edges: PathwayEdge[] },
  ): Promise<string> {
    const now = this.clock.now().toISOString();
    const id = randomUUID();
    await this.db
      .insertInto('pathways')
      .values({
        id,
        account_id: accountId,
        created_at: now,
        updated_at: now,
        name: input.name,
        description: input.description,
        nodes: toJson(input.nodes),
        edges: toJson(input.edges),
        production_version_id: null,
        staging_version_id: null,
      })
      .execute();
    return id;
  }

  /** Pathways with their version pointers as numbers, without graphs (those can be large). */
  private summaries(accountId: string) {
    return this.db
      .selectFrom('pathways as p')
      .leftJoin('pathway_versions as prod', 'prod.id', 'p.production_version_id')
      .leftJoin('pathway_versions as stg', 'stg.id', 'p.staging_version_id')
      .where('p.account_id', '=', accountId)
      .select((eb) => [
        'p.id',
        'p.name',
        'p.description',
        'p.created_at',
        'p.updated_at',
        'p.folder_id',
        'prod.version_number as production_version',
        'stg.version_number as staging_version',
        eb
          .selectFrom('pathway_versions as v')
          .whereRef('v.pathway_id', '=', 'p.id')
          .select((e) => e.fn.max('v.version_number').as('latest'))
          .as('latest_version'),
      ]);
  }

  /** Every pathway with its draft graph: the hosted list shows each one's nodes and edges. */
  async list(accountId: string): Promise<PathwayDetail[]> {
    const rows = await this.summaries(accountId)
      .select(['p.nodes', 'p.edges'])
      .orderBy('p.created_at')
      .orderBy('p.id')
      .execute();
    return rows.map((row) => ({
      ...toSummary(row),
      nodes: fromJson<GraphNode[]>(row.nodes, []),
      edges: fromJson<PathwayEdge[]>(row.edges, []),
    }));
  }

  /** The pathway with its draft graph, or undefined (also when it belongs to another account). */
  async get(accountId: string, id: string): Promise<PathwayDetail | undefined> {
    const row = await this.summaries(accountId)
      .where('p.id', '=', id)
      .select(['p.nodes', 'p.edges'])
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      ...toSummary(row),
      nodes: fromJson<GraphNode[]>(row.nodes, []),
      edges: fromJson<PathwayEdge[]>(row.edges, []),
    };
  }

  /** Replaces the fields given; false when there is no such pathway. */
  async update(
    accountId: string,
    id: string,
    patch: { name?: string; description?: string | null; nodes?: GraphNode[]; edges?: PathwayEdge[] },
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('pathways')
      .set({
        updated_at: this.clock.now().toISOString(),
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.description !== undefined && { description: patch.description }),
        ...(patch.nodes !== undefined && { nodes: toJson(patch.nodes) }),
        ...(patch.edges !== undefined && { edges: toJson(patch.edges) }),
      })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const owned = await trx
        .selectFrom('pathways')
        .select('id')
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (!owned) return false;
      await trx.deleteFrom('pathway_versions').where('pathway_id', '=', id).execute();
      await trx.deleteFrom('pathways').where('id', '=', id).execute();
      return true;
    });
  }

  /**
   * Snapshots a graph as the pathway's next version. Writers of one pathway take turns on its row;
   * should two still read the same highest number, the unique constraint (pathway_id,
   * version_number) rejects the second, which then starts over in a new transaction (PostgreSQL
   * aborts the failed one).
   */
  async createVersion(
    accountId: string,
    pathwayId: string,
    input: { name: string } & PathwayGraph,
  ): Promise<{ id: string; name: string; version_number: number; created_at: string } | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction().execute(async (trx) => {
          // Writers of one pathway take turns, each reading the highest number once the one
          // before has committed.
          if (!(await takeRow(trx, 'pathways', accountId, pathwayId))) return undefined;
          const top = await trx
            .selectFrom('pathway_versions')
            .select((eb) => eb.fn.max('version_number').as('n'))
            .where('pathway_id', '=', pathwayId)
            .executeTakeFirst();
          const version = {
            id: randomUUID(),
            pathway_id: pathwayId,
            version_number: (asNumber(top?.n) ?? 0) + 1,
            name: input.name,
            nodes: toJson(input.nodes),
            edges: toJson(input.edges),
            created_at: this.clock.now().toISOString(),
            published_at: null,
          };
          await trx.insertInto('pathway_versions').values(version).execute();
          return {
            id: version.id,
            name: version.name,
            version_number: version.version_number,
            created_at: version.created_at,
          };
        });
      } catch (error) {
        if (!isUniqueViolation(error) || attempt >= MAX_VERSION_ATTEMPTS) throw error;
      }
    }
  }

  private async owns(trx: Transaction<Database> | Kysely<Database>, accountId: string, pathwayId: string) {
    const row = await trx
      .selectFrom('pathways')
      .select(['id', 'production_version_id', 'staging_version_id'])
      .where('account_id', '=', accountId)
      .where('id', '=', pathwayId)
      .executeTakeFirst();
    return row;
  }

  /** The versions, oldest first; undefined when there is no such pathway. */
  async listVersions(accountId: string, pathwayId: string): Promise<VersionSummary[] | undefined> {
    const pathway = await this.owns(this.db, accountId, pathwayId);
    if (!pathway) return undefined;
    const rows = await this.db
      .selectFrom('pathway_versions')
      .select(['id', 'name', 'version_number', 'created_at', 'published_at'])
      .where('pathway_id', '=', pathwayId)
      .orderBy('version_number')
      .execute();
    const latest = Math.max(0, ...rows.map((row) => Number(row.version_number)));
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      version_number: Number(row.version_number),
      created_at: row.created_at,
      is_production: row.id === pathway.production_version_id,
      is_staging: row.id === pathway.staging_version_id,
      is_prev_published: row.published_at !== null,
      is_latest: Number(row.version_number) === latest,
    }));
  }

  /**
   * Version `n` of the pathway; n = 0 is the live (production) version. `reason` tells a missing
   * pathway from a missing version.
   */
  async getVersion(
    accountId: string,
    pathwayId: string,
    n: number,
  ): Promise<{ ok: true; version: VersionDetail } | { ok: false; reason: 'pathway' | 'version' | 'unpublished' }> {
    const pathway = await this.owns(this.db, accountId, pathwayId);
    if (!pathway) return { ok: false, reason: 'pathway' };
    if (n === 0 && !pathway.production_version_id) return { ok: false, reason: 'unpublished' };
    let query = this.db.selectFrom('pathway_versions').selectAll().where('pathway_id', '=', pathwayId);
    query =
      n === 0 ? query.where('id', '=', pathway.production_version_id ?? '') : query.where('version_number', '=', n);
    const row = await query.executeTakeFirst();
    if (!row) return { ok: false, reason: 'version' };
    const top = await this.db
      .selectFrom('pathway_versions')
      .select((eb) => eb.fn.max('version_number').as('n'))
      .where('pathway_id', '=', pathwayId)
      .executeTakeFirst();
    return {
      ok: true,
      version: {
        id: row.id,
        pathway_id: pathwayId,
        name: row.name,
        version_number: Number(row.version_number),
        created_at: row.created_at,
        nodes: fromJson<GraphNode[]>(row.nodes, []),
        edges: fromJson<PathwayEdge[]>(row.edges, []),
        is_production: row.id === pathway.production_version_id,
        is_staging: row.id === pathway.staging_version_id,
        is_prev_published: row.published_at !== null,
        is_latest: Number(row.version_number) === asNumber(top?.n),
      },
    };
  }

  /**
   * Changes version `n` (its name, nodes, edges): the hosted API's Update Pathway Version. Calls
   * already running keep the graph they started with. False when there is no such version.
   */
  async updateVersion(
    accountId: string,
    pathwayId: string,
    n: number,
    patch: { name?: string } & Partial<PathwayGraph>,
  ): Promise<boolean> {
    if (!(await this.owns(this.db, accountId, pathwayId))) return false;
    const result = await this.db
      .updateTable('pathway_versions')
      .set({
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.nodes !== undefined && { nodes: toJson(patch.nodes) }),
        ...(patch.edges !== undefined && { edges: toJson(patch.edges) }),
      })
      .where('pathway_id', '=', pathwayId)
      .where('version_number', '=', n)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * Deletes version n. 'live': production or staging uses it (publish another first); undefined:
   * no such pathway or version.
   */
  async deleteVersion(accountId: string, pathwayId: string, n: number): Promise<'deleted' | 'live' | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const pathway = await this.owns(trx, accountId, pathwayId);
      if (!pathway) return undefined;
      const version = await trx
        .selectFrom('pathway_versions')
        .select(['id'])
        .where('pathway_id', '=', pathwayId)
        .where('version_number', '=', n)
        .executeTakeFirst();
      if (!version) return undefined;
      if (version.id === pathway.production_version_id || version.id === pathway.staging_version_id) return 'live';
      await trx.deleteFrom('pathway_versions').where('id', '=', version.id).execute();
      return 'deleted';
    });
  }

  /** Points an environment at a version, named by its id or its number. */
  async publish(
    accountId: string,
    pathwayId: string,
    versionRef: string | number,
    environment: Environment,
  ): Promise<PublishResult> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await this.owns(trx, accountId, pathwayId))) return { ok: false, reason: 'pathway' } as const;
      const asNumberRef =
        typeof versionRef === 'number' ? versionRef : /^\d+$/.test(versionRef) ? Number(versionRef) : null;
      const version = await trx
        .selectFrom('pathway_versions')
        .select(['id', 'version_number', 'published_at'])
        .where('pathway_id', '=', pathwayId)
        .where((eb) =>
          asNumberRef === null
            ? eb('id', '=', String(versionRef))
            : eb.or([eb('id', '=', String(versionRef)), eb('version_number', '=', asNumberRef)]),
        )
        .executeTakeFirst();
      if (!version) return { ok: false, reason: 'version' } as const;
      if (environment === 'production' && version.published_at === null)
        await trx
          .updateTable('pathway_versions')
          .set({ published_at: this.clock.now().toISOString() })
          .where('id', '=', version.id)
          .execute();
      await trx
        .updateTable('pathways')
        .set({
          updated_at: this.clock.now().toISOString(),
          ...(environment === 'production'
            ? { production_version_id: version.id }
            : { staging_version_id: version.id }),
        })
        .where('id', '=', pathwayId)
        .execute();
      return { ok: true, version_number: Number(version.version_number) } as const;
    });
  }

  /**
   * The graph a call on this pathway follows. `versionNumber` null (the default of Send Call):
   * the production version, else the latest version, else the draft; 0: the production version
   * only; n: version n. Undefined when the pathway or that version does not exist.
   */
  async resolveVersion(
    accountId: string,
    pathwayId: string,
    versionNumber: number | null,
  ): Promise<ResolvedPathway | undefined> {
    const pathway = await this.db
      .selectFrom('pathways')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', pathwayId)
      .executeTakeFirst();
    if (!pathway) return undefined;
    let query = this.db.selectFrom('pathway_versions').selectAll().where('pathway_id', '=', pathwayId);
    if (versionNumber === null) {
      query = pathway.production_version_id
        ? query.where('id', '=', pathway.production_version_id)
        : query.orderBy('version_number', 'desc').limit(1);
    } else if (versionNumber === 0) {
      if (!pathway.production_version_id) return undefined;
      query = query.where('id', '=', pathway.production_version_id);
    } else {
      query = query.where('version_number', '=', versionNumber);
    }
    const version = await query.executeTakeFirst();
    if (version) {
      return {
        pathway_id: pathwayId,
        name: pathway.name,
        version_number: Number(version.version_number),
        ...splitGraphNodes(fromJson<GraphNode[]>(version.nodes, [])),
        edges: fromJson<PathwayEdge[]>(version.edges, []),
      };
    }
    if (versionNumber !== null) return undefined;
    return {
      pathway_id: pathwayId,
      name: pathway.name,
      version_number: null,
      ...splitGraphNodes(fromJson<GraphNode[]>(pathway.nodes, [])),
      edges: fromJson<PathwayEdge[]>(pathway.edges, []),
    };
  }
}
