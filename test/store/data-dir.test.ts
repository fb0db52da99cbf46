import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStorage } from '../../src/store/db.js';
import { LOCK_FILE, lockDataDir } from '../../src/store/data-dir-lock.js';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'openline-data-'));
}

describe('the SQLite data directory', () => {
  it('creates openline.db readable by its owner only', async () => {
    const dir = tempDir();
    const storage = await openStorage({ dataDir: dir });
    await storage.close();
    assert.equal(fs.statSync(path.join(dir, 'openline.db')).mode & 0o777, 0o600);
    fs.rmSync(dir, { recursive: true });
  });

  it('refuses a second server while the first runs, naming its pid', async () => {
    const dir = tempDir();
    // Another live process holds the lock.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      fs.writeFileSync(path.join(dir, LOCK_FILE), String(other.pid));
      assert.throws(() => lockDataDir(dir), new RegExp(`another Openline server \\(pid ${other.pid}\\)`));
    } finally {
      other.kill();
    }
    fs.rmSync(dir, { recursive: true });
  });

  it('takes over a lock left by a server that stopped, and releases its own', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, LOCK_FILE), '2147483646');
    const release = lockDataDir(dir);
    assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8'), String(process.pid));
    release();
    assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false);
    fs.rmSync(dir, { recursive: true });
  });
});
