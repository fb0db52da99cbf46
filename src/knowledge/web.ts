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
 * worker thread, plain text kept as it is.
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
