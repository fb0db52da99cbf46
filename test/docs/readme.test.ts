import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startServerProcess } from '../../src/testing/server-process.js';

/**
 * The README's shell examples, run as written against a live server (`src/main.ts` in a child
 * process), so the README cannot drift from what Openline does. The blocks run in order in one
 * bash session; the only change is the server's address (a free port instead of 8080). The key
 * the README shows is the server's key. Blocks with `npm install` are the commands that run this
 * very test, and are skipped.
 */

const README = fs.readFileSync(path.join(import.meta.dirname, '../../README.md'), 'utf8');

/** The ```sh blocks of a Markdown text, in order. */
export function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```(?:sh|bash)\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const missing = ['bash', 'curl', 'jq'].filter((c) => !has(c));

describe('README examples run as written', { skip: missing.length > 0 && `needs ${missing.join(', ')}` }, () => {
  const key = /OPENLINE_API_KEY=(ol_\w+)/.exec(README)?.[1];
  let server: ChildProcess;
  let origin = '';
  let dataDir = '';

  before(async () => {
    assert.ok(key, 'the README exports an example key');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-readme-'));
    const started = await startServerProcess({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      OPENLINE_API_KEY: key,
      // The sandbox's clock runs faster, so the README's 25-second call takes a few seconds.
      OPENLINE_TIME_SCALE: '8',
      LOG_LEVEL: 'info',
    });
    server = started.child;
    origin = new URL(started.baseUrl).origin;
  });

  after(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('every shell block of the README succeeds, and the first call ends completed with a person', () => {
    const blocks = shellBlocks(README).filter((b) => !/\bnpm (install|ci)\b/.test(b));
    assert.ok(blocks.length >= 3, `found ${blocks.length} runnable blocks`);
    const script = [
      'set -euo pipefail',
      ...blocks.map((b, i) => `echo "::block ${i + 1}"\n${b.replaceAll('http://localhost:8080', origin)}`),
    ].join('\n');
    let output: string;
    try {
      output = execFileSync('bash', ['-c', script], { encoding: 'utf8', timeout: 180_000 });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; status?: number };
      assert.fail(`a README block failed (exit ${e.status}):\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
    }
    // The first call's record, as the README's jq prints it.
    const start = output.indexOf('{', output.indexOf('"queue_status"') - 40);
    const record = JSON.parse(output.slice(start, output.indexOf('\n}', start) + 2)) as Record<string, unknown>;
    assert.equal(record.status, 'completed', output);
    assert.equal(record.queue_status, 'complete');
    assert.equal(record.answered_by, 'human');
    assert.deepEqual(record.metadata, { patient: 'P-1042' });
    assert.match(String(record.concatenated_transcript), /^user: Hello\?\nassistant: /);
  });
});
