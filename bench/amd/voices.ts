// Speech against the beep detector: renders many espeak-ng voices (every language and variant
// espeak-ng has except the ones the held-out set speaks with, pitch 0-99, rates 80-260 wpm) saying
// ordinary greetings, through the line (level, hiss, mu-law), and counts the tones the beep
// detector finds in them: any is a false beep. Then the training set's beeps, which must all be
// found. With --loose the steadiness tests are off, to see what they remove. With --agc the line's
// AGC swings each utterance's level (3-10 dB over 1.5-5 s, as the held-out set's lines do), which
// the beep detector allows a beep's level as an even drift: the same utterances, so the counts
// compare with and without it.
// Usage: nice -n 19 npx tsx bench/amd/voices.ts [--count 600 --seed 1 --loose --agc --verbose]
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';

import { FRAME_SAMPLES, decodeMulaw, encodeMulaw, seededRandom } from '../../src/media/audio.js';
import { ToneDetector, type DetectedTone, type ToneSteadiness } from '../../src/amd/tone-detector.js';
import {
  AMD_DATASET_VERSION,
  agcGain,
  cachedAmdClips,
  generateAmdDataset,
  level,
  synthesize,
} from '../../src/amd/dataset.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '600' },
    seed: { type: 'string', default: '1' },
    loose: { type: 'boolean', default: false },
    agc: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
});

/** The voices the held-out set (src/amd/heldout.ts) speaks with: never used here. */
const HELD_OUT_LANGUAGES = ['en-gb-scotland', 'en-gb-x-gbclan', 'en-gb-x-rp', 'en-gb-x-gbcwmd', 'en-029', 'en-us-nyc'];
const HELD_OUT_VARIANTS = [
  'f5',
  'm8',
  'klatt',
  'klatt3',
  'Andy',
  'Annie',
  'adam',
  'aunty',
  'david',
  'edward',
  'linda',
  'john',
];

const GREETINGS = [
  'Hello?',
  'Hello.',
  'Hi, this is Dana.',
  'Yeah?',
  'Hello, who is this?',
  'Good morning, Riverside Plumbing, how can I help you?',
  'Hellooo? Is anybody there?',
  'Hi! Oh, hang on a second.',
  'Yes, hello, Maria speaking.',
  'Hey, what is up?',
  'Hello, can you hear me? Hello?',
  'Mmm, yeah, hello.',
  'Oh hi, I was just about to call you.',
  'Speaking.',
  'Hiya, you alright?',
  'Hello, you have reached Tom. Leave a message and I will call you back.',
];

/** Column 2 (languages) or 4 (variant names) of espeak-ng's voice list. */
function espeakList(args: string[], column: number): string[] {
  const out = execFileSync('espeak-ng', args, { encoding: 'utf8' });
  return out
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/)[column])
    .filter((name): name is string => Boolean(name));
}

