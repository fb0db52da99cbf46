// Answering-machine detection benchmark. Two clip sets built apart:
// - training (src/media/amd-dataset.ts): the set the detector's thresholds are fitted on;
// - held-out (src/media/amd-heldout.ts): other greeting lists (receptionists, shop clerks,
//   "<name> residence", carrier prompts, ...), other espeak-ng accents, variants and speaking
//   rates, other beeps and line conditions (babble, AGC swings, lost packets, mu-law).
// It runs the streaming detector (src/media/amd.ts) over each clip as a call would feed it and
// prints each set's figures apart: accuracy, people taken for machines, machines taken for people,
// unknowns, decision times (p50/p90) and the confusion matrix. Sets are generated once and cached
// under the system's temporary directory (openline-amd/).
// Usage: npm run bench:amd [-- --train-count 480 --train-seed 1 --heldout-count 400 --heldout-seed 1 --verbose]
import { parseArgs } from 'node:util';
import {
  cachedAmdClips,
  evaluateAmd,
  generateAmdDataset,
  type AmdClip,
  type AmdEvaluation,
  type AmdLabel,
} from '../../src/media/amd-dataset.js';
import { generateHeldOutAmdDataset } from '../../src/media/amd-heldout.js';
import type { AmdDecision } from '../../src/media/amd.js';

const { values } = parseArgs({
  options: {
    'train-count': { type: 'string', default: '480' },
    'train-seed': { type: 'string', default: '1' },
    'heldout-count': { type: 'string', default: '400' },
    'heldout-seed': { type: 'string', default: '1' },
    verbose: { type: 'boolean', default: false },
  },
});
const integer = (name: keyof typeof values, min: number) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
  return n;
};
const trainCount = integer('train-count', 1);
const trainSeed = integer('train-seed', 0);
const heldCount = integer('heldout-count', 1);
const heldSeed = integer('heldout-seed', 0);

const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(1)} %`);
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const percentile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
};

function report(title: string, result: AmdEvaluation): void {
  const labels: AmdLabel[] = ['human', 'machine', 'unknown'];
  const decisions: AmdDecision[] = ['human', 'machine', 'unknown'];
  const answered = result.outcomes.filter((o) => o.clip.label !== 'unknown').map((o) => o.atMs);
  console.log(
    `\n== ${title}: ${result.total} clips (${labels.map((l) => `${result.confusion[l].human + result.confusion[l].machine + result.confusion[l].unknown} ${l}`).join(', ')})`,
  );
  console.log(`accuracy                 ${pct(result.correct, result.total)} (${result.correct}/${result.total})`);
  console.log(
    `people taken for machines ${pct(result.humansAsMachines, result.humans)} (${result.humansAsMachines}/${result.humans})`,
  );
  console.log(
    `machines taken for people ${pct(result.machinesAsHumans, result.machines)} (${result.machinesAsHumans}/${result.machines})`,
  );
  console.log(`unknowns (person/machine) ${result.unknowns}`);
  console.log(`decision, person+machine  p50 ${sec(percentile(answered, 0.5))}, p90 ${sec(percentile(answered, 0.9))}`);
  for (const label of labels) {
    const t = result.byLabel[label];
    console.log(`  ${label.padEnd(8)}                p50 ${sec(t.medianMs)}, p90 ${sec(t.p90Ms)}`);
  }
  console.log(`confusion (rows: truth, columns: decision)`);
  console.log(`${''.padEnd(10)}${decisions.map((d) => d.padStart(9)).join('')}`);
  for (const label of labels) {
    console.log(`${label.padEnd(10)}${decisions.map((d) => String(result.confusion[label][d]).padStart(9)).join('')}`);
  }
  const wrong = result.outcomes.filter((o) => o.decision !== o.clip.label);
  const shown = values.verbose ? wrong : wrong.filter((o) => o.clip.label === 'human' && o.decision === 'machine');
  if (shown.length > 0) console.log(values.verbose ? 'misclassified:' : 'people taken for machines:');
  for (const o of shown) {
    console.log(
      `  ${o.clip.id} ${o.clip.label} -> ${o.decision} (${o.reason}, ${sec(o.atMs)}): ${o.clip.description}` +
        (o.clip.voice ? ` [${o.clip.voice}]` : ''),
    );
  }
}

const started = Date.now();
const training: AmdClip[] = await cachedAmdClips(`training-${trainSeed}-${trainCount}`, () =>
  generateAmdDataset({ count: trainCount, seed: trainSeed }),
);
const heldOut: AmdClip[] = await cachedAmdClips(`heldout-${heldSeed}-${heldCount}`, () =>
  generateHeldOutAmdDataset({ count: heldCount, seed: heldSeed }),
);
console.log(
  `AMD bench: training set seed ${trainSeed} (${trainCount} clips), held-out set seed ${heldSeed} (${heldCount} clips); ready in ${sec(Date.now() - started)}`,
);
report('training set (the thresholds are fitted here)', evaluateAmd(training));
report('HELD-OUT set (never fitted on)', evaluateAmd(heldOut));
