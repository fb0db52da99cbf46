import { KnowledgeIndex, type KnowledgeSource, type Passage } from './search.js';

/** Where the library reads knowledge bases from (the store). */
export interface KnowledgeReader {
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
    const sources = await this.reader.getMany(accountId, ids);
    if (sources.length === 0) return undefined;
    const indexes = sources.map((source) => this.indexOf(source));
    return (query, limit = 3) =>
      indexes
        .flatMap((index) => index.search(query, limit))
        .sort((a, b) => b.score - a.score)
        .slice(0, limit);
  }

  private indexOf(source: KnowledgeSource & { updated_at: string }): KnowledgeIndex {
    const cached = this.cache.get(source.id);
    this.cache.delete(source.id);
    const index = cached?.version === source.updated_at ? cached.index : new KnowledgeIndex([source]);
    this.cache.set(source.id, { version: source.updated_at, index });
    for (const oldest of this.cache.keys()) {
      if (this.cache.size <= CACHED) break;
      this.cache.delete(oldest);
    }
    return index;
  }
}
