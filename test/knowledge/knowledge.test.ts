import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KnowledgeIndex, passagesOf } from '../../src/knowledge/search.js';
import { KnowledgeLibrary } from '../../src/knowledge/library.js';
import {
  documentKind,
  extractDocumentText,
  MAX_EXTRACTED_CHARS,
  MAX_KNOWLEDGE_TEXT_BYTES,
  MAX_WAITING_DOCUMENTS,
  ReadersBusy,
  tidyKnowledgeText,
  UnreadableDocument,
} from '../../src/knowledge/extract.js';
import { docxDocument, pdfDocument } from '../../src/testing/documents.js';

const FAQ = [
  'We are open Monday to Friday from 8 am to 6 pm.',
  'Parking is free in the lot behind the building.',
  'New patients should bring a photo ID and their insurance card. Appointments can be cancelled up to 24 hours ahead without a fee.',
  'We accept Delta Dental and Aetna insurance.',
].join('\n\n');

describe('knowledge base search', () => {
  const index = new KnowledgeIndex([{ id: 'KB-1', name: 'Clinic FAQ', text: FAQ }]);

  it('finds the passage that answers a question, by its topic words and their stems', () => {
    const cases: [string, RegExp][] = [
      ['What time do you open?', /open Monday to Friday/],
      ['Where can I park?', /Parking is free/],
      ['Do you take Aetna?', /Aetna insurance/],
      ['Can I cancel my appointment?', /cancelled up to 24 hours/],
    ];
    for (const [question, answer] of cases) {
      const [best] = index.search(question);
      assert.ok(best, question);
      assert.match(best.text, answer, question);
      assert.equal(best.source, 'Clinic FAQ');
    }
  });

  it('finds nothing for words that carry no topic', () => {
    assert.deepEqual(index.search('hello, how are you?'), []);
    assert.deepEqual(index.search(''), []);
  });

  it('cuts paragraphs into passages of whole sentences', () => {
    const long = Array.from({ length: 30 }, (_, i) => `Sentence number ${i} says something.`).join(' ');
    const passages = passagesOf(`Short one.\n\n${long}`);
    assert.equal(passages[0], 'Short one.');
    assert.ok(passages.length > 2);
    for (const p of passages) assert.ok(p.length <= 600 && /\.$/.test(p), p);
    assert.equal(passages.slice(1).join(' '), long);
  });

  it('builds each knowledge base once per version of its text, however many calls name it', async () => {
    const versions = new Map([['KB-1', { id: 'KB-1', name: 'FAQ', text: FAQ, updated_at: '1' }]]);
    /** Knowledge bases whose text was read. */
    let reads = 0;
    const library = new KnowledgeLibrary({
      versions: async (_account, ids) => ids.flatMap((id) => (versions.has(id) ? [versions.get(id)!] : [])),
      getMany: async (_account, ids) => {
        reads += ids.length;
        return ids.flatMap((id) => (versions.has(id) ? [versions.get(id)!] : []));
      },
    });
    assert.equal(await library.lookupFor('acct', []), undefined);
    assert.equal(await library.lookupFor('acct', ['KB-missing']), undefined);
    const first = await library.lookupFor('acct', ['KB-1']);
    assert.match(first!('parking')[0]!.text, /free/);
    versions.set('KB-1', { id: 'KB-1', name: 'FAQ', text: 'Parking costs 5 dollars.', updated_at: '2' });
    const second = await library.lookupFor('acct', ['KB-1']);
    assert.match(second!('parking')[0]!.text, /5 dollars/);
    // Another call at the same version reads no text: its index is built already.
    assert.match((await library.lookupFor('acct', ['KB-1']))!('parking')[0]!.text, /5 dollars/);
    assert.equal(reads, 2, 'each version of the text read once');
  });
});

