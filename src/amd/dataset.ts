/**
 * The labelled clip set for answering-machine detection: what a call hears in the seconds after it
 * is answered, at telephone quality (espeak-ng speech at 22.05 kHz brought down to 8 kHz, mixed
 * with line noise, through G.711 mu-law and back; on some lines a carrier's AGC swinging the level
 * and lost packets).
 *
 * - `human`: a person picks up and says a short greeting ("Hello?", "Hi, this is Dana", "Yeah?"),
 *   some after a delay, then waits (some say "Hello?" again when nobody answers);
 * - `machine`: voicemail greetings of many lengths, voices and speeds, with or without a beep
 *   (one steady tone of 300-3400 Hz lasting 0.1-2 s, or two or three short ones in a row), with
 *   or without silence after; a beep alone (greeting switched off);
 *   call screeners ("Please say your name and why you are calling"): a recording that talks on,
 *   which acoustically is a machine, so it is labelled one (the text detector, which understands
 *   the words, tells screeners apart; the audio alone cannot);
 * - `unknown`: dead air and line noise (hiss, hum, clicks) with nobody speaking. Nothing in them
 *   tells a person from a machine, so the right answer is `unknown`, as carriers' AMD reports it.
 *
 * Everything is drawn from a seeded generator, so a seed gives the same set every time. This is the
 * TRAINING set: the detector's thresholds are fitted on it (src/amd/fit.ts). The held-out set
 * it is judged on is built apart, from other greeting lists, voices, rates, beeps and line
 * conditions (src/amd/heldout.ts); both share only the plumbing below (espeak-ng, the line).
 *
 * Each person clip also says how the person reacts when the agent talks (`reaction`): they stop
 * soon after the agent starts, then answer its opener. The benchmark uses it to measure the
 * conversational cue (a machine plays on, a person responds): `cuedPcm` renders what the line
 * carries when the agent says an opener at a given moment.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import {
  FRAME_SAMPLES,
  SAMPLE_RATE,
  concatPcm,
  decodeMulaw,
  encodeMulaw,
  resample,
  seededRandom,
  silence,
  tone,
} from '../media/audio.js';
import { detectAnsweringMachine, type AmdDecision, type AmdSettings } from './acoustic.js';
import { parseWav } from '../media/wav.js';

export type AmdLabel = 'human' | 'machine' | 'unknown';

export type AmdClipKind = 'human' | 'voicemail' | 'voicemail-beep' | 'beep-only' | 'screener' | 'silence' | 'noise';

/**
 * What the line does to the far end's audio: hiss, mains hum and clicks, and (held-out set) a
 * background of voices, AGC-like level swings and lost packets; always G.711 mu-law.
 */
export interface AmdLine {
  /** Hiss level, dBFS. */
  hissDbfs: number;
  /** Mains hum level, dBFS, or null. */
  humDbfs: number | null;
  /** Clicks a second (line crackle). */
  clicksPerSecond: number;
  /** Background babble (a room of other voices, as speech-shaped noise), dBFS, or null. */
  babbleDbfs?: number | null;
  /** AGC-like level changes: the gain swings by this many dB either way... */
  agcDepthDb?: number;
  /** ...over this period (ms). */
  agcPeriodMs?: number;
  /** Share of 20 ms packets lost (in bursts of one to three), each replaced by silence or the previous packet. */
  lossRate?: number;
}

/** How a person reacts when the agent starts talking over the line (the conversational cue). */
export interface AmdReaction {
  /** How long they keep talking once the agent starts (ms)... */
  reactMs: number;
  /** ...unless they finish the phrase under way first. */
  finishes: boolean;
  /** What they say once the agent's opener ends, and how long after; null: they wait in silence. */
  reply: { text: string; delayMs: number; pcm: Int16Array } | null;
}

