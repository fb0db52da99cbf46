/**
 * The offline model's side of pathways (CONTRACT.md section 7): deterministic word matching for
 * choosing edges and global nodes, simple typed extraction for extractVars, a check for node
 * conditions, and a line for prompt-only nodes. No network, no randomness: the same words always
 * take the same path, so example pathways run the same way on every machine.
 */
import { STOP_WORDS, stem } from '../domain/words.js';

const AFFIRMATIVE =
  /\b(yes|yeah|yep|yup|sure|ok|okay|correct|right|absolutely|definitely|of course|certainly|i do|i did|i have|that works|sounds good)\b/i;
const NEGATIVE = /\b(no|nope|nah|not|don't|do not|didn't|did not|haven't|have not|never|none|rather not)\b/i;

/**
 * The everyday intents of a reply (and of the edge labels that expect them), as words both sides
 * share: "Yes, that works for me" meets "wants to renew", "not now, call me next week" meets
 * "call back later", "you have the wrong number" meets "wrong person".
 */
const INTENTS: { word: string; pattern: RegExp; unless?: RegExp }[] = [
  // Wanting, agreeing, accepting: a yes, unless negated ("not interested", "doesn't want").
  {
    word: 'yes',
    pattern:
      /\b(wants?|would like|(?:i'?d|we'?d) (?:like|love)|interested|agrees?|accepts?|confirm\w*|happy to|let'?s do|go ahead|no problem|no worries)\b/i,
    unless: /\b(not|don't|doesn't|do not|does not|never|no longer)\b(?!\s+(?:problem|worries))/i,
  },
  {
    word: 'later',
    pattern:
      /\b(later|another time|call (?:me |us )?back|not (?:right )?now|busy|next (?:week|month)|reschedul\w*|some other time)\b/i,
  },
  {
    word: 'wrong',
    pattern:
      /\b(wrong (?:number|person)|who is this|no one (?:here )?by that name|not the right person|doesn'?t live here|don'?t know (?:him|her|them|who))\b/i,
  },
  // Refusing, as edge labels often put it ("declines", "refused the offer").
  { word: 'no', pattern: /\b(declin\w*|refus\w*|reject\w*|turn(?:s|ed)? (?:it )?down)\b/i },
  { word: 'stop', pattern: /\b(stop calling|do not call|don'?t call|remove (?:me|my number)|take me off)\b/i },
];

/** The words intents add: a topic is never made of them alone (see the runner's global nodes). */
export const INTENT_WORDS: ReadonlySet<string> = new Set(['yes', 'no', 'later', 'wrong', 'stop']);

/** Content words of a text as stems; yes/no, their variants and the everyday intents become words. */
export function contentWords(text: string): Set<string> {
  const words = new Set(
    text
      .toLowerCase()
      .replace(/n't\b/g, ' not')
      .split(/[^a-z0-9]+/)
      .filter((w) => w.length > 1 && !STOP_WORDS.has(w))
      .map(stem),
  );
  const intents = new Set<string>();
  for (const intent of INTENTS) {
    if (intent.pattern.test(text) && !intent.unless?.test(text)) intents.add(intent.word);
  }
  // "No problem" and "no worries" agree.
  const agreeing = /\bno (?:problem|worries)\b/i.test(text);
  if (AFFIRMATIVE.test(text) || intents.has('yes')) words.add('yes');
  // A deferral or a wrong person is what the "no" in it means.
  const other = intents.has('later') || intents.has('wrong');
  if (NEGATIVE.test(text) && !agreeing && !other) words.add('no');
  if (other || agreeing) words.delete('no');
  if (intents.has('no') && !other) words.add('no');
  for (const intent of intents) if (intent !== 'yes' && intent !== 'no') words.add(intent);
  return words;
}

/** The words two texts share (stems), in the order of the first. */
export function sharedWords(heard: string, option: string): string[] {
  const wanted = contentWords(option);
  return [...contentWords(heard)].filter((w) => wanted.has(w));
}

export interface Candidate {
  /** An edge id or a global node id. */
  id: string;
  /** The words matched against (label and description, or a globalLabel). */
  text: string;
}

export interface WordChoice {
  id: string;
  matched: string[];
}

/**
 * The candidate sharing the most words with what was heard (at least one); the first of equals
 * wins, so the order of edges in the graph breaks ties. Undefined when nothing matches.
 */
export function bestMatch(heard: string, candidates: readonly Candidate[]): WordChoice | undefined {
  let best: WordChoice | undefined;
  for (const c of candidates) {
    const matched = sharedWords(heard, c.text);
    if (matched.length > 0 && (!best || matched.length > best.matched.length)) best = { id: c.id, matched };
  }
  return best;
}

const NUMBER_WORDS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
  hundred: 100,
};

const WEEKDAY = /\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|tonight)\b/i;
const DATE =
  /\b((?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? of (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*|\d{4}-\d{2}-\d{2}|\d{1,2}\/\d{1,2}(?:\/\d{2,4})?)\b/i;
const TIME =
  /\b(\d{1,2}(?::\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)|\d{1,2}:\d{2}|noon|midday|midnight|morning|afternoon|evening)/i;
const EMAIL = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/;
const PHONE = /((?:\+|\()?\d[\d\s().-]{7,}\d)/;
// The lead-in in any case ("My name is", "I'm"), the name itself capitalised.
const NAME =
  /\b(?:[Mm]y name is|[Mm]y name['’]s|[Tt]his is|[Ii] am|[Ii]['’]m|[Cc]all me|[Ii]t['’]s)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)/;

/** A number as written or spoken ("120", "$1,200", "two hundred", "forty five"); undefined if none. */
export function findNumber(text: string): number | undefined {
  const digits = /-?\$?\d[\d,]*(?:\.\d+)?/.exec(text);
  if (digits) return Number(digits[0].replace(/[$,]/g, ''));
  let total: number | undefined;
  let current = 0;
  for (const word of text.toLowerCase().split(/[^a-z]+/)) {
    if (word === 'and' && total !== undefined) continue;
    const value = NUMBER_WORDS[word];
    if (value === undefined) {
      if (total !== undefined || current > 0) break;
      continue;
    }
    if (value === 100) current = (current || 1) * 100;
    else current += value;
    total = current;
  }
  return total;
}

export type ExtractVarType = 'string' | 'integer' | 'number' | 'boolean';

/**
 * One variable by pattern, as the offline model can: booleans from yes/no words, integers and
 * numbers from digits or number words, and strings by what the name and description ask for
 * (a day or date, a time, an e-mail, a phone number, a name); any other string is the caller's
 * words as said. Undefined when nothing fits.
 */
export function extractValue(
  name: string,
  type: ExtractVarType,
  description: string,
  heard: string,
): string | number | boolean | undefined {
  const text = heard.trim();
  if (text === '') return undefined;
  switch (type) {
    case 'boolean': {
      const words = contentWords(text);
      if (words.has('yes') && !words.has('no')) return true;
      if (words.has('no') && !words.has('yes')) return false;
      return undefined;
    }
    case 'integer': {
      const n = findNumber(text);
      return n === undefined ? undefined : Math.round(n);
    }
    case 'number':
      return findNumber(text);
    case 'string': {
      // The name says what is wanted ("appointment_time"); the description only when the name does not.
      const words = (s: string) => s.toLowerCase().replace(/[_-]+/g, ' ');
      const kind = (s: string) => /\b(e ?mail|phone|callback|day|date|when|time|hour|name)\b/.test(words(s));
      const hint = kind(name) ? words(name) : words(`${name} ${description}`);
      if (/\be ?mail\b/.test(hint)) return EMAIL.exec(text)?.[0];
      if (/\b(phone|callback)\b/.test(hint)) return PHONE.exec(text)?.[1]?.trim();
      const wantsDay = /\b(day|date|when)\b/.test(hint);
      const wantsTime = /\b(time|hour)\b/.test(hint);
      if (wantsDay && !wantsTime) return (DATE.exec(text) ?? WEEKDAY.exec(text))?.[0]?.toLowerCase();
      if (wantsTime && !wantsDay) return TIME.exec(text)?.[0]?.toLowerCase().replace(/\./g, '');
      if (wantsDay && wantsTime) {
        const day = (DATE.exec(text) ?? WEEKDAY.exec(text))?.[0];
        const time = TIME.exec(text)?.[0];
        return day || time ? [day, time].filter(Boolean).join(' at ').toLowerCase() : undefined;
      }
      if (/\bname\b/.test(hint)) return NAME.exec(text)?.[1];
      return text.replace(/[.!?]+$/, '');
    }
  }
}

const AFFIRM_ONLY = /^\s*(yes|yeah|yep|sure|ok|okay|correct|right|absolutely)\b/i;

/**
 * Whether a node's condition is met, as far as words can tell: with extractVars, when every one
 * of them has a value; without, when the answer shares a word with the condition or agrees.
 */
export function conditionMet(
  condition: string,
  heard: string,
  vars: { declared: number; missing: readonly string[] },
): boolean {
  if (vars.declared > 0) return vars.missing.length === 0;
  return sharedWords(heard, condition).length > 0 || AFFIRM_ONLY.test(heard);
}

/**
 * A line for a node that has only a prompt (instructions for generated speech), which the
 * offline model cannot generate: common instruction forms become speech ("Ask the caller for
 * their email" -> "Could you tell me your email?"); anything else is said as written.
 */
export function lineFromPrompt(prompt: string): string {
  const first = prompt
    .replace(/\s+/g, ' ')
    .trim()
    .split(/(?<=[.!?])\s+/)[0]!
    .replace(/[.!?]+$/, '');
  const you = (s: string) =>
    s
      .replace(/\b(the caller|the customer|the user|the person|them)\b/gi, 'you')
      .replace(/\b(their|his or her)\b/gi, 'your')
      .replace(/\b(they are|they're)\b/gi, 'you are')
      .replace(/\bthey\b/gi, 'you');
  let m = /^ask (?:the caller|the customer|the user|the person|them|him|her)? ?(?:for|about) (.+)$/i.exec(first);
  if (m) return `Could you tell me ${you(m[1]!)}?`;
  m =
    /^ask (?:the caller|the customer|the user|the person|them|him|her)? ?(if|whether|what|when|which|how|who|where) (.+)$/i.exec(
      first,
    );
  if (m) return `Could you tell me ${m[1]!.toLowerCase()} ${you(m[2]!)}?`;
  if (/\b(say goodbye|end the call|hang up)\b/i.test(first))
    return /\bthank/i.test(first) ? 'Thank you for your time. Goodbye!' : 'Goodbye!';
  m =
    /^(?:tell|inform|let) (?:the caller|the customer|the user|the person|them|him|her)? ?(?:know )?(?:that )?(.+)$/i.exec(
      first,
    );
  if (m) return `${capital(you(m[1]!))}.`;
  m = /^say(?: that)? (.+)$/i.exec(first);
  if (m) return sentence(m[1]!.replace(/^["']|["']$/g, ''));
  if (/^(greet|welcome)\b/i.test(first)) return 'Hello! How can I help you today?';
  return `${capital(you(first))}.`;
}

const capital = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
const sentence = (s: string): string => (/[.!?]$/.test(s) ? capital(s) : `${capital(s)}.`);

/**
 * The sentences of a knowledge text that best answer a question (most shared words), at most two.
 * A question of the text itself (a FAQ's "Do you open on Saturday?") is not an answer: the
 * sentences after it, up to the next question, are.
 */
export function answerFrom(knowledge: string, question: string): string | undefined {
  const sentences = knowledge
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
  const asked = (i: number) => sentences[i]!.endsWith('?');
  const scored = sentences
    .map((s, i) => ({ s, i, score: sharedWords(question, s).filter((w) => w !== 'yes' && w !== 'no').length }))
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i);
  const best = scored[0];
  if (best && asked(best.i)) {
    const after: string[] = [];
    for (let i = best.i + 1; i < sentences.length && !asked(i) && after.length < 2; i++) after.push(sentences[i]!);
    if (after.length > 0) return after.join(' ');
  }
  const answers = scored
    .filter((x) => !asked(x.i))
    .slice(0, 2)
    .sort((a, b) => a.i - b.i);
  return answers.length ? answers.map((x) => x.s).join(' ') : undefined;
}
