/**
 * The call's `pronunciation_guide` (seed 2.1), applied to what the agent says before it is
 * synthesised: each rule replaces `word` with `pronunciation`. `case_sensitive` (default false)
 * decides whether case must match; `spaced` (default true) matches whole words only, otherwise any
 * substring. All rules apply in one pass over the original text, so a pronunciation is never
 * rewritten again by another rule; where matches overlap, the earliest wins, then the longest,
 * then the rule listed first.
 */

export interface PronunciationRule {
  word: string;
  pronunciation: string;
  /** Default false. */
  case_sensitive?: boolean;
  /** Default true: `word` matches whole words only. */
  spaced?: boolean;
}

interface Compiled {
  regex: RegExp;
  pronunciation: string;
}

// A call's guide is applied to every sentence the agent says: compile it once per guide.
const compiledGuides = new WeakMap<readonly PronunciationRule[], Compiled[]>();

function compile(guide: readonly PronunciationRule[]): Compiled[] {
  let compiled = compiledGuides.get(guide);
  if (!compiled) {
    compiled = guide
      .filter((rule) => rule.word !== '')
      .map((rule) => {
        const literal = rule.word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        // Whole words: no letter, digit or underscore right before or after, in any script.
        const source = rule.spaced === false ? literal : `(?<![\\p{L}\\p{N}_])${literal}(?![\\p{L}\\p{N}_])`;
        return {
          regex: new RegExp(source, rule.case_sensitive === true ? 'gu' : 'giu'),
          pronunciation: rule.pronunciation,
        };
      });
    compiledGuides.set(guide, compiled);
  }
  return compiled;
}

export function applyPronunciationGuide(text: string, guide: readonly PronunciationRule[] | null | undefined): string {
  if (!guide || guide.length === 0 || text === '') return text;
  const matches: { start: number; end: number; pronunciation: string; rank: number }[] = [];
  compile(guide).forEach(({ regex, pronunciation }, rank) => {
    for (const m of text.matchAll(regex)) {
      matches.push({ start: m.index, end: m.index + m[0].length, pronunciation, rank });
    }
  });
  if (matches.length === 0) return text;
  matches.sort((a, b) => a.start - b.start || b.end - b.start - (a.end - a.start) || a.rank - b.rank);
  let out = '';
  let at = 0;
  for (const m of matches) {
    if (m.start < at) continue;
    out += text.slice(at, m.start) + m.pronunciation;
    at = m.end;
  }
  return out + text.slice(at);
}
