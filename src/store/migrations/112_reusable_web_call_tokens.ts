import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Reusable web call tokens (a widget's `data-token` on a page every visitor loads): a token may
 * start calls until it expires, at most `calls_per_minute` a minute, from `allowed_origins` only.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('web_call_tokens')
    .addColumn('reusable', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('web_call_tokens').addColumn('calls_per_minute', 'integer').execute();
  await db.schema.alterTable('web_call_tokens').addColumn('allowed_origins', 'text').execute();
}
