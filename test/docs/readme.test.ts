import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ROOT,
  missingCommands,
  notRunMarks,
  runBlocks,
  shellBlocks,
  startDocsServer,
  type DocsServer,
} from './shell.js';

/**
 * The README's shell examples, run as written against a live server (`src/main.ts` in a child
 * process), so the README cannot drift from what Openline does. The blocks run in order in one
 * bash session; the only change is the server's address (a free port instead of 8080). The key
 * the README shows is the server's key. The blocks marked not-run are `npm install && npm start`
 * (this test's server stands in for it) and `npm install && npm test` (which runs this very test).
 */

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const missing = missingCommands();

describe('README examples run as written', { skip: missing.length > 0 && `needs ${missing.join(', ')}` }, () => {
  const key = /OPENLINE_API_KEY=(ol_\w+)/.exec(README)?.[1];
  let server: DocsServer;

  before(async () => {
    assert.ok(key, 'the README exports an example key');
    server = await startDocsServer(key);
  });

  after(async () => {
    await server?.stop();
  });

  it('the blocks that do not run are the two npm commands', (t) => {
    const marked = shellBlocks(README).filter((b) => b.notRun);
    for (const b of marked) t.diagnostic(`not run: ${b.where}: ${b.notRun}`);
    assert.equal(notRunMarks(README), marked.length, 'every not-run mark is just before a shell block');
    assert.deepEqual(
      marked.map((b) => b.code),
      ['npm install && npm start', 'npm install && npm test'],
    );
  });

  it('every shell block of the README succeeds, and the first call ends completed with a person', () => {
    const blocks = shellBlocks(README).filter((b) => !b.notRun);
    assert.ok(blocks.length >= 3, `found ${blocks.length} runnable blocks`);
    const { stdout: output, exchanges } = runBlocks(blocks, server.origin, { sink: server.sink });
    assert.deepEqual(
      exchanges.filter((e) => e.status < 200 || e.status >= 300),
      [],
      'every request succeeds',
    );
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
