import fs from 'node:fs';
import path from 'node:path';

export const LOCK_FILE = 'openline.pid';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes this process the one server on a SQLite DATA_DIR: two servers on one database file would
 * both run its jobs and dial its calls. A lock file holds the owner's pid; one left by a server
 * that is no longer running is taken over. Returns the function that releases it. (The CLI works
 * beside a running server and takes no lock.)
 */
export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, LOCK_FILE);
  const mine = String(process.pid);
  for (;;) {
    try {
      fs.writeFileSync(file, mine, { flag: 'wx', mode: 0o600 });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
      throw new Error(
        `another Openline server (pid ${owner}) is using DATA_DIR ${dataDir}. Stop it, or give this one ` +
          `another DATA_DIR (or OPENLINE_DATABASE_URL for several servers on one PostgreSQL database). ` +
          `If no server is running, delete ${file}.`,
      );
    }
    fs.rmSync(file, { force: true });
  }
  return () => {
    try {
      if (fs.readFileSync(file, 'utf8') === mine) fs.rmSync(file, { force: true });
    } catch {
      // Already gone.
    }
  };
}
