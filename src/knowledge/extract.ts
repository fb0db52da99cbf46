import { Worker } from 'node:worker_threads';

/** The documents a knowledge base is read from. */
export type DocumentKind = 'text' | 'pdf' | 'docx' | 'html';

/** The most text one knowledge base holds, as the hosted API allows (1 MB). */
export const MAX_KNOWLEDGE_TEXT_BYTES = 1024 * 1024;
/** The largest file a knowledge base is read from. */
export const MAX_KNOWLEDGE_FILE_BYTES = 16 * 1024 * 1024;
/** How long reading one PDF, Word or HTML file may take, and the memory its worker may use. */
const EXTRACT_TIMEOUT_MS = 30_000;
const EXTRACT_HEAP_MB = 256;

const TEXT_EXTENSIONS = /\.(txt|text|md|markdown|csv|tsv|json|jsonl|log|ya?ml|xml)$/i;
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** Why a file gave no text: the message names what was wrong with it. */
export class UnreadableDocument extends Error {
  override readonly name = 'UnreadableDocument';
}

/** What a file is, by its name first and its content type second; undefined: not a kind Openline reads. */
export function documentKind(filename: string, mimetype: string): DocumentKind | undefined {
  const type = mimetype.toLowerCase().split(';')[0]!.trim();
  if (/\.pdf$/i.test(filename) || type === 'application/pdf') return 'pdf';
  if (/\.docx$/i.test(filename) || type === DOCX_TYPE) return 'docx';
  if (/\.x?html?$/i.test(filename) || type === 'text/html' || type === 'application/xhtml+xml') return 'html';
  if (TEXT_EXTENSIONS.test(filename) || type.startsWith('text/') || type === 'application/json') return 'text';
  return undefined;
}

/**
 * A knowledge base's text tidied: line ends made `\n`, runs of spaces made one, at most one blank
 * line between paragraphs, no control characters. Refused when over MAX_KNOWLEDGE_TEXT_BYTES.
 */
export function tidyKnowledgeText(text: string): string {
  const tidy = text
    .replace(/^\uFEFF/, '')
    .replace(/\r\n?/g, '\n')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g, ' ')
    .replace(/[ \t\u00A0]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  if (Buffer.byteLength(tidy) > MAX_KNOWLEDGE_TEXT_BYTES)
    throw new UnreadableDocument(`holds more than ${MAX_KNOWLEDGE_TEXT_BYTES / 1024 / 1024} MB of text`);
  return tidy;
}

/**
 * The text of an uploaded document. Text files are read as UTF-8 here; PDF and Word files in a
 * worker thread with a time and memory limit, so a large or hostile file never holds the event loop
 * (HTML too: a page's markup made text).
 */
export async function extractDocumentText(kind: DocumentKind, data: Buffer): Promise<string> {
  if (data.length > MAX_KNOWLEDGE_FILE_BYTES)
    throw new UnreadableDocument(`is larger than ${MAX_KNOWLEDGE_FILE_BYTES / 1024 / 1024} MB`);
  let text: string;
  if (kind === 'text') {
    if (data.includes(0)) throw new UnreadableDocument('is not text (it holds binary data)');
    text = data.toString('utf8');
  } else {
    text = await inWorker(kind, data);
  }
  const tidy = tidyKnowledgeText(text);
  if (tidy === '') throw new UnreadableDocument('holds no text');
  return tidy;
}

/** The worker's entry, loaded through tsx as the server's own modules are. */
function workerSource(): string {
  const loader = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./extract-worker.ts', import.meta.url).href;
  return `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`;
}

/** PDF and Word files read at once; more wait their turn, so uploads never take all the memory. */
const MAX_READERS = 2;
let readers = 0;
const waiting: (() => void)[] = [];

async function inWorker(kind: Exclude<DocumentKind, 'text'>, data: Buffer): Promise<string> {
  // A reader that finishes hands its place to the next one waiting.
  if (readers < MAX_READERS) readers++;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await readInWorker(kind, data);
  } finally {
    const next = waiting.shift();
    if (next) next();
    else readers--;
  }
}

function readInWorker(kind: Exclude<DocumentKind, 'text'>, data: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerSource(), {
      eval: true,
      workerData: { kind, data: new Uint8Array(data) },
      resourceLimits: { maxOldGenerationSizeMb: EXTRACT_HEAP_MB },
      stdout: true,
      stderr: true,
    });
    const label = { pdf: 'PDF', docx: 'Word document', html: 'web page' }[kind];
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new UnreadableDocument(`could not be read as a ${label} within ${EXTRACT_TIMEOUT_MS / 1000} s`));
    }, EXTRACT_TIMEOUT_MS);
    const settle = (): void => clearTimeout(timer);
    worker.once('message', (message: { text?: string; error?: string }) => {
      settle();
      void worker.terminate();
      if (typeof message.text === 'string') resolve(message.text);
      else reject(new UnreadableDocument(`could not be read as a ${label}`));
    });
    worker.once('error', () => {
      settle();
      reject(new UnreadableDocument(`could not be read as a ${label}`));
    });
    worker.once('exit', () => {
      settle();
      reject(new UnreadableDocument(`could not be read as a ${label}`));
    });
  });
}
