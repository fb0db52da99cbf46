/**
 * The labelled clip set for answering-machine detection: what a call hears in the seconds after it
 * is answered, at telephone quality (espeak-ng speech at 22.05 kHz brought down to 8 kHz, mixed
 * with line noise, through G.711 mu-law and back).
 *
 * - `human`: a person picks up and says a short greeting ("Hello?", "Hi, this is Dana", "Yeah?"),
 *   some after a delay, then waits (some say "Hello?" again when nobody answers);
 * - `machine`: voicemail greetings of many lengths, voices and speeds, with or without a beep
 *   (400-2000 Hz, 0.2-1.5 s), with or without silence after; a beep alone (greeting switched off);
 *   call screeners ("Please say your name and why you are calling"): a recording that talks on,
 *   which acoustically is a machine, so it is labelled one (the text detector, which understands
 *   the words, tells screeners apart; the audio alone cannot);
 * - `unknown`: dead air and line noise (hiss, hum, clicks) with nobody speaking. Nothing in them
 *   tells a person from a machine, so the right answer is `unknown`, as carriers' AMD reports it.
 *
 * Everything is drawn from a seeded generator, so a seed gives the same set every time.
 */
import { execFile } from 'node:child_process';
import { SAMPLE_RATE, concatPcm, decodeMulaw, encodeMulaw, resample, seededRandom, silence, tone } from './audio.js';
import { detectAnsweringMachine, type AmdDecision, type AmdSettings } from './amd.js';
import { parseWav } from './wav.js';

export type AmdLabel = 'human' | 'machine' | 'unknown';

export type AmdClipKind = 'human' | 'voicemail' | 'voicemail-beep' | 'beep-only' | 'screener' | 'silence' | 'noise';

export interface AmdClip {
  /** e.g. "017-voicemail-beep". */
  id: string;
  label: AmdLabel;
  kind: AmdClipKind;
  /** What is said (empty for silence, noise, a beep alone). */
  text: string;
  /** espeak-ng voice, rate (words a minute) and pitch, when there is speech. */
  voice: string | null;
  /** Plain words: delays, beep, noise level. */
  description: string;
  /** 8 kHz 16-bit PCM after the mu-law round trip. */
  pcm: Int16Array;
}

export interface AmdDatasetOptions {
  /** Number of clips. Default 240. */
  count?: number;
  /** Default 1. */
  seed?: number;
  /** espeak-ng processes at once. Default 2. */
  concurrency?: number;
  /** Path of the espeak-ng binary. Default "espeak-ng". */
  espeak?: string;
}

/** Shares of the set by kind (they add up to 1). */
const MIX: ReadonlyArray<[AmdClipKind, number]> = [
  ['human', 0.42],
  ['voicemail-beep', 0.22],
  ['voicemail', 0.14],
  ['beep-only', 0.03],
  ['screener', 0.07],
  ['silence', 0.06],
  ['noise', 0.06],
];

const NAMES = ['Dana', 'Sam', 'Alex', 'Jordan', 'Maria', 'Chris', 'Priya', 'Tom', 'Lee', 'Morgan', 'Kate', 'Omar'];
const COMPANIES = ['Acme Dental', 'Riverside Plumbing', 'the Miller Law Office', 'Northside Auto', 'Sunrise Realty'];

const HUMAN_GREETINGS = [
  'Hello?',
  'Hello.',
  'Hello?',
  'Hi.',
  'Yeah?',
  'Yes?',
  'Hey.',
  'Hi, this is {name}.',
  "Hello, who's calling?",
  '{name} speaking.',
  'Hello, {name} speaking.',
  'Hello, yes?',
  'Good morning.',
  'This is {name}.',
  'Hi, who is this?',
  'Yeah, hello?',
  'Hello, {name} here.',
];

