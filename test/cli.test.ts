import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStorage, migrate, type Storage } from '../src/store/db.js';
import { AccountStore, KEY_CACHE_MS } from '../src/store/accounts.js';
import { SecretBox, loadMasterKey } from '../src/security/secrets.js';
import { systemClock } from '../src/clock.js';
import { createTestApp } from '../src/testing/harness.js';
import { createTestDatabase, postgresAvailable } from '../src/testing/postgres.js';
import { main } from '../src/cli/index.js';

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'openline.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  lines: string[];
  last: string;
}

/** Runs `openline ...` as a user would, with only the storage settings given. */
function openline(args: string[], env: Record<string, string>): Promise<Run> {
  const base = { ...process.env };
  delete base.OPENLINE_DATABASE_URL;
  delete base.OPENLINE_MASTER_KEY;
  delete base.DATA_DIR;
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...base, ...env } }, (error, stdout, stderr) => {
      const lines = stdout.trimEnd().split('\n');
      resolve({
        code: error ? Number(error.code ?? 1) : 0,
        stdout,
        stderr,
        lines,
        last: lines[lines.length - 1] ?? '',
      });
    });
  });
}

describe('openline CLI (SQLite in DATA_DIR)', () => {
  let dir: string;
  let env: Record<string, string>;
  let storage: Storage;
  let accounts: AccountStore;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-cli-'));
    env = { DATA_DIR: dir };
  });
  after(async () => {
    await storage?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The same storage the CLI wrote, opened once it exists. */
  async function store(): Promise<AccountStore> {
    if (!accounts) {
      storage = await openStorage({ dataDir: dir });
      await migrate(storage);
      accounts = new AccountStore(storage.db, new SecretBox(loadMasterKey({ dataDir: dir })), systemClock);
    }
    return accounts;
  }

  it('refuses to work on a DATA_DIR with no database (a server elsewhere), naming where it looked', async () => {
    const r = await openline(['keys', 'list'], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no Openline database at .*openline\.db: run this with the server's DATA_DIR/);
  });

  it('accounts create makes the database, saying so', async () => {
    const r = await openline(['accounts', 'create', '--name', 'First'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /no database at .* yet: creating one/);
  });

  it('accounts create prints the account id and, last, a working API key', async () => {
    const r = await openline(['accounts', 'create', '--name', 'Acme'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.last, /^ol_[A-Za-z0-9_-]{32}$/);
    const account = await (await store()).authenticate(r.last);
    assert.ok(account, 'the printed key authenticates');
    assert.equal(account.name, 'Acme');
    assert.ok(r.stdout.includes(account.id));

    const list = await openline(['accounts', 'list'], env);
    assert.equal(list.code, 0);
    assert.ok(list.stdout.includes(account.id) && list.stdout.includes('Acme') && list.stdout.includes('default'));
  });

  it('the server accepts a key made by the CLI on the same DATA_DIR', async () => {
    const { last: key } = await openline(['accounts', 'create', '--name', 'Served'], env);
    const t = await createTestApp({ env: { DATA_DIR: dir } });
    try {
      const me = await t.request('GET', '/v1/me', undefined, { as: key });
      assert.equal(me.status, 200);
      assert.equal((me.body.account as { name: string }).name, 'Served');
    } finally {
      await t.close();
    }
  });

  /**
   * The same entry point in-process: what the spawned command does, without starting a process
   * for each command line (the tests above and below show the command itself works).
   */
  async function inProcess(args: string[]): Promise<Run> {
    let stdout = '';
    let stderr = '';
    const code = await main(args, { out: (l) => (stdout += `${l}\n`), err: (l) => (stderr += `${l}\n`) }, env);
    const lines = stdout.trimEnd().split('\n');
    return { code, stdout, stderr, lines, last: lines[lines.length - 1] ?? '' };
  }

  it("accounts limit sets an account's own rate limit, and back to the server's", async () => {
    const accountStore = await store();
    const [first] = await accountStore.list();
    assert.ok(first);
    const set = await inProcess(['accounts', 'limit', '--rate', '120']);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /requests a minute per API key: 120/);
    assert.equal((await (await store()).get(first.id))?.rate_limit_per_minute, 120);
    const back = await inProcess(['accounts', 'limit', '--rate', 'default', '--account', first.id]);
    assert.equal(back.code, 0, back.stderr);
    assert.equal((await (await store()).get(first.id))?.rate_limit_per_minute, null);
    const bad = await inProcess(['accounts', 'limit', '--rate', 'fast']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--rate must be a whole number/);
    const concurrent = await inProcess(['accounts', 'limit', '--concurrent', '3']);
    assert.equal(concurrent.code, 0, concurrent.stderr);
    assert.equal((await (await store()).get(first.id))?.max_concurrent_calls, 3);
    assert.equal((await inProcess(['accounts', 'limit'])).code, 2);
  });

  it('keys create, list and revoke act on the first account by default', async () => {
    const accountStore = await store();
    const [first] = await accountStore.list();
    assert.ok(first);
    const created = await inProcess(['keys', 'create']);
    assert.equal(created.code, 0, created.stderr);
    const key = created.last;
    assert.equal((await accountStore.authenticate(key))?.id, first.id);
    const keyId = (await accountStore.listKeys(first.id)).at(-1)?.id ?? '';
    assert.ok(created.stdout.includes(keyId));

    const list = await inProcess(['keys', 'list']);
    assert.equal(list.code, 0);
    assert.ok(list.stdout.includes(keyId));
    assert.ok(list.stdout.includes(key.slice(0, 7)), 'the prefix is shown');
    assert.ok(!list.stdout.includes(key), 'the key itself is not');

    const revoked = await inProcess(['keys', 'revoke', keyId]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const fresh = new AccountStore(storage!.db, new SecretBox(loadMasterKey({ dataDir: dir })), systemClock);
    assert.equal(await fresh.authenticate(key), undefined, 'a revoked key no longer authenticates');
    // A process that verified the key moments before trusts it for at most KEY_CACHE_MS more.
    await new Promise((resolve) => setTimeout(resolve, KEY_CACHE_MS + 50));
    assert.equal(await accountStore.authenticate(key), undefined, 'nor in a process that verified it before');
    const again = await inProcess(['keys', 'revoke', keyId]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already revoked/);
    assert.match((await inProcess(['keys', 'list'])).stdout, /revoked \d{4}-/);
  });

  it('--account selects another account', async () => {
    const { last: key } = await inProcess(['accounts', 'create', '--name', 'Second']);
    const second = await (await store()).authenticate(key);
    assert.ok(second);
    const created = await inProcess(['keys', 'create', '--account', second.id]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal((await accounts.authenticate(created.last))?.id, second.id);
    const list = await inProcess(['keys', 'list', '--account', second.id]);
    assert.equal(list.stdout.split('\n').filter((l) => l.includes('active')).length, 2);
    const firstKeyId = (await accounts.listKeys(second.id))[0]?.id ?? '';
    const wrongAccount = await inProcess(['keys', 'revoke', firstKeyId]);
    assert.equal(wrongAccount.code, 1, 'a key of another account is not revoked');
    assert.ok(await accounts.authenticate(key));
    const unknown = await inProcess(['keys', 'list', '--account', 'nope']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No account with id nope/);
  });

  it('warns when an account is left without an active key', async () => {
    const { last: key } = await inProcess(['accounts', 'create', '--name', 'Lonely']);
    const account = await (await store()).authenticate(key);
    assert.ok(account);
    const [only] = await accounts.listKeys(account.id);
    const r = await inProcess(['keys', 'revoke', only?.id ?? '', '--account', account.id]);
    assert.equal(r.code, 0);
    assert.match(r.stderr, /no active key left/);
  });

  it('exits 2 with the usage when run without a command', async () => {
    const r = await openline([], env);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Usage: openline/);
    assert.equal(r.stdout, '');
  });

  const usage: [string[], RegExp][] = [
    [['frobnicate'], /Unknown command: frobnicate/],
    [['accounts'], /Unknown command: accounts/],
    [['keys', 'revoke'], /needs a KEY_ID/],
    [['keys', 'list', 'extra'], /Unexpected argument: extra/],
    [['keys', 'list', '--name', 'x'], /does not take --name/],
    [['accounts', 'list', '--account', 'x'], /does not take --account/],
    [['accounts', 'create', '--name', ''], /--name must not be empty/],
    [['accounts', 'create', '--bogus'], /Unknown option '--bogus'/],
    [['keys', 'create', '--account'], /--account/],
  ];
  for (const [args, message] of usage) {
    it(`exits 2 with a clear message on bad usage: openline ${args.join(' ')}`, async () => {
      const r = await inProcess(args);
      assert.equal(r.code, 2);
      assert.match(r.stderr, message);
      assert.match(r.stderr, /Usage: openline/);
    });
  }

  it('prints help and exits 0', async () => {
    const spawned = await openline(['help'], env);
    assert.equal(spawned.code, 0);
    assert.match(spawned.stdout, /accounts create/);
    for (const args of [['--help'], ['keys', '-h'], ['help', 'keys']]) {
      const r = await inProcess(args);
      assert.equal(r.code, 0, args.join(' '));
      assert.match(r.stdout, /keys revoke KEY_ID/);
    }
  });

  it('names the variable of a bad configuration', async () => {
    const r = await openline(['accounts', 'list'], { ...env, OPENLINE_DATABASE_URL: 'mysql://db/openline' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /configuration error: OPENLINE_DATABASE_URL/);
  });
});

describe('openline CLI (PostgreSQL)', async () => {
  const available = await postgresAvailable();
  it(
    'creates an account in the database of OPENLINE_DATABASE_URL',
    { skip: !available && 'no PostgreSQL' },
    async () => {
      const database = await createTestDatabase();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-cli-pg-'));
      try {
        const env = { DATA_DIR: dir, OPENLINE_DATABASE_URL: database.url };
        const r = await openline(['accounts', 'create'], env);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /PostgreSQL/);
        assert.ok(!r.stdout.includes(database.url), 'the database URL is not printed');
        const storage = await openStorage({ dataDir: dir, databaseUrl: database.url });
        try {
          const accounts = new AccountStore(storage.db, new SecretBox(loadMasterKey({ dataDir: dir })), systemClock);
          assert.ok(await accounts.authenticate(r.last));
        } finally {
          await storage.close();
        }
        assert.equal((await openline(['keys', 'list'], env)).code, 0);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
        await database.drop();
      }
    },
  );
});
