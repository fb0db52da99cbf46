import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ROOT, jsonBlockAfter } from './shell.js';
import { parsePersona } from '../../src/carriers/sandbox/persona-format.js';
import { testMain } from '../../src/cli/test.js';

/**
 * The files the docs show for readers to save and use as they are (a persona file, an agent test
 * file), checked the way Openline reads them. The pathway.json of docs/api.md is sent by the
 * docs/api.md examples themselves (pages.test.ts).
 */

const read = (page: string) => fs.readFileSync(path.join(ROOT, 'docs', page), 'utf8');

describe('files shown in docs/', () => {
  it('the persona file of docs/sandbox.md loads, and a typo in it fails as the page shows', () => {
    const markdown = read('sandbox.md');
    const persona = jsonBlockAfter(markdown, '## The persona file format');
    assert.equal(parsePersona(persona, 'robin.json').number, '0150');
    const shown = /^Invalid persona file (\S+): .*$/m.exec(markdown);
    assert.ok(shown, 'the page shows the error of a typo');
    const typo = JSON.parse(JSON.stringify(persona).replace('"goto":"take"', '"goto":"tkae"')) as unknown;
    assert.throws(() => parsePersona(typo, shown[1]!), { message: shown[0] });
  });

  it('the agent test file of docs/agent-tests.md passes on the offline model', async () => {
    const yaml = /^## Test files\n[\s\S]*?^```yaml\n([\s\S]*?)^```$/m.exec(read('agent-tests.md'))?.[1];
    assert.ok(yaml, 'the page shows a test file');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-docs-suite-'));
    try {
      fs.writeFileSync(path.join(dir, 'front-desk.yaml'), yaml);
      const out: string[] = [];
      const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
      const code = await testMain([path.join(dir, 'front-desk.yaml')], io, { PATH: process.env.PATH });
      assert.equal(code, 0, out.join('\n'));
      assert.match(out.join('\n'), /1 of 1 cases passed/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
