// Answering-machine detection benchmark: generates the labelled clip set (src/media/amd-dataset.ts,
// espeak-ng voices at telephone quality), runs the streaming detector (src/media/amd.ts) over each
// clip as a call would feed it, and reports accuracy, humans classed as machines, machines classed
// as humans, unknowns, time to decision and the confusion table.
// Usage: npm run bench:amd [-- --count 240 --seed 1 --verbose]
// With --seeds (e.g. --seeds 1,41-50: the held-out sets the detector's thresholds were checked on) it
// generates one set per seed and prints each seed's figures on a line, then the pooled figures.
import { parseArgs } from 'node:util';
import {
  evaluateAmd,
  generateAmdDataset,
  type AmdClip,
  type AmdEvaluation,
  type AmdLabel,
} from '../../src/media/amd-dataset.js';
import type { AmdDecision } from '../../src/media/amd.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '240' },
    seed: { type: 'string', default: '1' },
    seeds: { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});
const count = Number(values.count);
const seed = Number(values.seed);
if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
if (!Number.isInteger(seed)) throw new Error('--seed must be an integer');

const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(1)} %`);
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
/** Median time to decision over the person and machine clips (dead air always runs the full window). */
const answeredMedianMs = (result: AmdEvaluation) => {
  const answered = result.outcomes
    .filter((o) => o.clip.label !== 'unknown')
    .map((o) => o.atMs)
    .sort((a, b) => a - b);
  return answered[Math.floor((answered.length - 1) / 2)] ?? 0;
};

if (values.seeds !== undefined) {
  const seeds = parseSeeds(values.seeds);
  const summary = (name: string, result: AmdEvaluation) =>
    console.log(
      `${name.padEnd(10)}accuracy ${pct(result.correct, result.total).padStart(7)}, ` +
        `humans as machines ${`${result.humansAsMachines}/${result.humans}`.padStart(7)} ` +
        `(${pct(result.humansAsMachines, result.humans)}), ` +
        `machines as humans ${`${result.machinesAsHumans}/${result.machines}`.padStart(7)} ` +
        `(${pct(result.machinesAsHumans, result.machines)}), ` +
        `unknowns ${result.unknowns}, human+machine median ${sec(answeredMedianMs(result))}`,
    );
  console.log(`AMD bench: ${count} clips a seed, seeds ${seeds.join(', ')}`);
  const pooled: AmdClip[] = [];
  for (const s of seeds) {
    const clips = await generateAmdDataset({ count, seed: s });
    pooled.push(...clips);
    summary(`seed ${s}`, evaluateAmd(clips));
  }
  const result = evaluateAmd(pooled);
  summary('pooled', result);
  const wrong = result.outcomes.filter((o) => o.decision !== o.clip.label);
  if (values.verbose) {
    if (wrong.length > 0) console.log('\nmisclassified:');
    for (const o of wrong) console.log(`  ${o.clip.id} ${o.clip.label} -> ${o.decision} (${o.reason}, ${sec(o.atMs)})`);
  }
  process.exit(0);
}

/** "1,41-50" -> [1, 41, ..., 50]. */
function parseSeeds(text: string): number[] {
  const seeds = text.split(',').flatMap((part) => {
    const range = /^\s*(-?\d+)\s*-\s*(-?\d+)\s*$/.exec(part);
    if (range) {
      const [from, to] = [Number(range[1]), Number(range[2])];
      if (to < from) throw new Error(`--seeds: empty range ${part}`);
      return Array.from({ length: to - from + 1 }, (_, i) => from + i);
    }
    if (!/^\s*-?\d+\s*$/.test(part)) throw new Error(`--seeds: not a seed or a range: ${part}`);
    return [Number(part)];
  });
  if (seeds.length === 0) throw new Error('--seeds: no seeds');
  return seeds;
}

const started = Date.now();
const clips = await generateAmdDataset({ count, seed });
const generatedMs = Date.now() - started;
const detectStart = process.hrtime.bigint();
const result = evaluateAmd(clips);
const detectMs = Number(process.hrtime.bigint() - detectStart) / 1e6;
const audioMs = clips.reduce((sum, c) => sum + (c.pcm.length / 8000) * 1000, 0);

const labels: AmdLabel[] = ['human', 'machine', 'unknown'];
const decisions: AmdDecision[] = ['human', 'machine', 'unknown'];
console.log(`AMD bench: ${count} clips, seed ${seed} (generated in ${sec(generatedMs)})`);
for (const label of labels) console.log(`  ${label.padEnd(8)} ${clips.filter((c) => c.label === label).length} clips`);
console.log('');
console.log(`accuracy                 ${pct(result.correct, result.total)} (${result.correct}/${result.total})`);
console.log(
  `humans as machines       ${pct(result.humansAsMachines, result.humans)} (${result.humansAsMachines}/${result.humans})`,
);
console.log(
  `machines as humans       ${pct(result.machinesAsHumans, result.machines)} (${result.machinesAsHumans}/${result.machines})`,
);
console.log(`unknowns (human/machine) ${result.unknowns}`);
console.log(`time to decision         median ${sec(result.medianMs)}, p90 ${sec(result.p90Ms)} (all clips)`);
console.log(`  human+machine          median ${sec(answeredMedianMs(result))}`);
for (const label of labels) {
  const t = result.byLabel[label];
  console.log(`  ${label.padEnd(8)}               median ${sec(t.medianMs)}, p90 ${sec(t.p90Ms)}`);
}
console.log(`detector cost            ${(detectMs / (audioMs / 1000)).toFixed(3)} ms per second of audio`);
console.log('');
console.log(`confusion (rows: label, columns: decision)`);
console.log(`${''.padEnd(10)}${decisions.map((d) => d.padStart(9)).join('')}`);
for (const label of labels) {
  console.log(`${label.padEnd(10)}${decisions.map((d) => String(result.confusion[label][d]).padStart(9)).join('')}`);
}
const reasons = new Map<string, number>();
for (const o of result.outcomes) reasons.set(o.reason, (reasons.get(o.reason) ?? 0) + 1);
console.log('');
console.log(`reasons: ${[...reasons].map(([r, n]) => `${r} ${n}`).join(', ')}`);
const wrong = result.outcomes.filter((o) => o.decision !== o.clip.label);
if (wrong.length > 0) console.log('\nmisclassified:');
for (const o of values.verbose ? result.outcomes : wrong) {
  console.log(
    `  ${o.clip.id} ${o.clip.label} -> ${o.decision} (${o.reason}, ${sec(o.atMs)}): ${o.clip.description}` +
      (o.clip.voice ? ` [${o.clip.voice}]` : ''),
  );
}