describe('knowledge base documents', () => {
  it('knows a file by its name first, its content type second and its first bytes last', () => {
    const none = Buffer.alloc(0);
    assert.equal(documentKind('faq.PDF', 'application/octet-stream', none), 'pdf');
    assert.equal(documentKind('blob', 'application/pdf', none), 'pdf');
    assert.equal(documentKind('notes.docx', '', none), 'docx');
    assert.equal(documentKind('prices.csv', 'application/octet-stream', none), 'text');
    assert.equal(documentKind('blob', 'text/plain; charset=utf-8', none), 'text');
    assert.equal(documentKind('photo.jpg', 'image/jpeg', none), undefined);
    assert.equal(documentKind('old.doc', 'application/msword', none), undefined);
    // Neither the name nor the type tells: the content does.
    const generic = (data: string | number[]) =>
      documentKind('file', 'application/octet-stream', Buffer.from(data as string));
    assert.equal(generic('%PDF-1.7\n'), 'pdf');
    assert.equal(generic([0x50, 0x4b, 0x03, 0x04, 20, 0]), 'docx');
    assert.equal(generic('  <!DOCTYPE html><html><body>Hours</body></html>'), 'html');
    assert.equal(generic('Hours: 9 to 5.\r\n\tClosed on Sundays. Café, 日本'), 'text');
    assert.equal(generic([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), undefined);
    assert.equal(generic([0x68, 0x69, 0xc3]), 'text', 'a character cut at the end of the sample');
    assert.equal(generic([0x68, 0xff, 0x69]), undefined, 'not UTF-8');
    assert.equal(documentKind('photo', 'image/png', Buffer.from('text')), undefined, 'a type that tells is believed');
  });

  it('tidies text: line ends, spaces, blank lines, control characters', () => {
    assert.equal(tidyKnowledgeText('\uFEFF  One\r\n\r\n\r\n\r\nTwo\tthree\u0007 \n'), 'One\n\nTwo three');
    assert.throws(() => tidyKnowledgeText('x'.repeat(MAX_KNOWLEDGE_TEXT_BYTES + 1)), UnreadableDocument);
    for (const [raw, tidy] of [
      ['', ''],
      [' \n \n \n ', ''],
      ['a \n \n b', 'a\n\nb'],
      ['a\r\rb\r\n\r\nc', 'a\n\nb\n\nc'],
      ['a\u00A0\t \u0001b', 'a b'],
      ['a\n\u000B\nb', 'a\n\nb'],
      ['\u3000 a \u3000', 'a'],
      ['a\u3000\nb', 'a\u3000\nb'],
      ['\uFEFF\uFEFFa', 'a'],
      ['x\u2028 y', 'x\u2028 y'],
    ] as const)
      assert.equal(tidyKnowledgeText(raw), tidy, JSON.stringify(raw));
  });

  it('refuses a text file with more characters than a reader sends back, before tidying it', async () => {
    // Spaces and blank lines that would tidy to a few words: a file this long is refused as a PDF's
    // text would be, instead of holding the server while it is tidied.
    const padded = Buffer.from(`${' \r\n'.repeat(MAX_EXTRACTED_CHARS / 3 + 1)}words`);
    await assert.rejects(extractDocumentText('text', padded), /holds more than 1 MB of text/);
    const fits = Buffer.from(`${' \r\n'.repeat(MAX_EXTRACTED_CHARS / 3 - 10)}words`);
    assert.equal(await extractDocumentText('text', fits), 'words');
  });

  it('refuses a small Word file that unpacks to more text than a knowledge base holds, or more than its reader can hold, and lives on', async () => {
    // Half a megabyte deflated; 40 MB of text unpacked.
    const wordy = await docxDocument(['word '.repeat(8_000_000)], 'DEFLATE');
    assert.ok(wordy.length < 1024 * 1024, `${wordy.length} bytes`);
    await assert.rejects(extractDocumentText('docx', wordy), /holds more than 1 MB of text/);
    // Millions of paragraphs: the reader runs out of memory in its own process.
    const bomb = await docxDocument(Array<string>(4_000_000).fill('AAAA'), 'DEFLATE');
    await assert.rejects(extractDocumentText('docx', bomb), /could not be read as a Word document/);
    // And the next document is read as ever.
    assert.equal(await extractDocumentText('docx', await docxDocument(['Still here.'])), 'Still here.');
  });

  it('reads PDFs in child processes, a few at a time, each in full', async () => {
    const files = Array.from({ length: 5 }, (_, i) => pdfDocument([`Document ${i} says hello.`]));
    const texts = await Promise.all(files.map((file) => extractDocumentText('pdf', file)));
    assert.deepEqual(
      texts,
      files.map((_, i) => `Document ${i} says hello.`),
    );
  });

  it('refuses a document at once when the readers are busy and MAX_WAITING_DOCUMENTS wait, and reads the next one after', async () => {
    // The readers' places and the waiting line are taken as the calls are made, before any reader answers.
    const files = Array.from({ length: 2 + MAX_WAITING_DOCUMENTS + 1 }, (_, i) => pdfDocument([`Document ${i}.`]));
    const reads = files.map((file) => extractDocumentText('pdf', file));
    const outcomes = await Promise.allSettled(reads);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    assert.equal(refused.length, 1, JSON.stringify(outcomes.map((o) => o.status)));
    assert.ok(refused[0]!.reason instanceof ReadersBusy);
    assert.match(String(refused[0]!.reason.message), /other documents are being read: try again/);
    assert.equal(outcomes.at(-1)!.status, 'rejected', 'the last one is the one refused');
    assert.equal(await extractDocumentText('pdf', pdfDocument(['After.'])), 'After.');
  });
});
