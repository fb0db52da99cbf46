import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ROOT,
  jsonBlockAfter,
  missingCommands,
  notRunMarks,
  runBlocks,
  shellBlocks,
  startDocsServer,
  type BlocksRun,
  type DocsServer,
} from './shell.js';

/**
 * The shell examples of docs/*.md, run as written against a live server: each page's blocks in
 * order in one bash session, the pages one after the other against one server. The pages assume what docs/api.md sets up: `OL` the server's address and `OPENLINE_API_KEY` its key;
 * the `openline` command finds the server's storage through `DATA_DIR` and the server through
 * `PORT`, as on the reader's machine. Every block runs unless `<!-- not-run: REASON -->` precedes
 * it, and those are listed here, so none escapes unnoticed. Every HTTP exchange of the examples must
 * succeed (2xx), and where a page shows output, the output is checked.
 */

const DOCS = path.join(ROOT, 'docs');
const KEY = 'ol_QS5abjBXuXIMuEFC8TCtpVYN0KZZHcuc';

/** The blocks that do not run here, by page, and why: a change to this list is a deliberate one. */
const NOT_RUN: Record<string, string[]> = {
  'configuration.md': ["the test's own server stands in for it", 'runs the test suite, this test among it'],
  'mcp.md': ['needs Claude Code'],
  'providers.md': [
    'starts a second server, and needs provider accounts (or a local model server)',
    'starts a second server, and needs provider accounts (or a local speech server)',
  ],
  'sandbox.md': ['starts a second server'],
  'sip.md': ['starts a second server, and needs a SIP trunk'],
  'twilio.md': ['starts a second server, and needs a Twilio account and a public host'],
};

/** The files the examples write in the reader's directory (removed after the run). */
const WRITTEN = [
  'call.wav',
  'maya.wav',
  'hello.wav',
  'hello-16k.wav',
  'results.xml',
  'numbers.csv',
  'pathway.json',
  'renter.yaml',
  'faq.txt',
];

/** The JSON objects a run printed on lines of their own (compact, or pretty as `jq` prints them). */
function printedObjects(stdout: string): Record<string, unknown>[] {
  const objects: Record<string, unknown>[] = [];
  for (const m of stdout.matchAll(/^(\{.*\})$|^\{\n[\s\S]*?\n\}$/gm)) {
    try {
      objects.push(JSON.parse(m[0]) as Record<string, unknown>);
    } catch {
      // a line that only looks like JSON
    }
  }
  return objects;
}

function isWav(file: string): boolean {
  const head = fs.readFileSync(path.join(ROOT, file)).subarray(0, 12).toString('latin1');
  return head.startsWith('RIFF') && head.endsWith('WAVE');
}

