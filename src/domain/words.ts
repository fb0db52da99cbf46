/**
 * Words that carry no topic ("the", "what", "your"): matching a caller's words against edges,
 * menus or a knowledge base ignores them.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an the to for of and or in on at by with is are am was be been you your me my i we our it its this that ' +
    'please from about if as do does did so just can could would will shall should may might there here ' +
    'they them their he she his her what which who whom how when where why then than also too very'
  ).split(' '),
);

/** Lowercase word stems: plural s, -ing and -ed removed so "owns" meets "own" and "booking" meets "book". */
export function stem(word: string): string {
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

const QUESTION =
  /\?$|^(?:(?:so|and|but|ok(?:ay)?|um|uh|hi|hello|yes|yeah|well),? )*(?:what|when|where|which|who|why|how|do|does|did|is|are|can|could|will|would|should|may)\b|\b(?:tell me|i'?d like to know|i want to know|i was wondering|wondering)\b/i;

/** A question, or a request to be told something: what a knowledge base may answer. */
export function isQuestion(words: string): boolean {
  return QUESTION.test(words.trim());
}
