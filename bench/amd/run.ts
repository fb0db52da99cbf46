// Answering-machine detection benchmark. Two clip sets built apart:
// - training (src/amd/dataset.ts): the set the detector's thresholds are fitted on;
// - held-out (src/amd/heldout.ts): other greeting lists (receptionists, shop clerks,
//   "<name> residence", carrier prompts, ...), other espeak-ng accents, variants and speaking
//   rates, other beeps and line conditions (babble, AGC swings, lost packets, mu-law).
// It prints each set's figures apart: accuracy, people taken for machines, machines taken for
// people, unknowns, decision times (p50/p90 over person and machine clips) and the confusion
// matrix; audio alone, and with the conversational cue (the agent says a short opener: a person
// falls silent and answers, a machine plays on). On the training set it also runs
// leave-one-group-out cross-validation (by greeting, by voice), and it fits the thresholds afresh
// by the cost rule to show the detector's defaults are that fit. Sets are generated once and
// cached under the system's temporary directory (openline-amd/).
// Usage: npm run bench:amd [-- --train-count 480 --train-seed 1 --heldout-count 400 --heldout-seed 1
//                             --quick (no cross-validation) --verbose (list every mistake)
//                             --training-only (leave the held-out set unscored while changing the detector)]
// With --api it calls the sandbox personas through the public API in audio mode instead
// (bench/amd/api.ts): npm run bench:amd -- --api [--rounds 1] [--model person|voicemail|silent]
// (--model: the agent has an emulated language model whose reading of who answered is always
// that one, or never comes: what the cost rule lets a wrong model do; --personas DIR: call the
// persona files of DIR, with DIR/expected.tsv, instead of the built-in AMD personas, e.g.
// bench/amd/personas-1 to -8, greetings written apart from every clip set; given more than once,
// each set in turn and then the figures over all of them, `--personas built-in` naming the
// built-in set)
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cachedAmdClips, generateAmdDataset, type AmdClip, type AmdLabel } from '../../src/amd/dataset.js';
import { generateHeldOutAmdDataset } from '../../src/amd/heldout.js';
import { DEFAULT_AMD_SETTINGS, type AmdDecision, type AmdSettings } from '../../src/amd/acoustic.js';
import {
  crossValidate,
  fitWithGate,
  percentile,
  scoreAmd,
  traces,
  withOpener,
  type AmdScore,
} from '../../src/amd/fit.js';
import type { ApiAmdOutcome } from './api.js';

const { values } = parseArgs({
  options: {
    'train-count': { type: 'string', default: '480' },
    'train-seed': { type: 'string', default: '1' },
    'heldout-count': { type: 'string', default: '400' },
    'heldout-seed': { type: 'string', default: '1' },
    quick: { type: 'boolean', default: false },
    api: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '1' },
    model: { type: 'string' },
    personas: { type: 'string', multiple: true },
    verbose: { type: 'boolean', default: false },
    'training-only': { type: 'boolean', default: false },
  },
});
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const integer = (name: 'train-count' | 'train-seed' | 'heldout-count' | 'heldout-seed', min: number) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
  return n;
};
/** The API run's figures: right, people hung up on, when answered_by was decided, the confusion. */
function printApiFigures(outcomes: readonly ApiAmdOutcome[]): void {
  const answers = ['human', 'voicemail', 'unknown'];
  const count = (expected: string, got: string) =>
    outcomes.filter((o) => o.expected === expected && o.answeredBy === got).length;
  const right = outcomes.filter((o) => o.answeredBy === o.expected).length;
  const people = outcomes.filter((o) => o.expected === 'human');
  const hungUp = people.filter((o) => o.answeredBy === 'voicemail').length;
  console.log(
    `answered_by right ${right}/${outcomes.length} (${((100 * right) / outcomes.length).toFixed(1)} %), ` +
      `people taken for voicemail ${hungUp}/${people.length}`,
  );
  const times = outcomes.map((o) => o.decidedMs).filter((ms): ms is number => ms !== null);
  console.log(
    `answered_by decided (its final value, person or voicemail, ${times.length} calls): ` +
      `p50 ${sec(percentile(times, 0.5))}, p90 ${sec(percentile(times, 0.9))} after the answer`,
  );
  console.log(`confusion (rows: who answered, columns: answered_by)  ${answers.map((a) => a.padStart(10)).join('')}`);
  for (const expected of ['human', 'voicemail'])
    console.log(
      `${''.padEnd(53)}${expected.padEnd(10)}${answers.map((a) => String(count(expected, a)).padStart(10)).join('')}`,
    );
}

