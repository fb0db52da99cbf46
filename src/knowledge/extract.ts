import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../errors.js';

/** The documents a knowledge base is read from. */
export type DocumentKind = 'text' | 'pdf' | 'docx' | 'html';

/** The most text one knowledge base holds, as the hosted API allows (1 MB). */
export const MAX_KNOWLEDGE_TEXT_BYTES = 1024 * 1024;
/** The largest file a knowledge base is read from. */
export const MAX_KNOWLEDGE_FILE_BYTES = 16 * 1024 * 1024;
/** How long reading one PDF, Word or HTML file may take, and the memory its reader may use. */
const EXTRACT_TIMEOUT_MS = 30_000;
const EXTRACT_HEAP_MB = 256;
/**
 * The most characters a reader sends back, or a text file holds: text beyond it is taken for more
 * than MAX_KNOWLEDGE_TEXT_BYTES without tidying it (tidying only folds runs of spaces and blank
 * lines), and a file that unpacks to hundreds of megabytes of text ("a zip bomb") is refused where
 * it was read.
 */
export const MAX_EXTRACTED_CHARS = 8 * MAX_KNOWLEDGE_TEXT_BYTES;

const TEXT_EXTENSIONS = /\.(txt|text|md|markdown|csv|tsv|json|jsonl|log|ya?ml|xml)$/i;
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** Why a file gave no text: the message names what was wrong with it. */
export class UnreadableDocument extends Error {
  override readonly name = 'UnreadableDocument';
}

/**
 * What a file is, by its name first, its content type second and, when neither tells (a name
 * without a known extension sent as application/octet-stream, as Go's multipart writer sends every
 * file), by its first bytes; undefined: not a kind Openline reads.
 */
export function documentKind(filename: string, mimetype: string, data: Buffer): DocumentKind | undefined {
  const type = mimetype.toLowerCase().split(';')[0]!.trim();
  if (/\.pdf$/i.test(filename) || type === 'application/pdf') return 'pdf';
  if (/\.docx$/i.test(filename) || type === DOCX_TYPE) return 'docx';
  if (/\.x?html?$/i.test(filename) || type === 'text/html' || type === 'application/xhtml+xml') return 'html';
  if (TEXT_EXTENSIONS.test(filename) || type.startsWith('text/') || type === 'application/json') return 'text';
  if (type === '' || type === 'application/octet-stream' || type === 'binary/octet-stream') return sniffedKind(data);
  return undefined;
}

/** The first bytes a text file is told by: valid UTF-8 without control characters but tab and line ends. */
const SNIFF_BYTES = 4096;

function sniffedKind(data: Buffer): DocumentKind | undefined {
  const head = data.subarray(0, SNIFF_BYTES);
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'pdf';
  // A Word file is a zip archive; one that is not Word is refused when it is read.
  if (head.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) return 'docx';
  if (head.some((byte) => (byte < 0x20 && (byte < 0x09 || byte > 0x0d)) || byte === 0x7f)) return undefined;
  try {
    // stream: a character cut at the end of the sample is not an error.
    const text = new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
    return /^\s*(<!doctype html|<html)/i.test(text) ? 'html' : 'text';
  } catch {
    return undefined;
  }
}

const tooMuchText = () =>
  new UnreadableDocument(`holds more than ${MAX_KNOWLEDGE_TEXT_BYTES / 1024 / 1024} MB of text`);

/** Spaces, tabs, no-break spaces, line ends and control characters: what tidying folds. */
function isBlank(code: number): boolean {
  return code <= 0x20 || code === 0x7f || code === 0xa0;
}

/**
 * A knowledge base's text tidied: line ends made `\n`, runs of spaces made one, at most one blank
 * line between paragraphs, no control characters. Refused when over MAX_KNOWLEDGE_TEXT_BYTES.
 * One pass that copies only where the text changes: a regular expression's replace per space
 * held the server for seconds on a few megabytes of words, line ends or blank runs.
 */
export function tidyKnowledgeText(text: string): string {
  const parts: string[] = [];
  const end = text.length;
  let copied = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let words = false;
  let i = copied;
  while (i < end) {
    if (!isBlank(text.charCodeAt(i))) {
      words = true;
      i++;
      continue;
    }
    // A run of spaces and line ends (\r\n is one, so is \r alone): one space, one line end or
    // one blank line; nothing at either end of the text.
    const run = i;
    let lineEnds = 0;
    for (let code = text.charCodeAt(i); i < end && isBlank(code); code = text.charCodeAt(++i)) {
      if (code === 0x0d && text.charCodeAt(i + 1) === 0x0a) i++;
      if (code === 0x0a || code === 0x0d) lineEnds++;
    }
    const tidy = !words || i === end ? '' : lineEnds > 1 ? '\n\n' : lineEnds === 1 ? '\n' : ' ';
    if (text.slice(run, i) === tidy) continue;
    parts.push(text.slice(copied, run), tidy);
    copied = i;
  }
  parts.push(text.slice(copied));
  // Other white space (U+3000, U+2028 ...) stays inside, not at the ends.
  const tidy = parts.join('').trim();
  if (Buffer.byteLength(tidy) > MAX_KNOWLEDGE_TEXT_BYTES) throw tooMuchText();
  return tidy;
}