const VOICEMAIL_GREETINGS = [
  "Hi, you've reached {name}. I can't take your call right now, please leave a message after the tone.",
  'The person you are trying to reach is not available. At the tone, please record your message. When you have finished recording, you may hang up.',
  "Hello, this is {name}. Sorry I missed you. Leave your name and number and I'll call you back.",
  '{name} is not available. Please leave a message.',
  'Thank you for calling {company}. Our office is now closed. Please leave a message and we will return your call.',
  'You have reached the voicemail of {name}. Please leave a message.',
  "Hey, it's {name}, leave a message.",
  "Hi, this is {name}. I'm away from my phone. Leave a message and I'll get back to you.",
  'Your call has been forwarded to an automatic voice message system. {name} is not available.',
  "You've reached {company}. All of our team members are busy. Please leave your name, number and a brief message.",
  "Hi! You've reached {name} and family. We can't come to the phone right now.",
  'The mailbox of {name} is full and cannot accept messages at this time. Goodbye.',
  "This is {name}'s phone. Please leave a message after the beep.",
  'Please leave a message for {name} after the tone.',
  'The number you have dialed is not available. Please leave a message after the tone.',
];

/** Short greetings a carrier's voicemail plays just before its beep. */
const SHORT_VOICEMAIL_GREETINGS = ['Please leave a message.', 'Leave a message.', "It's {name}. Leave a message."];

const SCREENER_PROMPTS = [
  'Please say your name and why you are calling.',
  'The person you are calling is using a screening service. Please say your name and why you are calling.',
  "Hi, the person you're calling is using a screening service and will get a copy of this conversation. Go ahead and say your name and why you're calling.",
  'Before I try to connect you, please state your name after the tone.',
];

const LANGUAGES = ['en-us', 'en-us', 'en-gb'];
const VARIANTS = ['f1', 'f2', 'f3', 'f4', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'];

export { seededRandom };

type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const between = (random: Random, low: number, high: number): number => low + random() * (high - low);

function fill(template: string, random: Random): string {
  return template.replace('{name}', pick(random, NAMES)).replace('{company}', pick(random, COMPANIES));
}

interface Voice {
  name: string;
  rate: number;
  pitch: number;
  wordGap: number;
}

function drawVoice(random: Random): Voice {
  return {
    name: `${pick(random, LANGUAGES)}+${pick(random, VARIANTS)}`,
    rate: Math.round(between(random, 140, 200)),
    pitch: Math.round(between(random, 30, 70)),
    wordGap: Math.floor(between(random, 0, 3)),
  };
}

/** Synthesises `text` with espeak-ng (no shell) and returns 8 kHz PCM. */
export function synthesize(text: string, voice: Voice, espeak = 'espeak-ng'): Promise<Int16Array> {
  const args = ['-v', voice.name, '-s', String(voice.rate), '-p', String(voice.pitch), '-g', String(voice.wordGap)];
  args.push('--stdout', '--', text);
  return new Promise((resolve, reject) => {
    execFile(espeak, args, { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error) return reject(new Error(`espeak-ng failed: ${error.message}`));
      try {
        // parseWav takes espeak-ng's streamed header (placeholder sizes) as it is.
        const wav = parseWav(stdout);
        resolve(resample(trimSilence(wav.samples), wav.sampleRate, SAMPLE_RATE));
      } catch (failure) {
        reject(failure as Error);
      }
    });
  });
}

/** espeak-ng pads its output with silence; a clip places speech itself. */
function trimSilence(pcm: Int16Array): Int16Array {
  let start = 0;
  let end = pcm.length;
  while (start < end && Math.abs(pcm[start]!) < 64) start++;
  while (end > start && Math.abs(pcm[end - 1]!) < 64) end--;
  return pcm.subarray(start, end);
}

