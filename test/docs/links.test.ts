import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';

const ROOT = path.join(import.meta.dirname, '../..');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-');
}

/** The anchors a Markdown file offers: its headings (repeats numbered as GitHub does) and `<a id>`s. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#+ (.*)/.exec(line);
    if (heading) {
      const s = slug(heading[1]!);
      const n = seen.get(s) ?? 0;
      seen.set(s, n + 1);
      anchors.add(n === 0 ? s : `${s}-${n}`);
    }
    for (const m of line.matchAll(/<a id="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

test('the README and docs/ link only to files and headings that exist', () => {
  const docs = fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join(ROOT, 'docs', f));
  const broken: string[] = [];
  for (const file of [path.join(ROOT, 'README.md'), ...docs]) {
    const text = fs.readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [file_, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = file_ ? path.resolve(path.dirname(file), file_) : file;
      const where = `${path.relative(ROOT, file)} -> ${target}`;
      if (!fs.existsSync(resolved)) broken.push(`${where}: no such file`);
      else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
        broken.push(`${where}: no such heading`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('the docs index (docs/README.md) lists every page of docs/', () => {
  const index = fs.readFileSync(path.join(ROOT, 'docs/README.md'), 'utf8');
  const linked = new Set([...index.matchAll(/\]\(([^)#\s]+\.md)\)/g)].map((m) => m[1]));
  const pages = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md');
  assert.deepEqual(
    pages.filter((p) => !linked.has(p)),
    [],
  );
});
