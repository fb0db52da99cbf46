/**
 * Runs in a worker thread (src/knowledge/extract.ts): reads the text of one PDF or Word document,
 * work that can take seconds on a large file and must not hold the event loop calls share.
 */
import { parentPort, workerData } from 'node:worker_threads';
import mammoth from 'mammoth';
import { extractText, getDocumentProxy } from 'unpdf';

interface Job {
  kind: 'pdf' | 'docx';
  data: Uint8Array;
}

async function read({ kind, data }: Job): Promise<string> {
  if (kind === 'docx') return (await mammoth.extractRawText({ buffer: Buffer.from(data) })).value;
  const pdf = await getDocumentProxy(data);
  const pages = await extractText(pdf, { mergePages: false });
  return pages.text.join('\n\n');
}

read(workerData as Job).then(
  (text) => parentPort?.postMessage({ text }),
  (error: unknown) => parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) }),
);
