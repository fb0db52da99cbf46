import fs from 'node:fs';
import path from 'node:path';
import {
  Kysely,
  PostgresDialect,
  SqliteDialect,
  sql,
  type Migration,
  type MigrationProvider,
  Migrator,
  type Transaction,
} from 'kysely';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { Database } from './types.js';
import * as m001 from './migrations/001_initial.js';
import * as m002 from './migrations/002_call_control.js';
import * as m003 from './migrations/003_call_leases.js';
import * as m004 from './migrations/004_webhooks.js';
import * as m005 from './migrations/005_campaign_dialer.js';
import * as m006 from './migrations/006_sms_messages.js';
import * as m007 from './migrations/007_campaign_pacing.js';
import * as m008 from './migrations/008_call_latency.js';
import * as m090 from './migrations/090_rate_limits.js';
import * as m091 from './migrations/091_call_trace.js';
import * as m092 from './migrations/092_account_concurrency.js';
import * as m093 from './migrations/093_batches.js';
import * as m094 from './migrations/094_sms_direction.js';
import * as m095 from './migrations/095_blocked_numbers.js';
import * as m096 from './migrations/096_web_call_tokens.js';
import * as m097 from './migrations/097_sms_conversations.js';
import * as m098 from './migrations/098_agent_tests.js';
import * as m099 from './migrations/099_knowledge_bases.js';
import * as m100 from './migrations/100_personas.js';
import * as m101 from './migrations/101_secrets.js';
import * as m102 from './migrations/102_call_events_and_publish_history.js';
import * as m103 from './migrations/103_knowledge_sources.js';
import * as m104 from './migrations/104_pathway_folders.js';
import * as m105 from './migrations/105_knowledge_versions.js';
import * as m106 from './migrations/106_knowledge_gaps.js';
import * as m107 from './migrations/107_citation_schemas.js';
import * as m108 from './migrations/108_speech_samples.js';
import * as m109 from './migrations/109_sms_agent_memory.js';
import * as m110 from './migrations/110_call_pathway.js';
import * as m111 from './migrations/111_fractional_max_duration.js';
import * as m112 from './migrations/112_reusable_web_call_tokens.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Storage {
  db: Kysely<Database>;
  dialect: Dialect;
  close(): Promise<void>;
}

/** Every migration in order; each receives the dialect for the few types that differ. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const MIGRATIONS: Record<string, { up: (db: Kysely<any>, dialect: Dialect) => Promise<void> }> = {
  '001_initial': m001,
  '002_call_control': m002,
  '003_call_leases': m003,
  '004_webhooks': m004,
  '005_campaign_dialer': m005,
  '006_sms_messages': m006,
  '007_campaign_pacing': m007,
  '008_call_latency': m008,
  '090_rate_limits': m090,
  '091_call_trace': m091,
  '092_account_concurrency': m092,
  '093_batches': m093,
  '094_sms_direction': m094,
  '095_blocked_numbers': m095,
  '096_web_call_tokens': m096,
  '097_sms_conversations': m097,
  '098_agent_tests': m098,
  '099_knowledge_bases': m099,
  '100_personas': m100,
  '101_secrets': m101,
  '102_call_events_and_publish_history': m102,
  '103_knowledge_sources': m103,
  '104_pathway_folders': m104,
  '105_knowledge_versions': m105,
  '106_knowledge_gaps': m106,
  '107_citation_schemas': m107,
  '108_speech_samples': m108,
  '109_sms_agent_memory': m109,
  '110_call_pathway': m110,
  '111_fractional_max_duration': m111,
  '112_reusable_web_call_tokens': m112,
};

class StaticProvider implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const result: Record<string, Migration> = {};
    for (const [name, migration] of Object.entries(MIGRATIONS)) {
      result[name] = { up: (db) => migration.up(db, this.dialect) };
    }
    return result;
  }
}

/** How long a query waits for a PostgreSQL connection (a new one, or a free one of the pool). */
const POOL_WAIT_MS = 30_000;

