/**
 * Splits a reply that arrives in pieces (a language model's text deltas) into what can be spoken
 * before the rest is known: whole sentences, and, for a long sentence, its clauses. Speech starts
 * with the first sentence while the model writes the next.
 */

import type { SpeechText } from '../carriers/types.js';

/** Words followed by a period that does not end the sentence. */
const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'st',
  'sr',
  'jr',
  'prof',
  'vs',
  'etc',
  'e.g',
  'i.e',
  'no',
  'approx',
]);

/** A clause boundary is used only when a sentence runs past this many characters. */
const LONG_SENTENCE = 120;
/** ... and only after this many characters of the clause, so that no fragment is too short to say well. */
const MIN_CLAUSE = 40;

/** The end of the first sentence (or clause of a long one) in `text`: the index after it, or -1. */
export function sentenceEnd(text: string): number {
  const end = fullStop(text);
  // A long sentence (or a long run with no end yet) is spoken clause by clause.
  const span = end > 0 ? end : text.length;
  if (span >= LONG_SENTENCE) {
    // Chinese and Japanese write their commas without a space after them.
    const clause = /[,;:–—]\s|[，；：]/g;
    clause.lastIndex = MIN_CLAUSE;
    const match = clause.exec(text);
    if (match && match.index < span) return match.index + 1;
  }
  return end;
}

/**
 * Full stops: . ! ? … (and Hindi's danda, Arabic's question mark) followed by whitespace, or
 * Chinese and Japanese 。！？, which take no space after them, followed by anything but more of
 * them; closing quotes and brackets belong to the sentence they close.
 */
const FULL_STOP = /[.!?…।॥؟]+["'”’)\]]*(?=\s)|[。！？]+[」』”’）)\]"']*(?=[^。！？」』”’）)\]"'])/g;

/**
 * The end of the first sentence (see FULL_STOP), but not after a title such as "Dr." or an
 * initial; -1 when there is none yet.
 */
function fullStop(text: string): number {
  for (const sentence of text.matchAll(FULL_STOP)) {
    const before = /(\S+)$/.exec(text.slice(0, sentence.index))?.[1] ?? '';
    if (sentence[0].startsWith('.') && (ABBREVIATIONS.has(before.toLowerCase()) || /^[A-Z]$/.test(before))) continue;
    if (sentence.index + sentence[0].length >= 2) return sentence.index + sentence[0].length;
  }
  return -1;
}

/** The pieces of `source` as sentences (or clauses of long ones), trimmed; the rest at the end. */
export async function* sentencesOf(source: SpeechText): AsyncGenerator<string> {
  if (typeof source === 'string') {
    if (source.trim() !== '') yield source.trim();
    return;
  }
  let buffer = '';
  for await (const piece of source) {
    buffer += piece;
    for (let end = sentenceEnd(buffer); end > 0; end = sentenceEnd(buffer)) {
      const sentence = buffer.slice(0, end).trim();
      buffer = buffer.slice(end);
      if (sentence !== '') yield sentence;
    }
  }
  if (buffer.trim() !== '') yield buffer.trim();
}

/** All of a reply's text (for legs that say a reply in one piece). */
export async function textOf(source: SpeechText): Promise<string> {
  if (typeof source === 'string') return source;
  let text = '';
  for await (const piece of source) text += piece;
  return text;
}