/** Scales PCM so that its loud parts sit at `dbfs` (RMS of the samples above a tenth of the peak). */
function level(pcm: Int16Array, dbfs: number): Int16Array {
  let peak = 0;
  for (const x of pcm) peak = Math.max(peak, Math.abs(x));
  let sum = 0;
  let n = 0;
  for (const x of pcm) {
    if (Math.abs(x) > peak / 10) {
      sum += x * x;
      n++;
    }
  }
  if (n === 0) return pcm;
  const gain = (32768 * 10 ** (dbfs / 20)) / Math.sqrt(sum / n);
  return Int16Array.from(pcm, (x) => Math.max(-32768, Math.min(32767, Math.round(x * gain))));
}

interface Noise {
  /** Hiss level, dBFS. */
  hissDbfs: number;
  /** Mains hum level, dBFS, or null. */
  humDbfs: number | null;
  /** Clicks a second (line crackle). */
  clicksPerSecond: number;
}

function describeNoise(noise: Noise): string {
  const parts = [`hiss ${noise.hissDbfs.toFixed(0)} dBFS`];
  if (noise.humDbfs !== null) parts.push(`hum ${noise.humDbfs.toFixed(0)} dBFS`);
  if (noise.clicksPerSecond > 0) parts.push(`${noise.clicksPerSecond.toFixed(1)} clicks/s`);
  return parts.join(', ');
}

/** Adds line noise to `pcm` in place: Gaussian hiss, 60 Hz hum with harmonics, clicks. */
function addNoise(pcm: Int16Array, noise: Noise, random: Random): void {
  const hiss = 32768 * 10 ** (noise.hissDbfs / 20);
  const hum = noise.humDbfs === null ? 0 : 32768 * 10 ** (noise.humDbfs / 20) * Math.SQRT2;
  const phase = random() * 2 * Math.PI;
  const clickChance = noise.clicksPerSecond / SAMPLE_RATE;
  let click = 0;
  for (let i = 0; i < pcm.length; i++) {
    // Box-Muller.
    const g = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const w = (2 * Math.PI * 60 * i) / SAMPLE_RATE + phase;
    let v = pcm[i]! + g * hiss + hum * (0.7 * Math.sin(w) + 0.3 * Math.sin(3 * w));
    if (click > 0) {
      v += (random() - 0.5) * click;
      click *= 0.7;
      if (click < 50) click = 0;
    } else if (random() < clickChance) click = between(random, 2000, 12000);
    pcm[i] = Math.max(-32768, Math.min(32767, Math.round(v)));
  }
}

/** The telephone: mu-law encoding and decoding, as the carrier would deliver it. */
function telephone(pcm: Int16Array): Int16Array {
  return decodeMulaw(encodeMulaw(pcm));
}

interface Plan {
  kind: AmdClipKind;
  label: AmdLabel;
  /** Pieces in order: text to speak, or ready PCM (silence, beep). */
  pieces: Array<{ say: string } | { pcm: Int16Array }>;
  text: string;
  voice: Voice | null;
  speechDbfs: number;
  noise: Noise;
  /** Whole clip length; the end is padded with silence (or cut) to it. */
  lengthMs: number;
  description: string[];
}

function drawNoise(random: Random, loud: boolean): Noise {
  return {
    hissDbfs: loud ? between(random, -52, -40) : between(random, -75, -48),
    humDbfs: random() < (loud ? 0.6 : 0.25) ? between(random, loud ? -50 : -65, loud ? -40 : -50) : null,
    clicksPerSecond: random() < (loud ? 0.7 : 0.2) ? between(random, 0.5, loud ? 6 : 2) : 0,
  };
}

function beep(random: Random): { pcm: Int16Array; text: string } {
  const frequencyHz = Math.round(between(random, 400, 2000));
  const durationMs = Math.round(between(random, 200, 1500) / 10) * 10;
  const amplitude = Math.round(between(random, 3000, 14000));
  return { pcm: tone([frequencyHz], durationMs, amplitude), text: `beep ${frequencyHz} Hz ${durationMs} ms` };
}

