import type { Kysely, Selectable } from 'kysely';
import type { CitationSchemasTable, Database } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';
import { ownedRows, type OwnedRows } from './owned.js';

/** A reusable extraction schema: the fields to pull out of a call, as a call's analysis_schema. */
export interface CitationSchema {
  id: string;
  name: string;
  description: string | null;
  schema: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

function toSchema(row: Selectable<CitationSchemasTable>): CitationSchema {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    schema: JSON.parse(row.schema) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Citation schemas of each account (/v1/citation_schemas). */
export class CitationSchemaStore {
  private readonly rows: OwnedRows<'citation_schemas'>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {
    this.rows = ownedRows(db, 'citation_schemas');
  }

  async create(
    accountId: string,
    input: { name: string; description: string | null; schema: Record<string, unknown> },
  ): Promise<CitationSchema> {
    const now = this.clock.now().toISOString();
    const row = {
      id: newId('CS-'),
      account_id: accountId,
      name: input.name,
      description: input.description,
      schema: JSON.stringify(input.schema),
      created_at: now,
      updated_at: now,
    };
    await this.db.insertInto('citation_schemas').values(row).execute();
    return toSchema(row);
  }

  /** The account's schemas, newest first. */
  async list(accountId: string): Promise<CitationSchema[]> {
    return (await this.rows.list(accountId, 1000)).map(toSchema);
  }

  async get(accountId: string, id: string): Promise<CitationSchema | undefined> {
    const row = await this.rows.get(accountId, id);
    return row && toSchema(row);
  }

  async update(
    accountId: string,
    id: string,
    change: { name?: string; description?: string | null; schema?: Record<string, unknown> },
  ): Promise<CitationSchema | undefined> {
    const { schema, ...rest } = change;
    await this.db
      .updateTable('citation_schemas')
      .set({
        ...rest,
        ...(schema && { schema: JSON.stringify(schema) }),
        updated_at: this.clock.now().toISOString(),
      })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();
    return this.get(accountId, id);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('citation_schemas')
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
