import { sql, type Kysely } from 'kysely';
import type { Database } from './types.js';

/**
 * Counts one more event under `key` in the database (one upsert), so that several processes on one
 * PostgreSQL database count together. A key's window opens at its first event and lasts
 * `windowMs` (not the clock's minute, where a burst that spans it would count twice the limit).
 * Resolves with the window's count, this event included, and the milliseconds until it closes.
 */
export async function countInWindow(
  db: Kysely<Database>,
  key: string,
  windowMs: number,
  now = Date.now(),
): Promise<{ current: number; ttl: number }> {
  // In an upsert's SET every expression reads the row as it was.
  const open = sql<boolean>`rate_limit_windows.window_start > ${now - windowMs}`;
  const row = await db
    .insertInto('rate_limit_windows')
    .values({ key, window_start: now, count: 1 })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        count: sql<number>`case when ${open} then rate_limit_windows.count + 1 else 1 end`,
        window_start: sql<number>`case when ${open} then rate_limit_windows.window_start else ${now} end`,
      }),
    )
    .returning(['count', 'window_start'])
    .executeTakeFirstOrThrow();
  return { current: Number(row.count), ttl: Number(row.window_start) + windowMs - now };
}