function plan(kind: AmdClipKind, random: Random): Plan {
  const p: Plan = {
    kind,
    label: 'machine',
    pieces: [],
    text: '',
    voice: null,
    speechDbfs: between(random, -26, -12),
    noise: drawNoise(random, kind === 'noise'),
    lengthMs: 6000,
    description: [],
  };
  const pause = (ms: number) => {
    p.pieces.push({ pcm: silence(Math.round(ms / 20) * 20) });
    p.description.push(`${(ms / 1000).toFixed(1)} s silence`);
  };
  const say = (text: string) => {
    p.pieces.push({ say: text });
    p.text = p.text ? `${p.text} ${text}` : text;
    p.description.push(`"${text}"`);
  };
  switch (kind) {
    case 'human': {
      p.label = 'human';
      p.voice = drawVoice(random);
      // Some pick up and speak at once, some after the handset reaches the ear.
      pause(random() < 0.3 ? between(random, 1000, 2200) : between(random, 150, 1000));
      const greeting = fill(pick(random, HUMAN_GREETINGS), random);
      say(greeting);
      if (random() < 0.35) {
        // Nobody answered: "Hello?" again.
        pause(between(random, 1300, 2500));
        say(pick(random, ['Hello?', 'Hello?', 'Hi?', 'Anyone there?']));
      }
      break;
    }
    case 'voicemail':
    case 'voicemail-beep': {
      p.voice = drawVoice(random);
      pause(between(random, 100, 1500));
      const short = kind === 'voicemail-beep' && random() < 0.25;
      say(fill(pick(random, short ? SHORT_VOICEMAIL_GREETINGS : VOICEMAIL_GREETINGS), random));
      if (kind === 'voicemail-beep') {
        pause(short ? between(random, 150, 600) : between(random, 200, 1200));
        const b = beep(random);
        p.pieces.push({ pcm: b.pcm });
        p.description.push(b.text);
      }
      if (random() < 0.6) pause(between(random, 500, 3000));
      p.lengthMs = 0; // as long as it lasts, at least 6 s
      break;
    }
    case 'beep-only': {
      pause(between(random, 200, 1500));
      const b = beep(random);
      p.pieces.push({ pcm: b.pcm });
      p.description.push(b.text);
      break;
    }
    case 'screener': {
      p.voice = drawVoice(random);
      pause(between(random, 200, 1200));
      say(pick(random, SCREENER_PROMPTS));
      p.lengthMs = 0;
      break;
    }
    case 'silence':
    case 'noise':
      p.label = 'unknown';
      p.description.push(kind === 'silence' ? 'nobody speaks' : 'line noise, nobody speaks');
      break;
  }
  p.description.push(describeNoise(p.noise));
  return p;
}

async function render(p: Plan, random: Random, espeak: string): Promise<Int16Array> {
  const chunks: Int16Array[] = [];
  for (const piece of p.pieces) {
    chunks.push('pcm' in piece ? piece.pcm : level(await synthesize(piece.say, p.voice!, espeak), p.speechDbfs));
  }
  let pcm = concatPcm(chunks);
  const length = Math.round((Math.max(p.lengthMs, 6000) * SAMPLE_RATE) / 1000);
  if (pcm.length < length) pcm = concatPcm([pcm, new Int16Array(length - pcm.length)]);
  else if (p.lengthMs > 0) pcm = pcm.slice(0, length);
  else pcm = pcm.slice();
  addNoise(pcm, p.noise, random);
  return telephone(pcm);
}

