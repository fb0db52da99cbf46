// Answering-machine detection benchmark: generates the labelled clip set (src/media/amd-dataset.ts,
// espeak-ng voices at telephone quality), runs the streaming detector (src/media/amd.ts) over each
// clip as a call would feed it, and reports accuracy, humans classed as machines, machines classed
// as humans, unknowns, time to decision and the confusion table.
// Usage: npm run bench:amd [-- --count 240 --seed 1 --verbose]
import { parseArgs } from 'node:util';
import { evaluateAmd, generateAmdDataset, type AmdLabel } from '../../src/media/amd-dataset.js';
import type { AmdDecision } from '../../src/media/amd.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '240' },
    seed: { type: 'string', default: '1' },
    verbose: { type: 'boolean', default: false },
  },
});
const count = Number(values.count);
const seed = Number(values.seed);
if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
if (!Number.isInteger(seed)) throw new Error('--seed must be an integer');

const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(1)} %`);
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

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
const answered = result.outcomes
  .filter((o) => o.clip.label !== 'unknown')
  .map((o) => o.atMs)
  .sort((a, b) => a - b);
console.log(`  human+machine          median ${sec(answered[Math.floor((answered.length - 1) / 2)] ?? 0)}`);
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
