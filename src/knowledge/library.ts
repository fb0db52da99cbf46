import { isQuestion, STOP_WORDS } from '../domain/words.js';
import { KnowledgeIndex, type KnowledgeSource, type Passage } from './search.js';

/** Where the library reads knowledge bases from (the store). */
export interface KnowledgeReader {
  /** Which of `ids` are the account's, and the version (`updated_at`) of each: no text. */
  versions(accountId: string, ids: readonly string[]): Promise<{ id: string; updated_at: string }[]>;
  getMany(accountId: string, ids: readonly string[]): Promise<(KnowledgeSource & { updated_at: string })[]>;
}

/** Looks up what the knowledge bases of a call say about `query`, best first. */
export type KnowledgeLookup = (query: string, limit?: number) => Passage[];

/** How many knowledge bases' indexes stay built between calls. */
const CACHED = 64;

/**
 * The knowledge bases calls search: each one's index is built once per version of its text (its
 * `updated_at`) and shared by every call that names it, so a campaign of many calls over one large
 * knowledge base indexes it once.
 */
export class KnowledgeLibrary {
  /** By knowledge base id, the most recently used last. */
  private readonly cache = new Map<string, { version: string; index: KnowledgeIndex }>();

  constructor(private readonly reader: KnowledgeReader) {}

  /** The lookup over a call's knowledge bases (those still there); undefined when none is. */
  async lookupFor(accountId: string, ids: readonly string[]): Promise<KnowledgeLookup | undefined> {
    if (ids.length === 0) return undefined;
    const versions = await this.reader.versions(accountId, ids);
    if (versions.length === 0) return undefined;
    // Only the texts not indexed at their current version are read (up to 1 MB each).
    const stale = versions.filter((v) => this.cache.get(v.id)?.version !== v.updated_at).map((v) => v.id);
    for (const source of await this.reader.getMany(accountId, stale)) this.index(source);
    const indexes = versions.flatMap((v) => this.used(v.id) ?? []);
    return (query, limit = 3) =>
      indexes
        .flatMap((index) => index.search(query, limit))
        .sort((a, b) => b.score - a.score)
        .slice(0, limit);
  }

  private index(source: KnowledgeSource & { updated_at: string }): void {
    this.cache.set(source.id, { version: source.updated_at, index: new KnowledgeIndex([source]) });
  }

  /** A cached index, marked most recently used; the oldest go once there are more than CACHED. */
  private used(id: string): KnowledgeIndex | undefined {
    const entry = this.cache.get(id);
    if (!entry) return undefined;
    this.cache.delete(id);
    this.cache.set(id, entry);
    for (const oldest of this.cache.keys()) {
      if (this.cache.size <= CACHED) break;
      this.cache.delete(oldest);
    }
    return entry.index;
  }
}

/** Words of conversation, not of a topic: "Hello?", "Can you hear me?", "Sorry, say again?". */
const CHATTER = new Set(
  'hello hi hey hear ok okay yes yeah no sorry say again repeat mean sure right really there calling speaking talking'.split(
    ' ',
  ),
);

/** A question a knowledge base could answer: asked, of three words or more, with a word of a topic. */
function asksAboutSomething(words: string): boolean {
  if (!isQuestion(words)) return false;
  const all = words.toLowerCase().match(/[a-z']+/g) ?? [];
  return all.length >= 3 && all.some((w) => !STOP_WORDS.has(w) && !CHATTER.has(w));
}

/**
 * The lookup of one call, telling `unanswered` about each question that found nothing in its
 * knowledge bases (a knowledge gap), once per question however often the call looks it up.
 */
export function noticingGaps(lookup: KnowledgeLookup, unanswered: (question: string) => void): KnowledgeLookup {
  const told = new Set<string>();
  return (query, limit) => {
    const passages = lookup(query, limit);
    const question = query.trim();
    if (passages.length === 0 && asksAboutSomething(question) && !told.has(question.toLowerCase())) {
      told.add(question.toLowerCase());
      unanswered(question);
    }
    return passages;
  };
}
