import { extractDocumentText, UnreadableDocument, type DocumentKind } from './extract.js';
import type { OutboundClient } from '../outbound/http.js';

/** The most pages one knowledge base is read from, and how many are fetched at once. */
export const MAX_WEB_URLS = 20;
const AT_ONCE = 4;
const PAGE_TIMEOUT_MS = 15_000;
const PAGE_MAX_BYTES = 4 * 1024 * 1024;

export interface WebPages {
  /** Each page's words under its address, in the order given. */
  text: string;
  /** Why pages gave nothing, one line each naming `urls[i]`. */
  problems: string[];
}

/**
 * Reads web pages for a knowledge base (the hosted API's `type: "web"`): each fetched through the
 * guarded client (no private addresses unless allowed, a time and size limit), HTML made text in a
 * child process, plain text kept as it is.
 */
export async function readWebPages(urls: readonly string[], http: Pick<OutboundClient, 'request'>): Promise<WebPages> {
  const texts: string[] = [];
  const problems: { at: number; line: string }[] = [];
  let next = 0;
  const reader = async (): Promise<void> => {
    for (let i = next++; i < urls.length; i = next++) {
      try {
        texts[i] = `Source: ${urls[i]!}\n${await readPage(urls[i]!, http)}`;
      } catch (error) {
        problems.push({ at: i, line: `urls[${i}] ${error instanceof Error ? error.message : String(error)}` });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, urls.length) }, reader));
  return {
    text: texts.filter((t) => t !== undefined).join('\n\n'),
    problems: problems.sort((a, b) => a.at - b.at).map((p) => p.line),
  };
}

async function readPage(url: string, http: Pick<OutboundClient, 'request'>): Promise<string> {
  const response = await http.request({
    method: 'GET',
    url,
    timeoutMs: PAGE_TIMEOUT_MS,
    maxBytes: PAGE_MAX_BYTES,
    headers: { accept: 'text/html,application/xhtml+xml,text/plain;q=0.9', 'user-agent': 'Openline-Knowledge/1' },
  });
  if (response.status < 200 || response.status >= 300) throw new UnreadableDocument(`answered HTTP ${response.status}`);
  const type = (response.headers['content-type'] ?? '').toLowerCase().split(';')[0]!.trim();
  const kind: DocumentKind | undefined =
    type === 'text/html' || type === 'application/xhtml+xml' || type === ''
      ? 'html'
      : type.startsWith('text/')
        ? 'text'
        : undefined;
  if (!kind) throw new UnreadableDocument(`is ${type}, not a web page: upload such a file as type "file" instead`);
  return extractDocumentText(kind, Buffer.from(response.body, 'utf8'));
}

/** The most addresses a crawl gives, and the most sitemaps it reads (an index names others). */
export const MAX_CRAWL_URLS = 1000;
const MAX_SITEMAPS = 5;

export interface CrawledSite {
  /** Where the addresses came from: the site's sitemap, or the links of the page itself. */
  source: 'sitemap' | 'links';
  urls: string[];
}

/** `&amp;` and the like, as they stand in XML and HTML attribute values. */
const unescape = (s: string): string =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");

/**
 * The pages of a site, to choose which to read into a knowledge base (POST /v1/knowledge/crawl):
 * the addresses its sitemap lists (`/sitemap.xml`, or those robots.txt names; a sitemap index's
 * sitemaps are followed), else the links of the page itself that stay on its site. Every fetch goes
 * through the guarded client. At most `limit` addresses, in the order found, each once.
 */
export async function crawlSite(
  url: string,
  limit: number,
  http: Pick<OutboundClient, 'request'>,
): Promise<CrawledSite> {
  const origin = new URL(url).origin;
  const fetchText = async (address: string): Promise<string | undefined> => {
    try {
      const response = await http.request({
        method: 'GET',
        url: address,
        timeoutMs: PAGE_TIMEOUT_MS,
        maxBytes: PAGE_MAX_BYTES,
        headers: { 'user-agent': 'Openline-Knowledge/1' },
      });
      return response.status >= 200 && response.status < 300 ? response.body : undefined;
    } catch {
      return undefined;
    }
  };
  const found = new Set<string>();
  const add = (address: string) => {
    if (found.size >= limit) return;
    try {
      const resolved = new URL(unescape(address.trim()), url);
      resolved.hash = '';
      if (resolved.origin === origin && /^https?:$/.test(resolved.protocol)) found.add(resolved.href);
    } catch {
      // Not an address.
    }
  };

  const robots = (await fetchText(`${origin}/robots.txt`)) ?? '';
  const queue = [...robots.matchAll(/^\s*sitemap:\s*(\S+)/gim)].map((m) => m[1]!);
  if (queue.length === 0) queue.push(`${origin}/sitemap.xml`);
  for (let read = 0; queue.length > 0 && read < MAX_SITEMAPS && found.size < limit; read++) {
    const xml = await fetchText(queue.shift()!);
    if (!xml) continue;
    const locs = [...xml.matchAll(/<loc>\s*([^<]+?)\s*<\/loc>/gi)].map((m) => unescape(m[1]!));
    if (/<sitemapindex[\s>]/i.test(xml)) queue.push(...locs);
    else for (const loc of locs) add(loc);
  }
  if (found.size > 0) return { source: 'sitemap', urls: [...found] };

  const page = await fetchText(url);
  if (page === undefined) throw new UnreadableDocument('could not be read, and the site has no sitemap');
  add(url);
  for (const match of page.matchAll(/<a\s[^>]*?href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/gi))
    add(match[1] ?? match[2] ?? match[3] ?? '');
  return { source: 'links', urls: [...found] };
}
