/**
 * The HELD-OUT clip set for answering-machine detection: built apart from the training set
 * (src/amd/dataset.ts) so that its figures cannot flatter a detector fitted there. Nothing in
 * it is drawn from the training generator's lists or ranges:
 *
 * - people answer as businesses and households do: receptionists giving the business and their
 *   own name ("Good afternoon, Harbor View Dental, this is Rosa speaking, how can I help you?"),
 *   shop clerks, "Hello, Okafor residence", short greetings said slowly, first names;
 * - machines greet in other words: home and office voicemail, carrier voicemail prompts ("The
 *   wireless customer you are calling is not available..."), short ones before the beep, call
 *   screeners in other wordings;
 * - other voices: espeak-ng accents the training set never uses (Scottish, Lancaster, West
 *   Midlands, received pronunciation, Caribbean, New York) and other variants (f5, m8, klatt,
 *   Andy, Annie, ...), slower (105-140 words a minute) and faster (200-235) than training's
 *   140-200, pitch outside its 30-70;
 * - other beeps: 350-2400 Hz and 120-2000 ms, three short beeps, two-step tones;
 * - other lines: speech from -32 to -8 dBFS, background babble at several levels, AGC-like level
 *   swings, 0-5 % lost packets, louder hiss; always G.711 mu-law;
 * - people react to the agent talking more slowly, a fifth finish their phrase first, and one in
 *   ten does not reply to the opener at all.
 *
 * The sandbox personas 555-0180 to 555-0189 (src/carriers/sandbox/personas/) greet in further
 * words again, for the same checks through the public API.
 */
import { seededRandom, tone } from '../media/audio.js';
import {
  between,
  describeLine,
  drawLine,
  kinds,
  pick,
  planner,
  renderPlans,
  type AmdClip,
  type AmdClipKind,
  type AmdDatasetOptions,
  type AmdLine,
  type Plan,
  type Voice,
} from './dataset.js';

type Random = () => number;

/** Shares of the held-out set by kind: more people, and of more kinds, than the training set. */
const MIX: ReadonlyArray<[AmdClipKind, number]> = [
  ['human', 0.46],
  ['voicemail-beep', 0.22],
  ['voicemail', 0.1],
  ['beep-only', 0.02],
  ['screener', 0.08],
  ['silence', 0.06],
  ['noise', 0.06],
];

const NAMES = ['Rosa', 'Kevin', 'Aisha', 'Brian', 'Helen', 'Tariq', 'Wendy', 'Diego', 'Fiona', 'Marcus'];
const BUSINESSES = [
  'Harbor View Dental',
  'Greenfield Insurance',
  'Maple Street Pharmacy',
  'Cole and Partners',
  'Blue Ridge Veterinary Clinic',
];
const SHOPS = ["Luigi's Pizzeria", 'Corner Hardware', 'Bright Flowers', 'City Bike Repair', 'Oak Lane Bakery'];
const FAMILIES = ['Johnson', 'Nguyen', 'Okafor', 'Fitzgerald', 'Patel', 'Lindqvist'];

/** People's greetings, by list (the groups of the leave-one-group-out validation). */
const HUMAN_LISTS: Record<string, readonly string[]> = {
  receptionist: [
    'Good afternoon, {business}, this is {name} speaking, how can I help you?',
    'Thank you for calling {business}, {name} speaking.',
    '{business}, this is {name}, how may I help you?',
    'Good morning, {business}, {name} speaking.',
    'Law offices, {name} speaking, how can I direct your call?',
    '{business}, front desk, this is {name}. What can I do for you today?',
  ],
  clerk: [
    '{shop}, what can I do for you?',
    'Hi, {shop}, how can I help?',
    '{shop}, {name} here.',
    'Front desk.',
    'Service department, go ahead.',
    '{shop}, are you calling about an order?',
  ],
  residence: [
    'Hello, {family} residence.',
    '{family} residence, {name} speaking.',
    'Good evening, {family} residence.',
    'Hello, you have the {family}s.',
  ],
  short: ['Hallo?', 'Yes, hello?', 'Mm, hello?', 'Hiya.', 'Evening.', 'Yep?', 'Go ahead.', 'Hello, yes, hi?'],
  name: [
    '{name}.',
    "It's {name}.",
    '{name}, hi.',
    "Hey, it's {name}, what's up?",
    'Hello, this is {name}, who am I speaking with?',
  ],
};
const HUMAN_LIST_SHARES: ReadonlyArray<[string, number]> = [
  ['receptionist', 0.22],
  ['clerk', 0.18],
  ['residence', 0.15],
  ['short', 0.28],
  ['name', 0.17],
];
const AGAIN = ['Hello? Anybody there?', 'Hello-o?', 'Can you hear me?', 'Hello? Who is it?'];
const REPLIES = [
  'Yes, speaking.',
  'Sure, go ahead.',
  'Who is this?',
  'Uh, yes?',
  "Sorry, who's calling?",
  'Yes, it is.',
  "What's this about?",
];

