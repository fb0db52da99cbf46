/**
 * Runs in a child process (src/knowledge/extract.ts): reads the text of one PDF, Word or HTML
 * document, work that can take seconds and much memory on a large or hostile file, and must
 * neither hold the event loop calls share nor take the server down when it runs out of memory.
 */
import { convert } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText, getDocumentProxy } from 'unpdf';
import { MAX_EXTRACTED_CHARS, type ReaderAnswer } from './extract.js';

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

const answer = (message: ReaderAnswer): void => {
  process.send?.(message, () => process.exit(0));
};

process.once('message', (job: Job) => {
  read(job).then(
    // Its length is known without copying it: a text too long is refused here, never sent.
    (text) => answer(text.length > MAX_EXTRACTED_CHARS ? { error: 'too-much-text' } : { text }),
    () => answer({ error: 'unreadable' }),
  );
});