/**
 * Opens storage: PostgreSQL when a postgres:// URL is given, else SQLite in `dataDir`
 * (WAL mode). `:memory:` as dataDir gives a private in-memory database (tests).
 */
export async function openStorage(options: { dataDir: string; databaseUrl?: string | undefined }): Promise<Storage> {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 10,
      // A database that stops answering without closing its connections (a partition, a host gone)
      // fails new work within 30 s (503) instead of leaving requests waiting for ever for a
      // connection; keep-alive lets the system notice idle connections that died that way.
      connectionTimeoutMillis: POOL_WAIT_MS,
      keepAlive: true,
    });
    // An idle connection the server closes (restart, failover) is replaced on the next query; left
    // unheard, the pool's 'error' event would end the process.
    pool.on('error', () => undefined);
    // The pool hears only its idle connections. A connection cut while a query holds it fails that
    // query and also emits 'error' on its client, which, unheard, would end the process.
    pool.on('connect', (client) => client.on('error', () => undefined));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', close: () => db.destroy() };
  }
  let file = ':memory:';
  if (options.dataDir !== ':memory:') {
    fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    file = path.join(options.dataDir, 'openline.db');
    // Only its owner may read the database (SQLite gives its -wal and -shm files the same mode).
    fs.closeSync(fs.openSync(file, 'a', 0o600));
    fs.chmodSync(file, 0o600);
  }
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // Reads through a memory map and a larger page cache skip a system call per page.
  sqlite.pragma('mmap_size = 268435456');
  sqlite.pragma('cache_size = -65536');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

/**
 * Kysely prepares every statement again on each query; preparing is most of the cost of a point
 * lookup on SQLite. Statements are reusable, so keep them by their SQL text (a bounded set: the
 * query builder produces a few hundred distinct texts at most).
 */
function withStatementCache(sqlite: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = sqlite.prepare.bind(sqlite);
  return new Proxy(sqlite, {
    get(target, property, receiver) {
      if (property !== 'prepare') {
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      }
      return (text: string) => {
        let statement = cache.get(text);
        if (!statement) {
          if (cache.size >= 1000) cache.clear();
          statement = prepare(text);
          cache.set(text, statement);
        }
        return statement;
      };
    },
  });
}

/** Brings the schema up to date; run at every start-up (and by the CLI). */
export async function migrate(storage: Storage): Promise<void> {
  const migrator = new Migrator({ db: storage.db, provider: new StaticProvider(storage.dialect) });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/** Cheap round trip used by /readyz. */
export async function ping(storage: Storage): Promise<void> {
  await sql`select 1`.execute(storage.db);
}

/** Socket errors of a database connection that could not be made or was cut. */
const CONNECTION_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * Whether an error says the database cannot be reached for now (PostgreSQL stopped, restarting,
 * failing over or out of connections; SQLite locked past its busy timeout), rather than that a
 * query was wrong: the request may be sent again once it is back.
 */
export function isStorageUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : '';
  // PostgreSQL's connection exceptions (class 08), shutdowns and restarts (57P01-57P03), and
  // too many connections (53300).
  if (/^08[0-9A-Z]{3}$/.test(code) || ['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
  if (code === 'SQLITE_BUSY') return true;
  if (CONNECTION_ERRNOS.has(code) && 'syscall' in error) return true;
  // node-postgres's own words for a connection that ended or could not be had in time.
  return /^Connection terminated|^timeout exceeded when trying to connect|^Client has encountered a connection error/.test(
    error.message,
  );
}

/**
 * Takes an account's row of `table` for the rest of the transaction, by a write that changes
 * nothing: writers of one row (new versions numbered after the last) take turns instead of all
 * failing on the same number. False when the account has no such row.
 */
export async function takeRow(
  trx: Transaction<Database>,
  table: 'pathways' | 'personas',
  accountId: string,
  id: string,
): Promise<boolean> {
  const taken =
    await sql`update ${sql.table(table)} set id = id where account_id = ${accountId} and id = ${id}`.execute(trx);
  return Number(taken.numAffectedRows ?? 0) > 0;
}
