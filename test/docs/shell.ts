import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startServerProcess } from '../../src/testing/server-process.js';

/**
 * What the tests of the documentation share: the shell blocks of a Markdown page, a live server
 * (`src/main.ts` in a child process) for them to talk to, and a bash session that runs them in
 * order, as a reader pastes them one after the other.
 */

export const ROOT = path.join(import.meta.dirname, '../..');

/** The address the docs show; the tests put the live server's address in its place. */
export const DOCS_ORIGIN = 'http://localhost:8080';

/**
 * The outside services the docs point webhooks and tools at (example.com): the tests put a sink
 * on loopback in their place, so no example sends anything off the machine.
 */
const OUTSIDE = /https:\/\/(?:api\.)?example\.com\b/g;

/** One ```sh (or ```bash) block of a page. */
export interface ShellBlock {
  /** The page, relative to the repository, and the line of the opening fence (1-based). */
  where: string;
  code: string;
  /** Why the block does not run in the test (`<!-- not-run: REASON -->` just before it), if so. */
  notRun?: string;
}

/**
 * The shell blocks of a Markdown text, in order. A block preceded (blank lines aside) by
 * `<!-- not-run: REASON -->` carries that reason: an HTML comment, which readers of the rendered
 * page do not see.
 */
export function shellBlocks(markdown: string, file = 'README.md'): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  let previous = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^```(\w*)\s*$/.exec(line);
    if (!fence) {
      if (line.trim() !== '') previous = line.trim();
      continue;
    }
    let end = i + 1;
    while (end < lines.length && !lines[end]!.startsWith('```')) end++;
    if (fence[1] === 'sh' || fence[1] === 'bash') {
      const notRun = /^<!-- not-run: (.+?) -->$/.exec(previous)?.[1];
      blocks.push({
        where: `${file}:${i + 1}`,
        code: lines.slice(i + 1, end).join('\n'),
        ...(notRun ? { notRun } : {}),
      });
    }
    previous = '';
    i = end;
  }
  return blocks;
}

/** The number of `<!-- not-run: ... -->` marks of a text (each must mark a shell block). */
export function notRunMarks(markdown: string): number {
  return [...markdown.matchAll(/^<!-- not-run: .+? -->$/gm)].length;
}

/** The first ```json block after `text` in a Markdown text, parsed. */
export function jsonBlockAfter(markdown: string, text: string): unknown {
  const at = markdown.indexOf(text);
  if (at < 0) throw new Error(`no "${text}" in the text`);
  const block = /^```json\n([\s\S]*?)^```$/m.exec(markdown.slice(at));
  if (!block) throw new Error(`no JSON block after "${text}"`);
  return JSON.parse(block[1]!) as unknown;
}

/** The commands the examples use, missing from this machine. */
export function missingCommands(commands = ['bash', 'curl', 'jq']): string[] {
  return commands.filter((c) => {
    try {
      execFileSync('sh', ['-c', `command -v ${c}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
}

/**
 * This process's OPENLINE_* variables, unset: a developer's own (a PostgreSQL URL, a server URL for
 * the CLI) must not send the examples elsewhere. Spawned processes ignore undefined values.
 */
function withoutOwnSettings(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.keys(process.env)
      .filter((k) => k.startsWith('OPENLINE_'))
      .map((k) => [k, undefined]),
  );
}

/** A live server for the examples: its origin and port, the key the docs show, its data directory. */
export interface DocsServer {
  origin: string;
  port: string;
  key: string;
  dataDir: string;
  /** The loopback address standing in for example.com: answers every request with 200. */
  sink: string;
  stop(): Promise<void>;
}

/**
 * Starts a server on a free loopback port with `key` as its account's key and a data directory of
 * its own. Its clock runs faster (OPENLINE_TIME_SCALE), so a call of half a minute takes a few seconds.
 */
export async function startDocsServer(key: string, env: NodeJS.ProcessEnv = {}): Promise<DocsServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-docs-'));
  const sink = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"ok":true}'));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  let child: ChildProcess;
  let baseUrl: string;
  try {
    ({ child, baseUrl } = await startServerProcess({
      ...withoutOwnSettings(),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      OPENLINE_API_KEY: key,
      OPENLINE_TIME_SCALE: '8',
      // The examples' webhooks and tools go to the loopback sink.
      OPENLINE_ALLOW_PRIVATE_URLS: '1',
      LOG_LEVEL: 'info',
      ...env,
    }));
  } catch (error) {
    sink.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const url = new URL(baseUrl);
  return {
    origin: url.origin,
    port: url.port,
    key,
    dataDir,
    sink: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      sink.closeAllConnections();
      await new Promise((resolve) => sink.close(resolve));
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An HTTP exchange of an example's curl: its status, method and URL, and the block it ran in. */
export interface Exchange {
  status: number;
  method: string;
  url: string;
  block: string;
}

/** What a run of blocks printed, and the HTTP exchanges of its curl commands. */
export interface BlocksRun {
  stdout: string;
  stderr: string;
  exchanges: Exchange[];
}

/**
 * Runs `blocks` in order in one bash session (`set -euo pipefail`) in the repository's directory,
 * with the docs' address replaced by the server's (example.com by `sink`, the placeholder key
 * `ol_...` by `key`), and
 * `env` over this process's environment (without its OPENLINE_* settings).
 * `curl` is wrapped so that each exchange's status goes to stderr as well (`--write-out
 * %{stderr}...`); what it prints on stdout is unchanged. Throws, with everything printed, when a
 * block fails.
 */
export function runBlocks(
  blocks: ShellBlock[],
  origin: string,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; key?: string; sink?: string } = {},
): BlocksRun {
  const code = (b: ShellBlock) => {
    let text = b.code.replaceAll(DOCS_ORIGIN, origin);
    if (options.sink) text = text.replaceAll(OUTSIDE, options.sink);
    return options.key ? text.replaceAll(/\bol_\.\.\./g, options.key) : text;
  };
  const script = [
    'set -euo pipefail',
    `curl() { command curl --write-out '%{stderr}::http %{http_code} %{method} %{url_effective}\n' "$@"; }`,
    ...blocks.map((b) => `echo "::block ${b.where}"; echo "::block ${b.where}" >&2\n${code(b)}`),
  ].join('\n');
  const run = spawnSync('bash', ['-c', script], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...withoutOwnSettings(), ...options.env },
    timeout: options.timeoutMs ?? 180_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const exchanges: Exchange[] = [];
  let block = '';
  for (const line of run.stderr.split('\n')) {
    const marker = /^::block (.+)$/.exec(line);
    if (marker) block = marker[1]!;
    const http = /^::http (\d+) (\S+) (\S+)$/.exec(line);
    if (http) exchanges.push({ status: Number(http[1]), method: http[2]!, url: http[3]!, block });
  }
  if (run.status !== 0) {
    const why = run.error ? String(run.error) : `exit ${run.status ?? run.signal}`;
    throw new Error(`a block failed in ${block || 'the preamble'} (${why}):\n${run.stdout}\n${run.stderr}`);
  }
  return { stdout: run.stdout, stderr: run.stderr, exchanges };
}
