import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';

/** A test server's environment: any free port on loopback, its own data folder, a known key. */
function serverEnv(dataDir: string, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    OPENLINE_API_KEY: 'startup-key-0123456789',
    ...env,
  };
}

/** Starts the server with `env`; resolves with its exit code and what it wrote to stderr. */
function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-startup-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: serverEnv(dataDir, env),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // A server that did start is stopped after a moment: the test is only about refusing.
  const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      fs.rmSync(dataDir, { recursive: true, force: true });
      resolve({ code, stderr });
    }),
  );
}

test('a SIP trunk without espeak-ng stops start-up with a message naming the package', async () => {
  const r = await start({ OPENLINE_SIP_TRUNK: 'sip:127.0.0.1:5999', OPENLINE_SIP_LISTEN: 'off', PATH: '/nonexistent' });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /espeak-ng is not installed, and calls through the SIP trunk \(OPENLINE_SIP_TRUNK\) need it/);
});

test('sandbox audio mode without espeak-ng stops start-up with a message naming the package', async () => {
  const r = await start({ OPENLINE_SANDBOX_AUDIO: '1', PATH: '/nonexistent' });
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /espeak-ng is not installed, and the sandbox audio mode \(OPENLINE_SANDBOX_AUDIO\) needs it .*apt-get install espeak-ng/,
  );
});

test('npm start stopped with SIGTERM (a supervisor, a container stop) shuts the server down, not only npm', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-startup-'));
  const npm = spawn('npm', ['start', '--silent'], {
    env: serverEnv(dataDir, { OPENLINE_SIP_LISTEN: 'off' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const ready = new Promise<number>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const pid = /"pid":(\d+)[^\n]*"msg":"Openline ready"/.exec(output)?.[1];
      if (pid) resolve(Number(pid));
    };
    npm.stdout.on('data', read);
    npm.stderr.on('data', read);
    npm.on('exit', () => reject(new Error(`npm start ended before the server was ready:\n${output}`)));
  });
  try {
    const serverPid = await ready;
    npm.kill('SIGTERM');
    // The server drains and exits on its own (its SIGTERM handler), well before any later kill.
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && alive(serverPid)) await new Promise((r) => setTimeout(r, 100));
    const stillAlive = alive(serverPid);
    if (stillAlive) process.kill(serverPid, 'SIGKILL');
    assert.equal(stillAlive, false, 'the server process outlived npm start');
    assert.match(output, /shutting down/);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