export interface AmdClip {
  /** e.g. "017-voicemail-beep". */
  id: string;
  /** The generator: `training` (this file) or `heldout` (src/amd/heldout.ts). */
  source: 'training' | 'heldout';
  /** The greeting list and entry the words came from ("human:3"), for leave-one-group-out. */
  greetingGroup: string;
  /** The espeak-ng variant that spoke ("m3"; "none" without speech), for leave-one-group-out. */
  voiceGroup: string;
  label: AmdLabel;
  kind: AmdClipKind;
  /** What is said (empty for silence, noise, a beep alone). */
  text: string;
  /** espeak-ng voice, rate (words a minute) and pitch, when there is speech. */
  voice: string | null;
  /** Plain words: delays, beep, noise level. */
  description: string;
  /** 8 kHz 16-bit PCM after the line (noise, mu-law round trip). */
  pcm: Int16Array;
  /** The far end's audio before the line (speech, silences, beeps), for `cuedPcm`. */
  speech: Int16Array;
  line: AmdLine;
  /** Seed of the line's randomness (the same noise for the clip and its cued version). */
  lineSeed: number;
  /** A person's reaction to the agent talking; null for machines and dead air. */
  reaction: AmdReaction | null;
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
const FAMILIES = ['Garcia', 'Smith', 'Brown', 'Kim', 'Walsh'];

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

/**
 * Businesses and households answer with more words, often in one breath, and wait all the same:
 * a first-class share of the people (BUSINESS_SHARE), not an afterthought. A receptionist the
 * agent talks over usually finishes the phrase under way.
 */
const BUSINESS_GREETINGS = [
  'Good morning, {company}, how can I help you?',
  'Thank you for calling {company}, this is {name}.',
  '{company}, {name} speaking.',
  'Hi, you got {name} at {company}.',
  'Hello, the {family} house.',
  "{family}s', {name} speaking.",
  '{company}, good morning, {name} here, what can I do for you?',
  'Hello, {company} service desk, how may I help?',
  'Thanks for calling {company}, my name is {name}, how can I help you today?',
  '{company} reception, this is {name}, who am I speaking with?',
  'Hello, {family} home, {name} speaking.',
];
const BUSINESS_SHARE = 0.4;

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
/**
 * A third of the voices (since dataset version 7) come from further afield: English read by
 * espeak-ng's other languages' phonologies, in its other variants, at any pitch and a wider range
 * of rates. Some of them hold a high pitch so steadily that a vowel's fundamental is nearly a
 * sinusoid: the set shows the beep test those. None of the held-out set's voices is among them.
 */
const OTHER_LANGUAGES = [
  'en-us',
  'en-gb',
  'de',
  'fr-fr',
  'es',
  'it',
  'pt-br',
  'nl',
  'sv',
  'pl',
  'hi',
  'cmn',
  'ja',
  'vi',
  'ru',
  'tr',
];
const OTHER_VARIANTS = [
  'Alex',
  'Alicia',
  'Andrea',
  'AnxiousAndy',
  'Denis',
  'Diogo',
  'Gene',
  'Henrique',
  'Hugo',
  'Jacky',
  'Lee',
  'Marco',
  'Mario',
  'Michael',
  'Mike',
  'Nguyen',
  'RicishayMax',
  'Storm',
  'Tweaky',
  'anika',
  'anikaRobot',
  'announcer',
  'antonio',
  'belinda',
  'benjamin',
  'boris',
  'caleb',
  'croak',
  'ed',
  'edward2',
  'fast',
  'grandma',
  'grandpa',
  'gustave',
  'iven',
  'iven2',
  'iven3',
  'iven4',
  'kaukovalta',
  'klatt2',
  'klatt4',
  'klatt5',
  'klatt6',
  'marcelo',
  'max',
  'michel',
  'miguel',
  'norbert',
  'pablo',
  'paul',
  'pedro',
  'quincy',
  'rob',
  'robert',
  'robosoft',
  'robosoft2',
  'robosoft5',
  'robosoft8',
  'sandro',
  'shelby',
  'steph',
  'steph2',
  'steph3',
  'travis',
  'victor',
  'zac',
];

export { seededRandom };

type Random = () => number;

export const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
export const between = (random: Random, low: number, high: number): number => low + random() * (high - low);
/** The index of an entry drawn from `items` (the same draw as `pick`). */
const pickIndex = (random: Random, items: readonly unknown[]): number => Math.floor(random() * items.length);

function fill(template: string, random: Random): string {
  return template
    .replace('{name}', pick(random, NAMES))
    .replace('{company}', pick(random, COMPANIES))
    .replace('{family}', pick(random, FAMILIES));
}

export interface Voice {
  name: string;
  rate: number;
  pitch: number;
  wordGap: number;
}

function drawVoice(random: Random): Voice {
  if (random() < 1 / 3)
    return {
      name: `${pick(random, OTHER_LANGUAGES)}+${pick(random, OTHER_VARIANTS)}`,
      rate: Math.round(between(random, 110, 240)),
      pitch: Math.floor(between(random, 0, 100)),
      wordGap: Math.floor(between(random, 0, 3)),
    };
  return {
    name: `${pick(random, LANGUAGES)}+${pick(random, VARIANTS)}`,
    rate: Math.round(between(random, 120, 210)),
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
export function trimSilence(pcm: Int16Array): Int16Array {
  let start = 0;
  let end = pcm.length;
  while (start < end && Math.abs(pcm[start]!) < 64) start++;
  while (end > start && Math.abs(pcm[end - 1]!) < 64) end--;
  return pcm.subarray(start, end);
}

/** Scales PCM so that its loud parts sit at `dbfs` (RMS of the samples above a tenth of the peak). */
export function level(pcm: Int16Array, dbfs: number): Int16Array {
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

type Noise = AmdLine;

/** The line in plain words, for the bench's listing. */
export function describeLine(line: AmdLine): string {
  const parts = [`hiss ${line.hissDbfs.toFixed(0)} dBFS`];
  if (line.humDbfs !== null) parts.push(`hum ${line.humDbfs.toFixed(0)} dBFS`);
  if (line.clicksPerSecond > 0) parts.push(`${line.clicksPerSecond.toFixed(1)} clicks/s`);
  if (line.babbleDbfs != null) parts.push(`babble ${line.babbleDbfs.toFixed(0)} dBFS`);
  return [...parts, ...describeGainAndLoss(line)].join(', ');
}

/** The line's AGC swings and lost packets in plain words (none, one or both). */
function describeGainAndLoss(line: AmdLine): string[] {
  const parts: string[] = [];
  if (line.agcDepthDb) parts.push(`AGC ±${line.agcDepthDb.toFixed(0)} dB`);
  if (line.lossRate) parts.push(`${(line.lossRate * 100).toFixed(1)} % packets lost`);
  return parts;
}

/**
 * The gain a line's AGC applies at sample `i`: the level swung up and down by `depthDb` over
 * `periodMs`, from `phase` (radians).
 */
export function agcGain(i: number, depthDb: number, periodMs: number, phase: number): number {
  return 10 ** ((depthDb * Math.sin((2 * Math.PI * i) / ((periodMs * SAMPLE_RATE) / 1000) + phase)) / 20);
}

const gaussian = (random: Random) => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

/**
 * The far end's audio as the call receives it: AGC-like level swings on the speech, then hiss,
 * hum, clicks and background babble, then G.711 mu-law and back, then lost packets. Returns a new
 * array; `random` draws the noise.
 */
export function applyLine(speech: Int16Array, line: AmdLine, random: Random): Int16Array {
  const pcm = new Float64Array(speech.length);
  const agcPhase = random() * 2 * Math.PI;
  const agcPeriod = Math.max(200, line.agcPeriodMs ?? 3000);
  for (let i = 0; i < speech.length; i++)
    pcm[i] = speech[i]! * (line.agcDepthDb ? agcGain(i, line.agcDepthDb, agcPeriod, agcPhase) : 1);
  const hiss = 32768 * 10 ** (line.hissDbfs / 20);
  const hum = line.humDbfs === null ? 0 : 32768 * 10 ** (line.humDbfs / 20) * Math.SQRT2;
  const phase = random() * 2 * Math.PI;
  const clickChance = line.clicksPerSecond / SAMPLE_RATE;
  let click = 0;
  for (let i = 0; i < pcm.length; i++) {
    const g = gaussian(random);
    const w = (2 * Math.PI * 60 * i) / SAMPLE_RATE + phase;
    let v = pcm[i]! + g * hiss + hum * (0.7 * Math.sin(w) + 0.3 * Math.sin(3 * w));
    if (click > 0) {
      v += (random() - 0.5) * click;
      click *= 0.7;
      if (click < 50) click = 0;
    } else if (random() < clickChance) click = between(random, 2000, 12000);
    pcm[i] = v;
  }
  if (line.babbleDbfs != null) addBabble(pcm, line.babbleDbfs, random);
  const out = decodeMulaw(encodeMulaw(Int16Array.from(pcm, (v) => Math.max(-32768, Math.min(32767, Math.round(v))))));
  if (line.lossRate) {
    for (let at = FRAME_SAMPLES; at + FRAME_SAMPLES <= out.length; at += FRAME_SAMPLES) {
      if (random() >= line.lossRate / 2) continue;
      const burst = 1 + Math.floor(random() * 3);
      const repeat = random() < 0.5;
      for (let b = 0; b < burst && at + FRAME_SAMPLES <= out.length; b++, at += FRAME_SAMPLES) {
        if (repeat) out.copyWithin(at, at - FRAME_SAMPLES, at);
        else out.fill(0, at, at + FRAME_SAMPLES);
      }
    }
  }
  return out;
}

/**
 * A room of other voices: noise shaped like speech (low-passed, with syllable-rate and phrase-rate
 * swells from several talkers), at `dbfs` RMS.
 */
function addBabble(pcm: Float64Array, dbfs: number, random: Random): void {
  const talkers = Array.from({ length: 4 }, () => ({
    rate: between(random, 3, 6),
    phrase: between(random, 0.2, 0.5),
    phase: random() * 2 * Math.PI,
  }));
  const noise = new Float64Array(pcm.length);
  let lp1 = 0;
  let lp2 = 0;
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) {
    const t = i / SAMPLE_RATE;
    let envelope = 0;
    for (const k of talkers)
      envelope +=
        Math.max(0, Math.sin(2 * Math.PI * k.rate * t + k.phase)) *
        (0.5 + 0.5 * Math.sin(2 * Math.PI * k.phrase * t + k.phase));
    lp1 += 0.25 * (gaussian(random) - lp1);
    lp2 += 0.25 * (lp1 - lp2);
    noise[i] = lp2 * envelope;
    sum += noise[i]! * noise[i]!;
  }
  const gain = (32768 * 10 ** (dbfs / 20)) / Math.sqrt(Math.max(1e-9, sum / Math.max(1, pcm.length)));
  for (let i = 0; i < pcm.length; i++) pcm[i] = pcm[i]! + noise[i]! * gain;
}

/** A clip before synthesis: what is said and played, by whom, over which line. */
export interface Plan {
  kind: AmdClipKind;
  label: AmdLabel;
  /** Pieces in order: text to speak, or ready PCM (silence, beep). */
  pieces: Array<{ say: string } | { pcm: Int16Array }>;
  text: string;
  voice: Voice | null;
  speechDbfs: number;
  noise: Noise;
  /** Whole clip length; the end is padded with silence (or cut) to it; 0: as long as it lasts (at least 9 s). */
  lengthMs: number;
  description: string[];
  greetingGroup: string;
  /** A person's reaction to the agent talking, before its reply is synthesised. */
  reaction: (Omit<AmdReaction, 'reply'> & { reply: { text: string; delayMs: number } | null }) | null;
}

/** A condition some lines have: drawn with `chance`, its value uniform in `[low, high]`. */
export type LineDraw = readonly [chance: number, low: number, high: number];

/**
 * The ranges a set draws its lines from (AmdLine): hiss always, the rest each with its chance.
 * Conditions a set does not give are neither drawn nor set.
 */
export interface LineRanges {
  hissDbfs: readonly [low: number, high: number];
  humDbfs: LineDraw;
  clicksPerSecond: LineDraw;
  babbleDbfs?: LineDraw;
  agcDepthDb?: LineDraw;
  agcPeriodMs?: readonly [low: number, high: number];
  lossRate?: LineDraw;
}

/** `random() < chance`: a value in the range; else none. */
export function drawMaybe(random: Random, [chance, low, high]: LineDraw): number | null {
  return random() < chance ? between(random, low, high) : null;
}

/** One line's conditions, drawn from a set's ranges in a fixed order (the same draws for the same ranges). */
export function drawLine(random: Random, ranges: LineRanges): AmdLine {
  const line: AmdLine = {
    hissDbfs: between(random, ranges.hissDbfs[0], ranges.hissDbfs[1]),
    humDbfs: drawMaybe(random, ranges.humDbfs),
    clicksPerSecond: drawMaybe(random, ranges.clicksPerSecond) ?? 0,
  };
  if (ranges.babbleDbfs) line.babbleDbfs = drawMaybe(random, ranges.babbleDbfs);
  if (ranges.agcDepthDb) line.agcDepthDb = drawMaybe(random, ranges.agcDepthDb) ?? 0;
  if (ranges.agcPeriodMs) line.agcPeriodMs = between(random, ranges.agcPeriodMs[0], ranges.agcPeriodMs[1]);
  if (ranges.lossRate) line.lossRate = drawMaybe(random, ranges.lossRate) ?? 0;
  return line;
}

function drawNoise(random: Random, loud: boolean): Noise {
  return drawLine(random, {
    hissDbfs: loud ? [-52, -40] : [-75, -48],
    humDbfs: [loud ? 0.6 : 0.25, loud ? -50 : -65, loud ? -40 : -50],
    clicksPerSecond: [loud ? 0.7 : 0.2, 0.5, loud ? 6 : 2],
  });
}

/**
 * The line's gain and packets (since version 9): a carrier's AGC swinging the level on some lines
 * (2-7 dB either way over 2.5-6 s), packets lost on others (up to 3 %). Drawn from its own
 * generator, so the rest of each clip was kept; milder and slower than the held-out set's lines.
 */
function drawGainAndLoss(random: Random, line: AmdLine): void {
  line.agcDepthDb = drawMaybe(random, [0.3, 2, 7]) ?? 0;
  line.agcPeriodMs = between(random, 2500, 6000);
  line.lossRate = drawMaybe(random, [0.3, 0, 0.03]) ?? 0;
}

/** A room behind the speaker (an office, a shop): some clips get one, drawn apart from the rest. */
function drawRoom(random: Random, loud: boolean): number | null {
  return drawMaybe(random, [loud ? 0.5 : 0.25, loud ? -50 : -62, loud ? -38 : -44]);
}

/**
 * A loud room (a busy office, a shop floor, a television), for some clips that got none: voices
 * 14 to 30 dB under the speaker's, loud enough that the detector's background gate must tell them
 * from the greeting. Drawn from its own generator, so the clips drawn before it were kept.
 */
function drawLoudRoom(random: Random): number | null {
  return drawMaybe(random, [0.15, -44, -40]);
}

/**
 * A machine's beep as telephone equipment makes them, not as any one brand does: one steady tone
 * anywhere in the telephone band (300-3400 Hz, drawn evenly on a log scale) lasting 0.1-2 s, or
 * (a third of them) two or three short tones of 100-300 ms in a row, at one pitch or stepping up
 * or down, back to back or with short gaps.
 */
function beep(random: Random): { pcm: Int16Array; text: string } {
  const amplitude = Math.round(between(random, 2000, 14000));
  const inBand = (hz: number) => Math.round(Math.max(300, Math.min(3400, hz)));
  const first = inBand(300 * (3400 / 300) ** random());
  if (random() < 2 / 3) {
    const durationMs = Math.round(between(random, 100, 2000) / 10) * 10;
    return { pcm: tone([first], durationMs, amplitude), text: `beep ${first} Hz ${durationMs} ms` };
  }
  const count = random() < 0.5 ? 2 : 3;
  const step = random() < 0.5 ? 1 : between(random, 0.7, 1.4);
  const toneMs = Math.round(between(random, 100, 300) / 10) * 10;
  const gapMs = random() < 0.5 ? 0 : Math.round(between(random, 30, 150) / 10) * 10;
  const frequencies = Array.from({ length: count }, (_, i) => inBand(first * step ** i));
  const pieces = frequencies.flatMap((hz, i) => [
    ...(i > 0 && gapMs > 0 ? [silence(gapMs)] : []),
    tone([hz], toneMs, amplitude),
  ]);
  return {
    pcm: concatPcm(pieces),
    text: `${count} beeps ${frequencies.join('/')} Hz ${toneMs} ms${gapMs > 0 ? ` ${gapMs} ms apart` : ''}`,
  };
}

/** Adds a pause or words to a plan. */
export function planner(p: Plan) {
  return {
    pause(ms: number) {
      p.pieces.push({ pcm: silence(Math.round(ms / 20) * 20) });
      p.description.push(`${(ms / 1000).toFixed(1)} s silence`);
    },
    say(text: string) {
      p.pieces.push({ say: text });
      p.text = p.text ? `${p.text} ${text}` : text;
      p.description.push(`"${text}"`);
    },
    play(pcm: Int16Array, text: string) {
      p.pieces.push({ pcm });
      p.description.push(text);
    },
  };
}

/** The training set's replies to the agent's opener, and how people react to being talked over. */
const TRAINING_REPLIES = ['Yes?', 'Yeah, who is this?', 'Speaking.', 'Okay?', 'Yes, hi.', 'Sure.'];

function trainingReaction(random: Random): NonNullable<Plan['reaction']> {
  return {
    reactMs: Math.round(between(random, 250, 1000)),
    finishes: random() < 0.25,
    reply:
      random() < 0.95 ? { text: pick(random, TRAINING_REPLIES), delayMs: Math.round(between(random, 200, 800)) } : null,
  };
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
    lengthMs: CLIP_MS,
    description: [],
    greetingGroup: kind,
    reaction: null,
  };
  const { pause, say, play } = planner(p);
  switch (kind) {
    case 'human': {
      p.label = 'human';
      p.voice = drawVoice(random);
      // Some pick up and speak at once, some after the handset reaches the ear.
      pause(random() < 0.3 ? between(random, 1000, 2200) : between(random, 150, 1000));
      const [list, greetings] =
        random() < BUSINESS_SHARE ? ['business', BUSINESS_GREETINGS] : ['human', HUMAN_GREETINGS];
      const index = pickIndex(random, greetings);
      say(fill(greetings[index]!, random));
      p.greetingGroup = `${list}:${index}`;
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
      const list = short ? SHORT_VOICEMAIL_GREETINGS : VOICEMAIL_GREETINGS;
      const index = pickIndex(random, list);
      say(fill(list[index]!, random));
      p.greetingGroup = `${short ? 'short-voicemail' : 'voicemail'}:${index}`;
      if (kind === 'voicemail-beep') {
        pause(short ? between(random, 150, 600) : between(random, 200, 1200));
        const b = beep(random);
        play(b.pcm, b.text);
      }
      if (random() < 0.6) pause(between(random, 500, 3000));
      p.lengthMs = 0; // as long as it lasts, at least 9 s
      break;
    }
    case 'beep-only': {
      pause(between(random, 200, 1500));
      const b = beep(random);
      play(b.pcm, b.text);
      break;
    }
    case 'screener': {
      p.voice = drawVoice(random);
      pause(between(random, 200, 1200));
      const index = pickIndex(random, SCREENER_PROMPTS);
      say(SCREENER_PROMPTS[index]!);
      p.greetingGroup = `screener:${index}`;
      p.lengthMs = 0;
      break;
    }
    case 'silence':
    case 'noise':
      p.label = 'unknown';
      p.description.push(kind === 'silence' ? 'nobody speaks' : 'line noise, nobody speaks');
      break;
  }
  p.description.push(describeLine(p.noise));
  return p;
}

/** Shortest clip: the detector listens to a greeting under way for up to 8 s. */
const CLIP_MS = 9000;

/** The far end's audio before the line: the plan's pieces, padded or cut to its length. */
async function renderSpeech(p: Plan, espeak: string): Promise<Int16Array> {
  const chunks: Int16Array[] = [];
  for (const piece of p.pieces) {
    chunks.push('pcm' in piece ? piece.pcm : level(await synthesize(piece.say, p.voice!, espeak), p.speechDbfs));
  }
  let pcm = concatPcm(chunks);
  const length = Math.round((Math.max(p.lengthMs, CLIP_MS) * SAMPLE_RATE) / 1000);
  if (pcm.length < length) pcm = concatPcm([pcm, new Int16Array(length - pcm.length)]);
  else if (p.lengthMs > 0) pcm = pcm.slice(0, length);
  return pcm;
}

/**
 * What the line carries when the agent starts an opener of `openerMs` at `openerAtMs` (ms after
 * the answer): a machine plays on regardless; a person keeps talking for their reaction time (or
 * to the end of the phrase under way), falls silent, and replies after the opener, or waits.
 */
export function cuedPcm(clip: AmdClip, openerAtMs: number, openerMs: number): Int16Array {
  const reaction = clip.reaction;
  if (!reaction) return clip.pcm;
  const speech = clip.speech;
  const samples = (ms: number) => Math.round((ms * SAMPLE_RATE) / 1000);
  let cut = Math.min(speech.length, samples(openerAtMs + reaction.reactMs));
  if (reaction.finishes) {
    // To the end of the phrase: the next 250 ms without a sample above the speech's quiet floor.
    const quiet = samples(250);
    let run = 0;
    while (cut < speech.length && run < quiet) {
      run = Math.abs(speech[cut]!) < 64 ? run + 1 : 0;
      cut++;
    }
  }
  const out = new Int16Array(speech.length);
  out.set(speech.subarray(0, cut));
  if (reaction.reply) {
    const at = Math.max(cut, samples(openerAtMs + openerMs + reaction.reply.delayMs));
    if (at < out.length) out.set(reaction.reply.pcm.subarray(0, out.length - at), at);
  }
  return applyLine(out, clip.line, seededRandom(clip.lineSeed));
}

/** Renders a plan into a clip: synthesis, the person's reply, the line. */
export async function renderClip(
  p: Plan,
  id: string,
  source: AmdClip['source'],
  lineSeed: number,
  espeak: string,
): Promise<AmdClip> {
  const speech = await renderSpeech(p, espeak);
  const v = p.voice;
  let reaction: AmdReaction | null = null;
  if (p.reaction) {
    const r = p.reaction;
    const reply = r.reply ? { ...r.reply, pcm: level(await synthesize(r.reply.text, v!, espeak), p.speechDbfs) } : null;
    reaction = { reactMs: r.reactMs, finishes: r.finishes, reply };
  }
  return {
    id,
    source,
    greetingGroup: p.greetingGroup,
    voiceGroup: v ? (v.name.split('+')[1] ?? v.name) : 'none',
    label: p.label,
    kind: p.kind,
    text: p.text,
    voice: v ? `${v.name} ${v.rate} wpm pitch ${v.pitch}` : null,
    description: p.description.join(', '),
    pcm: applyLine(speech, p.noise, seededRandom(lineSeed)),
    speech,
    line: p.noise,
    lineSeed,
    reaction,
  };
}

/** The kinds of a set of `count` clips, in the mix's proportions (largest remainders), shuffled by `random`. */
export function kinds<K extends string>(mix: ReadonlyArray<[K, number]>, count: number, random: Random): K[] {
  const shares = mix.map(([kind, share]) => ({ kind, exact: count * share, n: Math.floor(count * share) }));
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

/** Renders plans `concurrency` at a time (espeak-ng processes), in order. */
export async function renderPlans(
  plans: ReadonlyArray<{ plan: Plan; id: string; lineSeed: number }>,
  source: AmdClip['source'],
  options: { concurrency?: number; espeak?: string },
): Promise<AmdClip[]> {
  const clips: AmdClip[] = new Array<AmdClip>(plans.length);
  let next = 0;
  const worker = async () => {
    while (next < plans.length) {
      const index = next++;
      const { plan: p, id, lineSeed } = plans[index]!;
      clips[index] = await renderClip(p, id, source, lineSeed, options.espeak ?? 'espeak-ng');
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
  return clips;
}

/** Generates the labelled training set in memory. The same options give the same clips. */
export async function generateAmdDataset(options: AmdDatasetOptions = {}): Promise<AmdClip[]> {
  const count = options.count ?? 240;
  if (!Number.isInteger(count) || count < 1) throw new RangeError('count must be a positive integer');
  const seed = options.seed ?? 1;
  const random = seededRandom(seed);
  // Each clip draws from its own generator, so a clip does not change when espeak-ng output of
  // another one does; the person's reaction from another, so adding it changed no clip.
  const plans = kinds(MIX, count, random).map((kind, i) => {
    const own = seededRandom(seed * 100_003 + i);
    const p = plan(kind, own);
    if (p.label === 'human') p.reaction = trainingReaction(seededRandom(seed * 100_003 + i + 50_000_017));
    p.noise.babbleDbfs = drawRoom(seededRandom(seed * 100_003 + i + 70_000_033), kind === 'noise');
    p.noise.babbleDbfs ??= drawLoudRoom(seededRandom(seed * 100_003 + i + 110_000_071));
    if (p.noise.babbleDbfs !== null) p.description.push(`babble ${p.noise.babbleDbfs.toFixed(0)} dBFS`);
    drawGainAndLoss(seededRandom(seed * 100_003 + i + 130_000_099), p.noise);
    p.description.push(...describeGainAndLoss(p.noise));
    return { plan: p, id: `${String(i + 1).padStart(3, '0')}-${p.kind}`, lineSeed: seed * 100_003 + i + 90_000_049 };
  });
  return renderPlans(plans, 'training', options);
}

/** Bumped whenever a generator's output changes: cached sets of an older version are not read. */
export const AMD_DATASET_VERSION = 9;

/**
 * A generated set, cached under os.tmpdir() (openline-amd/) by `key` and the generators' version:
 * espeak-ng is the slow part, so the benchmark generates each set once.
 */
export async function cachedAmdClips(key: string, make: () => Promise<AmdClip[]>): Promise<AmdClip[]> {
  const dir = path.join(os.tmpdir(), 'openline-amd');
  const file = path.join(dir, `v${AMD_DATASET_VERSION}-${key.replace(/[^\w.-]+/g, '_')}.bin`);
  try {
    return v8.deserialize(fs.readFileSync(file)) as AmdClip[];
  } catch {
    const clips = await make();
    fs.mkdirSync(dir, { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temporary, v8.serialize(clips));
    fs.renameSync(temporary, file);
    return clips;
  }
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
