/**
 * Runs in a worker thread (src/knowledge/extract.ts): reads the text of one PDF, Word or HTML
 * document, work that can take seconds on a large file and must not hold the event loop calls share.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { convert } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText, getDocumentProxy } from 'unpdf';

interface Job {
  kind: 'pdf' | 'docx' | 'html';
  data: Uint8Array;
}

/** A page's words: no links' addresses, images, scripts, styles or navigation; paragraphs kept apart. */
const HTML_OPTIONS = {
  wordwrap: false as const,
  selectors: [
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    // Headings as written, not in capitals.
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
    ...['script', 'style', 'noscript', 'svg', 'nav', 'template', 'iframe'].map((selector) => ({
      selector,
      format: 'skip',
    })),
  ],
};

async function read({ kind, data }: Job): Promise<string> {
  if (kind === 'docx') return (await mammoth.extractRawText({ buffer: Buffer.from(data) })).value;
  if (kind === 'html') return convert(Buffer.from(data).toString('utf8'), HTML_OPTIONS);
  const pdf = await getDocumentProxy(data);
  const pages = await extractText(pdf, { mergePages: false });
  return pages.text.join('\n\n');
}

read(workerData as Job).then(
  (text) => parentPort?.postMessage({ text }),
  (error: unknown) => parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) }),
);