const MACHINE_LISTS: Record<string, readonly string[]> = {
  home: [
    "Hello, you have reached the {family} household. We're not home right now, so please leave us a message.",
    "Hi, this is {name}. I'm either on the other line or away from my desk. Leave a message and I'll return your call as soon as possible.",
    "{name} here, can't get to the phone. Talk after the beep.",
    'Hey! You got {name}. Say something nice.',
    "You've called {name}. I'm out of the office until Monday. For urgent matters, call the main number.",
    "Hi, it's {name}. Text me instead, I hardly check my voicemail.",
  ],
  office: [
    'Thanks for calling {business}. Our hours are nine to five, Monday through Friday. Please leave a message.',
    'Welcome to the voice messaging system of {name}. Please record your message after the tone.',
    'Sorry we missed your call at {shop}. Please leave your name and number and we will call you back.',
    'Hello, and thank you for calling {business}. All our lines are busy at the moment.',
  ],
  carrier: [
    'The wireless customer you are calling is not available. Please try your call again later, or leave a message after the tone.',
    'Your call has been forwarded to an automated voice messaging system. Four one five, five five five, zero one eight three, is not available. At the tone, please record your message.',
    'The subscriber you have dialed is not available. Please leave a message.',
    'Record your message at the tone. When you are finished, hang up, or press pound for more options.',
  ],
  brief: ['Leave it at the beep.', 'Message, please.', 'Hello. Please leave your message after the signal.'],
};
const SCREENERS = [
  "Hi, the person you're calling is using a call screening service. Please state your name and the reason for your call.",
  'This call is being screened. Who is calling, and what is this regarding?',
  "Please say your name after the tone, and I'll see if this person is available.",
  "Go ahead and say your name and why you're calling, and I'll pass it along.",
];

const LANGUAGES = ['en-gb-scotland', 'en-gb-x-gbclan', 'en-gb-x-rp', 'en-gb-x-gbcwmd', 'en-029', 'en-us-nyc'];
const VARIANTS = ['f5', 'm8', 'klatt', 'klatt3', 'Andy', 'Annie', 'adam', 'aunty', 'david', 'edward', 'linda', 'john'];

function fill(template: string, random: Random): string {
  return template
    .replace('{name}', pick(random, NAMES))
    .replace('{business}', pick(random, BUSINESSES))
    .replace('{shop}', pick(random, SHOPS))
    .replace('{family}', pick(random, FAMILIES));
}

function drawVoice(random: Random): Voice {
  // Slower and faster than the training set's 140-200 words a minute, pitch outside its 30-70.
  const slow = random() < 0.6;
  return {
    name: `${pick(random, LANGUAGES)}+${pick(random, VARIANTS)}`,
    rate: Math.round(slow ? between(random, 105, 139) : between(random, 201, 235)),
    pitch: Math.round(random() < 0.5 ? between(random, 12, 30) : between(random, 70, 90)),
    wordGap: Math.floor(between(random, 0, 4)),
  };
}

function heldOutLine(random: Random, loud: boolean): AmdLine {
  return drawLine(random, {
    hissDbfs: loud ? [-50, -36] : [-72, -44],
    humDbfs: [0.3, -62, loud ? -38 : -48],
    clicksPerSecond: [0.3, 0.3, 4],
    babbleDbfs: [loud ? 0.7 : 0.35, loud ? -42 : -56, loud ? -32 : -40],
    agcDepthDb: [0.4, 3, 10],
    agcPeriodMs: [1500, 5000],
    lossRate: [0.5, 0, 0.05],
  });
}

