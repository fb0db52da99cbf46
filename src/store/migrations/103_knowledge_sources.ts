import type { Kysely } from 'kysely';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The web pages a knowledge base was read from (`type: "web"`), as a JSON list; null for text and files. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('knowledge_bases').addColumn('source_urls', 'text').execute();
}