/** Checks of what a page's examples printed, for the pages that show output. */
const CHECKS: Record<string, (run: BlocksRun, server: DocsServer) => void> = {
  'agent-tests.md': ({ stdout }) => {
    assert.match(stdout, /^(\d+) of \1 cases passed/m);
    assert.match(
      stdout,
      /^PASS {2}renter › a renter is not a fit\n\n1 of 1 cases passed\.$/m,
      'the case on the server',
    );
    assert.match(fs.readFileSync(path.join(ROOT, 'results.xml'), 'utf8'), /<testsuites[^>]* failures="0"/);
    const run = printedObjects(stdout).at(-1) as { status?: string; overall_score?: number } | undefined;
    assert.equal(run?.status, 'PASSED', 'the scenario run through the API passes');
    assert.equal(run?.overall_score, 1);
  },
  'api.md': ({ stdout }) => {
    assert.ok(
      isWav('call.wav') && isWav('maya.wav') && isWav('hello.wav'),
      'the recording and the voices are WAV files',
    );
    assert.equal(
      fs.readFileSync(path.join(ROOT, 'hello-16k.wav')).readUInt32LE(24),
      16000,
      'output_format pcm_16000 is 16 kHz',
    );
    assert.match(stdout, /^event: end$/m, 'the events stream ends with the call');
    assert.match(stdout, /"message":"No language model is configured[^"]*","answers":\[null,null\]/);
    assert.match(stdout, /"url":"ws:\/\/127\.0\.0\.1:\d+\/ws\/listen\//);
    assert.match(stdout, /"current_node_id":"sales"/, 'the pathway chat follows "yes" to the transfer');
    assert.match(stdout, /"status":"pending","registration_id":"A2P-/);
    assert.match(stdout, /<li><code>POST \/v1\/calls<\/code>: Send Call<\/li>/, '/docs lists the operations');
  },
  'mcp.md': ({ stdout }) => {
    assert.match(stdout, /^\d+\n21$/m, 'a tool called over JSON-RPC answers, and the tools are listed');
  },
  'cli.md': ({ stdout }) => {
    assert.match(stdout, /^Created account .* \(acme\)/m);
    assert.match(stdout, /^Revoked key /m);
    assert.match(stdout, /only retries remain: 1 number\(s\) wait for a retry/);
    assert.match(stdout, /is stopped\.$/m);
  },
  'pathways.md': ({ stdout }) => {
    const chat = printedObjects(stdout).at(-1);
    assert.equal(chat?.current_node_id, 'bill', stdout);
    assert.deepEqual((chat?.variables as Record<string, unknown>).owns_home, true);
  },
  'sip.md': ({ stdout }) => {
    assert.match(String(printedObjects(stdout).at(-1)?.encrypted_key), /^ek_/);
  },
  'web-calls.md': ({ stdout }, server) => {
    const reply = printedObjects(stdout).at(-1) as { status: string; data: { url: string } };
    assert.equal(reply.status, 'success');
    assert.ok(reply.data.url.startsWith(`ws://127.0.0.1:${server.port}/ws/listen/`), reply.data.url);
  },
};

/** Files a page's examples read that the page shows rather than ships (written before the run). */
const PREPARE: Record<string, (markdown: string) => void> = {
  'api.md': (markdown) => {
    const pathway = jsonBlockAfter(markdown, 'save it as `pathway.json`');
    fs.writeFileSync(path.join(ROOT, 'pathway.json'), JSON.stringify(pathway));
  },
};

const pages = fs
  .readdirSync(DOCS)
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((file) => {
    const markdown = fs.readFileSync(path.join(DOCS, file), 'utf8');
    return { file, markdown, blocks: shellBlocks(markdown, `docs/${file}`) };
  });

const missing = missingCommands();

describe('docs/ examples run as written', { skip: missing.length > 0 && `needs ${missing.join(', ')}` }, () => {
  it('every not-run mark precedes a shell block, and the blocks that do not run are the listed ones', (t) => {
    const skipped: Record<string, string[]> = {};
    for (const { file, markdown, blocks } of pages) {
      const marked = blocks.filter((b) => b.notRun);
      assert.equal(
        notRunMarks(markdown),
        marked.length,
        `a not-run mark of docs/${file} is not just before a shell block`,
      );
      if (marked.length > 0) skipped[file] = marked.map((b) => b.notRun!);
      for (const b of marked) t.diagnostic(`not run: ${b.where}: ${b.notRun}`);
    }
    const total = Object.values(skipped).flat().length;
    const runnable = pages.flatMap((p) => p.blocks).length - total;
    t.diagnostic(`${runnable} blocks run, ${total} do not`);
    assert.deepEqual(skipped, NOT_RUN);
  });

  let server: DocsServer;
  before(
    async () => {
      server = await startDocsServer(KEY);
    },
    { timeout: 60_000 },
  );
  after(async () => {
    await server?.stop();
  });

  for (const { file, markdown, blocks } of pages) {
    const runnable = blocks.filter((b) => !b.notRun);
    if (runnable.length === 0) continue;
    it(`docs/${file}: its ${runnable.length} shell blocks succeed`, { timeout: 300_000 }, () => {
      const present = WRITTEN.filter((f) => fs.existsSync(path.join(ROOT, f)));
      assert.deepEqual(present, [], 'files the examples write are already in the repository directory: move them away');
      try {
        PREPARE[file]?.(markdown);
        const run = runBlocks(runnable, server.origin, {
          key: KEY,
          sink: server.sink,
          timeoutMs: 280_000,
          env: { OL: server.origin, OPENLINE_API_KEY: KEY, PORT: server.port, DATA_DIR: server.dataDir },
        });
        const failed = run.exchanges.filter((e) => e.status < 200 || e.status >= 300);
        assert.deepEqual(failed, [], 'every request succeeds');
        assert.doesNotMatch(run.stdout, /"status":\s*"error"/, 'no example prints an error');
        CHECKS[file]?.(run, server);
      } finally {
        for (const f of WRITTEN) fs.rmSync(path.join(ROOT, f), { force: true });
      }
    });
  }
});
