// Writes a labelled answering-machine detection set to a directory: the training set
// (src/amd/dataset.ts) or, with --heldout, the held-out set built apart
// (src/amd/heldout.ts); one 8 kHz 16-bit mono WAV per clip and labels.csv
// (id, label, kind, group, voice, text, description).
// Usage: npx tsx scripts/amd-dataset.ts --out DIR [--count 240] [--seed 1] [--heldout]
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { generateAmdDataset } from '../src/amd/dataset.js';
import { generateHeldOutAmdDataset } from '../src/amd/heldout.js';
import { encodeWav } from '../src/media/wav.js';

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    count: { type: 'string', default: '240' },
    seed: { type: 'string', default: '1' },
    heldout: { type: 'boolean', default: false },
  },
});
if (!values.out) {
  console.error('usage: npx tsx scripts/amd-dataset.ts --out DIR [--count 240] [--seed 1] [--heldout]');
  process.exit(2);
}
const count = Number(values.count);
const seed = Number(values.seed);
if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
if (!Number.isInteger(seed)) throw new Error('--seed must be an integer');

const dir = path.resolve(values.out);
fs.mkdirSync(dir, { recursive: true });
const clips = await (values.heldout ? generateHeldOutAmdDataset : generateAmdDataset)({ count, seed });
const csv = (value: string | null) => `"${(value ?? '').replace(/"/g, '""')}"`;
const rows = ['id,label,kind,group,voice,text,description'];
for (const clip of clips) {
  fs.writeFileSync(path.join(dir, `${clip.id}.wav`), encodeWav(clip.pcm));
  rows.push(
    [clip.id, clip.label, clip.kind, clip.greetingGroup, csv(clip.voice), csv(clip.text), csv(clip.description)].join(
      ',',
    ),
  );
}
fs.writeFileSync(path.join(dir, 'labels.csv'), `${rows.join('\n')}\n`);
const by = (label: string) => clips.filter((c) => c.label === label).length;
console.log(
  `${clips.length} clips in ${dir}: ${by('human')} human, ${by('machine')} machine, ${by('unknown')} unknown (see labels.csv)`,
);