if (values.api) {
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a positive integer');
  const model = values.model;
  if (model !== undefined && model !== 'person' && model !== 'voicemail' && model !== 'silent')
    throw new Error('--model must be person, voicemail or silent');
  const { runApiAmd } = await import('./api.js');
  // Each folder of personas is its own sandbox (the built-in personas when none is given).
  const sets = (values.personas ?? ['built-in']).map((dir) => (dir === 'built-in' ? undefined : dir));
  const outcomes: Array<ApiAmdOutcome & { set: string }> = [];
  for (const dir of sets) {
    const started = Date.now();
    const these = await runApiAmd({
      rounds,
      concurrency: 4,
      scale: 4,
      ...(model && { model }),
      ...(dir && { personaDir: dir }),
    });
    const set = dir ? path.basename(dir) : 'built-in';
    outcomes.push(...these.map((o) => ({ ...o, set })));
    console.log(
      `AMD through the public API (sandbox audio mode${model ? `, emulated model: ${model}` : ''}, ` +
        `${dir ? `personas of ${dir}` : 'built-in personas'}): ${these.length} calls in ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
    printApiFigures(these);
  }
  if (sets.length > 1) {
    console.log(`\nAll ${sets.length} sets, ${outcomes.length} calls:`);
    printApiFigures(outcomes);
  }
  for (const o of outcomes.sort((a, b) => a.set.localeCompare(b.set) || a.number.localeCompare(b.number)))
    console.log(
      `  ${sets.length > 1 ? `${o.set} ` : ''}555-${o.number} ${o.answeredBy === o.expected ? 'right' : 'WRONG'} ${o.answeredBy.padEnd(9)} ` +
        `${(o.decidedMs === null ? '-' : sec(o.decidedMs)).padStart(7)} ${o.who}` +
        (o.decidedBy ? ` [decided by ${o.decidedBy}]` : ''),
    );
  process.exit(0);
}

const trainCount = integer('train-count', 1);
const trainSeed = integer('train-seed', 0);
const heldCount = integer('heldout-count', 1);
const heldSeed = integer('heldout-seed', 0);

const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(1)} %`);

function report(title: string, result: AmdScore): void {
  const labels: AmdLabel[] = ['human', 'machine', 'unknown'];
  const decisions: AmdDecision[] = ['human', 'machine', 'unknown'];
  console.log(`\n== ${title}: ${result.total} clips`);
  console.log(
    `accuracy ${pct(result.correct, result.total)} (${result.correct}/${result.total}); ` +
      `people taken for machines ${pct(result.humansAsMachines, result.humans)} (${result.humansAsMachines}/${result.humans}); ` +
      `machines taken for people ${pct(result.machinesAsHumans, result.machines)} (${result.machinesAsHumans}/${result.machines}); ` +
      `person/machine left unknown ${result.unknowns}`,
  );
  const times = (label: AmdLabel) => {
    const t = result.outcomes.filter((o) => o.clip.label === label).map((o) => o.atMs);
    return `${label} p50 ${sec(percentile(t, 0.5))} p90 ${sec(percentile(t, 0.9))}`;
  };
  console.log(
    `decision time: person+machine p50 ${sec(result.p50Ms)} p90 ${sec(result.p90Ms)} (${labels.map(times).join('; ')})`,
  );
  console.log(`confusion (rows: truth, columns: decision)  ${decisions.map((d) => d.padStart(8)).join('')}`);
  for (const label of labels) {
    console.log(
      `${''.padEnd(43)}${label.padEnd(8)}${decisions.map((d) => String(result.confusion[label][d]).padStart(8)).join('')}`,
    );
  }
  // Screeners are machines to the audio (a recording that talks on); their words make them
  // screeners, and a call's answered_by `human` (a person follows), which the audio cannot hear.
  const screeners = result.outcomes.filter((o) => o.clip.kind === 'screener');
  if (screeners.length > 0)
    console.log(
      `of the machines, call screeners: ${screeners.length}, decided ` +
        decisions.map((d) => `${d} ${screeners.filter((o) => o.decision === d).length}`).join(', '),
    );
  const wrong = result.outcomes.filter((o) => o.decision !== o.clip.label);
  const shown = values.verbose ? wrong : wrong.filter((o) => o.clip.label === 'human' && o.decision === 'machine');
  if (shown.length > 0) console.log(values.verbose ? 'mistakes:' : 'people taken for machines:');
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
const trainingOnly = values['training-only'];
const heldOut: AmdClip[] = trainingOnly
  ? []
  : await cachedAmdClips(`heldout-${heldSeed}-${heldCount}`, () =>
      generateHeldOutAmdDataset({ count: heldCount, seed: heldSeed }),
    );
const front = { voicedBelowPeakDb: DEFAULT_AMD_SETTINGS.voicedBelowPeakDb };
const trainPlain = traces(training, front);
const trainCued = withOpener(trainPlain, front);
const heldPlain = traces(heldOut, front);
const heldCued = withOpener(heldPlain, front);
console.log(
  `AMD bench: training set seed ${trainSeed} (${trainCount} clips), ` +
    (trainingOnly ? 'held-out set left out; ' : `held-out set seed ${heldSeed} (${heldCount} clips); `) +
    `generated or read from cache and analysed in ${sec(Date.now() - started)}`,
);

// The fit, from scratch on the training set: the background gate (tracing the clips again for each
// value) with the decision thresholds.
const fitted = fitWithGate(training).settings;
const names = Object.keys(fitted) as Array<keyof AmdSettings>;
const differs = names.filter((n) => fitted[n] !== DEFAULT_AMD_SETTINGS[n]);
console.log(
  `\nfitted on the training set by the cost rule: ${names.map((n) => `${n} ${String(fitted[n])}`).join(', ')}` +
    (differs.length === 0
      ? '\n(the detector defaults are this fit)'
      : `\nthe defaults differ in ${differs.map((n) => `${n} (default ${String(DEFAULT_AMD_SETTINGS[n])})`).join(', ')}`),
);

const audioAlone = { cue: false } as const;
report('training set, audio alone', scoreAmd(trainPlain, audioAlone));
report('training set, with the opener (conversational cue)', scoreAmd(trainCued));
if (!values.quick) {
  const byGreeting = crossValidate(trainPlain, (c) => c.greetingGroup);
  report(`training set, leave one greeting out (${byGreeting.groups} groups), audio alone`, byGreeting);
  const byVoice = crossValidate(trainPlain, (c) => c.voiceGroup);
  report(`training set, leave one voice out (${byVoice.groups} groups), audio alone`, byVoice);
  const byGreetingCued = crossValidate(trainPlain, (c) => c.greetingGroup, trainCued);
  report(`training set, leave one greeting out (${byGreetingCued.groups} groups), with the opener`, byGreetingCued);
  const byVoiceCued = crossValidate(trainPlain, (c) => c.voiceGroup, trainCued);
  report(`training set, leave one voice out (${byVoiceCued.groups} groups), with the opener`, byVoiceCued);
}
if (trainingOnly) process.exit(0);
const heldAlone = scoreAmd(heldPlain, audioAlone);
const heldWithCue = scoreAmd(heldCued);
report('HELD-OUT set, audio alone', heldAlone);
report('HELD-OUT set, with the opener (conversational cue)', heldWithCue);
console.log(
  `\nthe cue on the held-out set: accuracy ${pct(heldAlone.correct, heldAlone.total)} -> ${pct(heldWithCue.correct, heldWithCue.total)}, ` +
    `people taken for machines ${heldAlone.humansAsMachines} -> ${heldWithCue.humansAsMachines}, ` +
    `median decision ${sec(heldAlone.p50Ms)} -> ${sec(heldWithCue.p50Ms)}, p90 ${sec(heldAlone.p90Ms)} -> ${sec(heldWithCue.p90Ms)}`,
);
