import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The pathway a call followed, as its own column so that GET /v1/calls?pathway_id= filters on
 * it; calls made before are filled in from their stored request.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('calls').addColumn('pathway_id', 'text').execute();
  const rows = (await db
    .selectFrom('calls')
    .select(['id', 'request'])
    .where('request', 'like', '%"pathway_id":"%')
    .execute()) as Array<{ id: string; request: string }>;
  for (const row of rows) {
    let pathwayId: unknown;
    try {
      pathwayId = (JSON.parse(row.request) as { pathway_id?: unknown }).pathway_id;
    } catch {
      continue;
    }
    if (typeof pathwayId === 'string' && pathwayId !== '')
      await db.updateTable('calls').set({ pathway_id: pathwayId }).where('id', '=', row.id).execute();
  }
  await db.schema.createIndex('calls_account_pathway').on('calls').columns(['account_id', 'pathway_id']).execute();
}
