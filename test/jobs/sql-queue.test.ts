import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate, openStorage, type Storage } from '../../src/store/db.js';
import { SqlJobQueue } from '../../src/jobs/sql-queue.js';
import { jobQueueContract } from './queue-contract.js';

// The embedded queue on a SQLite file: each open() is a new connection to it, as after a restart.
jobQueueContract('SqlJobQueue on SQLite', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-jobs-'));
  const storages: Storage[] = [];
  const connect = async () => {
    const storage = await openStorage({ dataDir });
    storages.push(storage);
    return storage;
  };
  await migrate(await connect());
  return {
    async open(clock) {
      const storage = await connect();
      return new SqlJobQueue(storage.db, clock, storage.dialect);
    },
    pollMs: 200,
    async close() {
      for (const storage of storages) await storage.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
});