/** A beep as held-out machines play it: one tone, three short ones, or two steps. */
function heldOutBeep(random: Random): { pcm: Int16Array; text: string } {
  const amplitude = Math.round(between(random, 2500, 16000));
  const shape = random();
  if (shape < 0.7) {
    const hz = Math.round(between(random, 350, 2400));
    const ms = Math.round(between(random, 120, 2000) / 10) * 10;
    return { pcm: tone([hz], ms, amplitude), text: `beep ${hz} Hz ${ms} ms` };
  }
  if (shape < 0.85) {
    const hz = Math.round(between(random, 800, 1800));
    const gap = new Int16Array(400);
    const one = tone([hz], 150, amplitude);
    const pcm = new Int16Array(one.length * 3 + gap.length * 2);
    pcm.set(one, 0);
    pcm.set(one, one.length + gap.length);
    pcm.set(one, 2 * (one.length + gap.length));
    return { pcm, text: `three beeps ${hz} Hz 150 ms` };
  }
  const low = Math.round(between(random, 500, 900));
  const high = Math.round(between(random, 1000, 1600));
  const a = tone([low], 200, amplitude);
  const b = tone([high], 300, amplitude);
  const pcm = new Int16Array(a.length + b.length);
  pcm.set(a, 0);
  pcm.set(b, a.length);
  return { pcm, text: `two-step beep ${low}/${high} Hz` };
}

function drawFrom(shares: ReadonlyArray<[string, number]>, random: Random): string {
  let r = random();
  for (const [name, share] of shares) {
    if ((r -= share) < 0) return name;
  }
  return shares[shares.length - 1]![0];
}

function plan(kind: AmdClipKind, random: Random): Plan {
  const p: Plan = {
    kind,
    label: 'machine',
    pieces: [],
    text: '',
    voice: null,
    speechDbfs: between(random, -32, -8),
    noise: heldOutLine(random, kind === 'noise'),
    lengthMs: 9000,
    description: [],
    greetingGroup: kind,
    reaction: null,
  };
  const { pause, say, play } = planner(p);
  const greeting = (lists: Record<string, readonly string[]>, list: string) => {
    const items = lists[list]!;
    const index = Math.floor(random() * items.length);
    say(fill(items[index]!, random));
    p.greetingGroup = `${list}:${index}`;
  };
  switch (kind) {
    case 'human': {
      p.label = 'human';
      p.voice = drawVoice(random);
      pause(random() < 0.35 ? between(random, 1200, 2500) : between(random, 300, 1200));
      greeting(HUMAN_LISTS, drawFrom(HUMAN_LIST_SHARES, random));
      if (random() < 0.3) {
        pause(between(random, 1200, 3000));
        say(pick(random, AGAIN));
      }
      p.reaction = {
        reactMs: Math.round(between(random, 300, 900)),
        finishes: random() < 0.2,
        reply: random() < 0.9 ? { text: pick(random, REPLIES), delayMs: Math.round(between(random, 300, 1200)) } : null,
      };
      break;
    }
    case 'voicemail':
    case 'voicemail-beep': {
      p.voice = drawVoice(random);
      pause(between(random, 80, 1800));
      const list =
        kind === 'voicemail-beep'
          ? pick(random, ['home', 'home', 'office', 'carrier', 'brief'])
          : pick(random, ['home', 'office', 'carrier']);
      greeting(MACHINE_LISTS, list);
      if (kind === 'voicemail-beep') {
        pause(list === 'brief' ? between(random, 100, 700) : between(random, 150, 1500));
        const b = heldOutBeep(random);
        play(b.pcm, b.text);
      }
      if (random() < 0.5) pause(between(random, 400, 3500));
      p.lengthMs = 0;
      break;
    }
    case 'beep-only': {
      pause(between(random, 100, 2000));
      const b = heldOutBeep(random);
      play(b.pcm, b.text);
      break;
    }
    case 'screener': {
      p.voice = drawVoice(random);
      pause(between(random, 150, 1500));
      const index = Math.floor(random() * SCREENERS.length);
      say(SCREENERS[index]!);
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

/**
 * Generates the held-out set. Its seeds are its own: seed 1 of this set shares nothing with seed 1
 * of the training set but the number.
 */
export async function generateHeldOutAmdDataset(options: AmdDatasetOptions = {}): Promise<AmdClip[]> {
  const count = options.count ?? 400;
  if (!Number.isInteger(count) || count < 1) throw new RangeError('count must be a positive integer');
  const seed = options.seed ?? 1;
  const random = seededRandom(seed * 7919 + 104_729);
  const plans = kinds(MIX, count, random).map((kind, i) => {
    const own = seededRandom(seed * 7919 + 1_000_003 * (i + 1));
    const p = plan(kind, own);
    return { plan: p, id: `H${String(i + 1).padStart(3, '0')}-${p.kind}`, lineSeed: seed * 7919 + 3_000_017 * (i + 1) };
  });
  return renderPlans(plans, 'heldout', options);
}
