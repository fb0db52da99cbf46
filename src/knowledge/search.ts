import MiniSearch from 'minisearch';
import { STOP_WORDS, stem } from '../domain/words.js';

/** One knowledge base as a call searches it. */
export interface KnowledgeSource {
  id: string;
  name: string;
  text: string;
}

/** A passage of a knowledge base that answers a question. */
export interface Passage {
  /** The knowledge base's name. */
  source: string;
  text: string;
  /** How well it matches (BM25): comparable between passages of one search. */
  score: number;
}

/** Passages are a few sentences of one paragraph: about this many characters at most. */
const PASSAGE_CHARS = 600;

/** A term as the index keeps it: lowercase, stemmed; words that carry no topic are left out. */
function term(word: string): string | null {
  const lower = word.toLowerCase();
  if (lower.length < 2 || STOP_WORDS.has(lower)) return null;
  return stem(lower);
}

/**
 * A text cut into passages: paragraphs, and long paragraphs into runs of whole sentences of up to
 * PASSAGE_CHARS (a sentence longer than that is a passage of its own).
 */
export function passagesOf(text: string): string[] {
  const passages: string[] = [];
  for (const paragraph of text.split(/\n\s*\n/)) {
    const sentences = paragraph
      .replace(/\s+/g, ' ')
      .split(/(?<=[.!?])\s+/)
      .map((s) => s.trim())
      .filter(Boolean);
    let current = '';
    for (const sentence of sentences) {
      if (current && current.length + 1 + sentence.length > PASSAGE_CHARS) {
        passages.push(current);
        current = sentence;
      } else current = current ? `${current} ${sentence}` : sentence;
    }
    if (current) passages.push(current);
  }
  return passages;
}

/**
 * The knowledge bases of a call, indexed for full-text search (BM25 over stemmed words): what the
 * agent looks up when the caller asks something. Built once per knowledge base text and shared.
 */
export class KnowledgeIndex {
  private readonly index = new MiniSearch<{ id: number; source: string; text: string }>({
    fields: ['text'],
    storeFields: ['source', 'text'],
    processTerm: term,
    searchOptions: { processTerm: term, prefix: (t) => t.length >= 5, fuzzy: (t) => (t.length >= 6 ? 0.2 : false) },
  });

  constructor(sources: readonly KnowledgeSource[]) {
    let id = 0;
    for (const source of sources)
      for (const text of passagesOf(source.text)) this.index.add({ id: id++, source: source.name, text });
  }

  get size(): number {
    return this.index.documentCount;
  }

  /** The passages that best answer `query`, best first; none when it shares no topic word with any. */
  search(query: string, limit = 3): Passage[] {
    return this.index
      .search(query)
      .slice(0, limit)
      .map((hit) => ({ source: hit.source as string, text: hit.text as string, score: hit.score }));
  }
}