/**
 * The text of an uploaded document. Text files are read as UTF-8 here; PDF and Word files (HTML
 * too: a page's markup made text) in a child process with a time and memory limit, so a large or
 * hostile file never holds the event loop, and one that exhausts its reader's memory ends that
 * process, never the server and its calls.
 */
export async function extractDocumentText(kind: DocumentKind, data: Buffer): Promise<string> {
  if (data.length > MAX_KNOWLEDGE_FILE_BYTES)
    throw new UnreadableDocument(`is larger than ${MAX_KNOWLEDGE_FILE_BYTES / 1024 / 1024} MB`);
  let text: string;
  if (kind === 'text') {
    if (data.includes(0)) throw new UnreadableDocument('is not text (it holds binary data)');
    text = data.toString('utf8');
    if (text.length > MAX_EXTRACTED_CHARS) throw tooMuchText();
  } else {
    text = await inReader(kind, data);
  }
  const tidy = tidyKnowledgeText(text);
  if (tidy === '') throw new UnreadableDocument('holds no text');
  return tidy;
}

/** PDF and Word files read at once; more wait their turn, so uploads never take all the memory. */
const MAX_READERS = 2;
/**
 * Documents that may wait for a reader. Each waits with its file in memory (up to 16 MB) and
 * reading one may take 30 s: beyond this, a document is refused at once (429) rather than keeping
 * its file in memory for minutes, and every account's uploads behind it.
 */
export const MAX_WAITING_DOCUMENTS = 8;
let readers = 0;
const waiting: (() => void)[] = [];

/** The readers are busy and MAX_WAITING_DOCUMENTS wait: answered 429, to be sent again shortly. */
export class ReadersBusy extends ApiError {
  constructor() {
    super('RATE_LIMITED', 'Too many other documents are being read: try again in a minute');
    this.name = 'ReadersBusy';
  }
}

async function inReader(kind: Exclude<DocumentKind, 'text'>, data: Buffer): Promise<string> {
  // A reader that finishes hands its place to the next one waiting.
  if (readers < MAX_READERS) readers++;
  else if (waiting.length >= MAX_WAITING_DOCUMENTS) throw new ReadersBusy();
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await readInChild(kind, data);
  } finally {
    const next = waiting.shift();
    if (next) next();
    else readers--;
  }
}

/** What the reader (src/knowledge/extract-worker.ts) answers. */
export type ReaderAnswer = { text: string } | { error: 'too-much-text' | 'unreadable' };

function readInChild(kind: Exclude<DocumentKind, 'text'>, data: Buffer): Promise<string> {
  const label = { pdf: 'PDF', docx: 'Word document', html: 'web page' }[kind];
  const unreadable = () => new UnreadableDocument(`could not be read as a ${label}`);
  return new Promise((resolve, reject) => {
    // The server's own modules run through tsx; its loader, given as a file URL, serves the reader too.
    const child = spawn(
      process.execPath,
      [
        `--max-old-space-size=${EXTRACT_HEAP_MB}`,
        '--import',
        import.meta.resolve('tsx'),
        fileURLToPath(new URL('./extract-worker.ts', import.meta.url)),
      ],
      { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'advanced' },
    );
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      outcome();
    };
    const timer = setTimeout(
      () =>
        settle(() =>
          reject(new UnreadableDocument(`could not be read as a ${label} within ${EXTRACT_TIMEOUT_MS / 1000} s`)),
        ),
      EXTRACT_TIMEOUT_MS,
    );
    child.once('message', (answer: ReaderAnswer) =>
      settle(() => {
        if ('text' in answer && typeof answer.text === 'string') resolve(answer.text);
        else if ('error' in answer && answer.error === 'too-much-text') reject(tooMuchText());
        else reject(unreadable());
      }),
    );
    child.once('error', () => settle(() => reject(unreadable())));
    child.once('exit', () => settle(() => reject(unreadable())));
    child.send({ kind, data: new Uint8Array(data) }, (error) => {
      if (error) settle(() => reject(unreadable()));
    });
  });
}