const languages = [...new Set(espeakList(['--voices'], 1))].filter((l) => !HELD_OUT_LANGUAGES.includes(l));
const variants = espeakList(['--voices=variant'], 4)
  .map((file) => file.replace(/^!v\//, ''))
  .filter((v) => !HELD_OUT_VARIANTS.includes(v));
const random = seededRandom(Number(values.seed));
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const detectorOptions = { minHz: 250, maxHz: 3600, minDurationMs: 60, strict: !values.loose };

function tonesIn(pcm: Int16Array): [DetectedTone, ToneSteadiness][] {
  const detector = new ToneDetector(detectorOptions);
  const found: [DetectedTone, ToneSteadiness][] = [];
  for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
    const tone = detector.push(pcm.subarray(at, at + FRAME_SAMPLES));
    if (tone) found.push([tone, detector.lastSteadiness!]);
  }
  const last = detector.flush();
  if (last) found.push([last, detector.lastSteadiness!]);
  return found;
}

/** The line's AGC (--agc), drawn apart from the voices, so the utterances are the same without it. */
const swings = seededRandom(Number(values.seed) * 7919 + 1);

/** With --agc, the level swung up and down by 3-10 dB over a period of 1.5-5 s. */
function swing(speech: Int16Array): Int16Array {
  if (!values.agc) return speech;
  const depthDb = 3 + swings() * 7;
  const periodMs = 1500 + swings() * 3500;
  const phase = swings() * 2 * Math.PI;
  return Int16Array.from(speech, (v, i) =>
    Math.max(-32768, Math.min(32767, Math.round(v * agcGain(i, depthDb, periodMs, phase)))),
  );
}

/** Level (swung by the AGC with --agc), 100 ms of quiet either side, hiss and the mu-law round trip. */
function throughLine(speech: Int16Array, dbfs: number, hissDbfs: number): Int16Array {
  const pad = 800;
  const out = new Int16Array(speech.length + 2 * pad);
  out.set(swing(level(speech, dbfs)), pad);
  const sigma = 32768 * 10 ** (hissDbfs / 20);
  for (let i = 0; i < out.length; i++) {
    const g = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    out[i] = Math.max(-32768, Math.min(32767, Math.round(out[i]! + g * sigma)));
  }
  return decodeMulaw(encodeMulaw(out));
}

const show = (t: DetectedTone, s: ToneSteadiness) =>
  `${t.frequencyHz} Hz ${t.durationMs} ms spread ${s.spreadHz.toFixed(1)} Hz step ${s.levelStepDb.toFixed(1)} dB ` +
  `level spread ${s.levelSpreadDb.toFixed(1)} dB harmonic ${s.harmonicDb.toFixed(1)} dB ` +
  `onset ${s.onsetDb.toFixed(1)} dB offset ${s.offsetDb.toFixed(1)} dB`;

const count = Number(values.count);
let falseTones = 0;
let clipsWithTones = 0;
let seconds = 0;
const started = Date.now();
console.log(
  `speech: ${count} utterances from ${languages.length} languages x ${variants.length} variants ` +
    `(held-out voices left out), steadiness tests ${values.loose ? 'OFF' : 'on'}${values.agc ? ', AGC swings' : ''}`,
);
for (let i = 0; i < count; i++) {
  const language = pick(languages);
  const variant = pick(variants);
  const voice = {
    name: `${language}+${variant}`,
    rate: Math.round(80 + random() * 180),
    pitch: Math.floor(random() * 100),
    wordGap: Math.floor(random() * 3),
  };
  const text = pick(GREETINGS);
  const dbfs = -30 + random() * 20;
  const hiss = -70 + random() * 25;
  let speech: Int16Array;
  try {
    speech = await synthesize(text, voice);
  } catch {
    continue;
  }
  const pcm = throughLine(speech, dbfs, hiss);
  seconds += pcm.length / 8000;
  const found = tonesIn(pcm);
  if (found.length > 0) clipsWithTones++;
  falseTones += found.length;
  for (const [t, s] of found)
    console.log(`  FALSE ${voice.name} p${voice.pitch} s${voice.rate} "${text}": ${show(t, s)}`);
}
console.log(
  `speech: ${falseTones} false tones in ${clipsWithTones} of ${count} utterances (${seconds.toFixed(0)} s of speech), ` +
    `${((Date.now() - started) / 1000).toFixed(0)} s`,
);

// The training set's beeps (dataset version AMD_DATASET_VERSION, the bench's default set).
const training = await cachedAmdClips('training-1-480', () => generateAmdDataset({ count: 480, seed: 1 }));
let beeps = 0;
let missed = 0;
for (const clip of training) {
  const described = [...clip.description.matchAll(/(\d+ beeps [\d/]+ Hz|beep \d+ Hz)/g)].map((m) => m[0]);
  if (described.length === 0) continue;
  const match = /(?:beeps? )([\d/]+) Hz/.exec(described[0]!)!;
  const expected = match[1]!.split('/').map(Number);
  const found = tonesIn(clip.pcm);
  for (const hz of expected) {
    beeps++;
    const hit = found.find(([t]) => Math.abs(t.frequencyHz - hz) <= Math.max(8, hz * 0.01));
    if (!hit) {
      missed++;
      const loose = new ToneDetector({ ...detectorOptions, strict: false });
      let seen = '';
      for (let at = 0; at + FRAME_SAMPLES <= clip.pcm.length; at += FRAME_SAMPLES) {
        const t = loose.push(clip.pcm.subarray(at, at + FRAME_SAMPLES));
        if (t && Math.abs(t.frequencyHz - hz) <= Math.max(8, hz * 0.01)) seen = show(t, loose.lastSteadiness!);
      }
      console.log(`  MISSED ${clip.id} ${hz} Hz (${clip.description}): ${seen || 'not tonal at all'}`);
    } else if (values.verbose) console.log(`  beep ${clip.id}: ${show(hit[0], hit[1])}`);
  }
}
console.log(`training set v${AMD_DATASET_VERSION} beeps: ${beeps - missed} of ${beeps} found, ${missed} missed`);