/** The kinds of a set of `count` clips, in the mix's proportions (largest remainders), shuffled by `random`. */
function kinds(count: number, random: Random): AmdClipKind[] {
  const shares = MIX.map(([kind, share]) => ({ kind, exact: count * share, n: Math.floor(count * share) }));
  let left = count - shares.reduce((sum, s) => sum + s.n, 0);
  for (const s of [...shares].sort((a, b) => b.exact - b.n - (a.exact - a.n))) {
    if (left-- <= 0) break;
    s.n++;
  }
  const out = shares.flatMap((s) => Array.from({ length: s.n }, () => s.kind));
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Generates the labelled set in memory. The same options give the same clips. */
export async function generateAmdDataset(options: AmdDatasetOptions = {}): Promise<AmdClip[]> {
  const count = options.count ?? 240;
  if (!Number.isInteger(count) || count < 1) throw new RangeError('count must be a positive integer');
  const seed = options.seed ?? 1;
  const espeak = options.espeak ?? 'espeak-ng';
  const random = seededRandom(seed);
  // Each clip draws from its own generator, so a clip does not change when espeak-ng output of
  // another one does.
  const plans = kinds(count, random).map((kind, i) => {
    const own = seededRandom(seed * 100_003 + i);
    return { plan: plan(kind, own), random: own, index: i };
  });
  const clips: AmdClip[] = new Array<AmdClip>(plans.length);
  let next = 0;
  const worker = async () => {
    while (next < plans.length) {
      const { plan: p, random: own, index } = plans[next++]!;
      const v = p.voice;
      clips[index] = {
        id: `${String(index + 1).padStart(3, '0')}-${p.kind}`,
        label: p.label,
        kind: p.kind,
        text: p.text,
        voice: v ? `${v.name} ${v.rate} wpm pitch ${v.pitch}` : null,
        description: p.description.join(', '),
        pcm: await render(p, own, espeak),
      };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
  return clips;
}

export interface AmdOutcome {
  clip: AmdClip;
  decision: AmdDecision;
  atMs: number;
  reason: string;
}

export interface AmdEvaluation {
  outcomes: AmdOutcome[];
  total: number;
  correct: number;
  /** correct / total. */
  accuracy: number;
  humans: number;
  /** Humans the detector called machines. */
  humansAsMachines: number;
  machines: number;
  /** Machines the detector called humans. */
  machinesAsHumans: number;
  /** Person or machine clips left `unknown`. */
  unknowns: number;
  /** confusion[label][decision] = clips. */
  confusion: Record<AmdLabel, Record<AmdDecision, number>>;
  /** Time to decision over all clips (ms): median and 90th percentile. */
  medianMs: number;
  p90Ms: number;
  /** The same for each label. */
  byLabel: Record<AmdLabel, { medianMs: number; p90Ms: number }>;
}

function percentile(values: number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** Runs the detector over every clip and scores it against the labels. */
export function evaluateAmd(clips: readonly AmdClip[], settings: Partial<AmdSettings> = {}): AmdEvaluation {
  const labels: AmdLabel[] = ['human', 'machine', 'unknown'];
  const zero = (): Record<AmdDecision, number> => ({ human: 0, machine: 0, unknown: 0 });
  const confusion = { human: zero(), machine: zero(), unknown: zero() };
  const outcomes = clips.map((clip) => {
    const result = detectAnsweringMachine(clip.pcm, settings);
    confusion[clip.label][result.decision]++;
    return { clip, decision: result.decision, atMs: result.atMs, reason: result.reason };
  });
  const times = (label?: AmdLabel) => outcomes.filter((o) => !label || o.clip.label === label).map((o) => o.atMs);
  const correct = outcomes.filter((o) => o.decision === o.clip.label).length;
  const count = (label: AmdLabel) => clips.filter((c) => c.label === label).length;
  return {
    outcomes,
    total: clips.length,
    correct,
    accuracy: clips.length === 0 ? 0 : correct / clips.length,
    humans: count('human'),
    humansAsMachines: confusion.human.machine,
    machines: count('machine'),
    machinesAsHumans: confusion.machine.human,
    unknowns: confusion.human.unknown + confusion.machine.unknown,
    confusion,
    medianMs: percentile(times(), 0.5),
    p90Ms: percentile(times(), 0.9),
    byLabel: Object.fromEntries(
      labels.map((l) => [l, { medianMs: percentile(times(l), 0.5), p90Ms: percentile(times(l), 0.9) }]),
    ) as Record<AmdLabel, { medianMs: number; p90Ms: number }>,
  };
}
