import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { docxDocument, pdfDocument } from '../../src/testing/documents.js';

const FAQ =
  'We are open Monday to Friday from 8 am to 6 pm, and on Saturday from 10 am to 2 pm.\n\n' +
  'Parking is free in the lot behind the building.';

/** A multipart/form-data body as a browser or an HTTP client sends it. */
async function form(
  fields: Record<string, string>,
  file?: { name: string; type: string; data: Buffer },
): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const data = new FormData();
  for (const [key, value] of Object.entries(fields)) data.append(key, value);
  if (file) data.append('file', new Blob([new Uint8Array(file.data)], { type: file.type }), file.name);
  const request = new Request('http://localhost/', { method: 'POST', body: data });
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')! },
  };
}

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`knowledge bases (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
    });
    after(() => t.close());

    async function upload(url: string, body: { payload: Buffer; headers: Record<string, string> }, key = t.key) {
      const response = await t.app.inject({
        method: 'POST',
        url,
        payload: body.payload,
        headers: { ...body.headers, authorization: key },
      });
      return { status: response.statusCode, body: JSON.parse(response.body) as Record<string, unknown> };
    }

    it('creates one from text, gets it with and without its text, lists, renames and deletes it', async () => {
      const created = await t.request('POST', '/v1/knowledge/learn', {
        type: 'text',
        name: 'Clinic FAQ',
        description: 'Opening hours and parking',
        text: FAQ,
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const data = created.body.data as Record<string, unknown>;
      assert.equal(created.body.errors, null);
      assert.equal(data.name, 'Clinic FAQ');
      assert.equal(data.status, 'COMPLETED');
      assert.equal(data.type, 'TEXT');
      assert.equal(data.text, undefined);
      const id = String(data.id);

      const got = await t.request('GET', `/v1/knowledge/${id}?include_text=true`);
      assert.equal((got.body.data as Record<string, unknown>).text, FAQ);
      const plain = await t.request('GET', `/v1/knowledge/${id}`);
      assert.equal((plain.body.data as Record<string, unknown>).text, undefined);

      const list = await t.request('GET', '/v1/knowledge?page=1&limit=10');
      const listed = list.body.data as { kbs: { id: string }[]; total: number };
      assert.ok(listed.kbs.some((kb) => kb.id === id));
      assert.equal(listed.total, listed.kbs.length);

      const renamed = await t.request('PUT', `/v1/knowledge/${id}`, { name: 'Front desk FAQ', description: null });
      assert.equal(renamed.status, 200);
      assert.equal((renamed.body.data as Record<string, unknown>).name, 'Front desk FAQ');
      assert.equal((renamed.body.data as Record<string, unknown>).description, null);

      const deleted = await t.request('DELETE', `/v1/knowledge/${id}`);
      assert.equal(deleted.status, 200);
      assert.equal((await t.request('GET', `/v1/knowledge/${id}`)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/knowledge/${id}`)).status, 404);
    });

    it('pages the list and counts every knowledge base', async () => {
      const other = await createTestApp({ postgres: false });
      try {
        for (let i = 0; i < 5; i++)
          await other.request('POST', '/v1/knowledge/learn', { name: `KB ${i}`, text: `Fact number ${i}.` });
        const all = (await other.request('GET', '/v1/knowledge')).body.data as { kbs: { name: string }[] };
        assert.equal(all.kbs.length, 5);
        const page2 = await other.request('GET', '/v1/knowledge?page=2&limit=2');
        const data = page2.body.data as { kbs: { name: string }[]; total: number };
        assert.deepEqual(data.kbs, all.kbs.slice(2, 4));
        assert.equal(data.total, 5);
        assert.equal((await other.request('GET', '/v1/knowledge?limit=101')).status, 400);
      } finally {
        await other.close();
      }
    });

    it('reads PDF, Word and text files uploaded as multipart/form-data', async () => {
      const files = [
        { name: 'faq.pdf', type: 'application/pdf', data: pdfDocument(['Saturday hours: 10 am to 2 pm.']) },
        {
          name: 'faq.docx',
          type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
          data: await docxDocument(['Saturday hours: 10 am to 2 pm.']),
        },
        { name: 'faq.md', type: 'text/markdown', data: Buffer.from('# FAQ\n\nSaturday hours: 10 am to 2 pm.\n') },
      ];
      for (const file of files) {
        const r = await upload('/v1/knowledge/learn', await form({ type: 'file', description: 'Hours' }, file));
        assert.equal(r.status, 200, `${file.name}: ${JSON.stringify(r.body)}`);
        const data = r.body.data as Record<string, unknown>;
        assert.equal(data.type, 'FILE');
        assert.equal(data.name, file.name, 'the name defaults to the file name');
        assert.deepEqual(data.file, { file_name: file.name, file_size: file.data.length, file_type: file.type });
        const got = await t.request('GET', `/v1/knowledge/${String(data.id)}?include_text=true`);
        assert.match(String((got.body.data as Record<string, unknown>).text), /Saturday hours: 10 am to 2 pm\./);
      }
    });

    it('refuses files it cannot read with a 400 naming the file', async () => {
      const cases = [
        { name: 'logo.png', type: 'image/png', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]) },
        { name: 'broken.pdf', type: 'application/pdf', data: Buffer.from('%PDF-1.4 not really') },
        { name: 'broken.docx', type: 'application/octet-stream', data: Buffer.from('PK not a zip') },
        { name: 'empty.txt', type: 'text/plain', data: Buffer.from('   \n  ') },
        { name: 'binary.txt', type: 'text/plain', data: Buffer.from([104, 105, 0, 1]) },
      ];
      for (const file of cases) {
        const r = await upload('/v1/knowledge/learn', await form({ name: 'x' }, file));
        assert.equal(r.status, 400, file.name);
        assert.ok(
          (r.body.errors as string[]).some((e) => e.startsWith(`file "${file.name}"`)),
          JSON.stringify(r.body),
        );
      }
      const huge = await upload(
        '/v1/knowledge/learn',
        await form({}, { name: 'huge.txt', type: 'text/plain', data: Buffer.alloc(16 * 1024 * 1024 + 1, 97) }),
      );
      assert.equal(huge.status, 413);
      assert.match(String(huge.body.message), /^file is larger than 16 MB/);
      // Other routes still take JSON only.
      const elsewhere = await upload('/v1/tools', await form({ name: 'x' }));
      assert.equal(elsewhere.status, 415);
      const none = await upload('/v1/knowledge/learn', await form({ name: 'no file' }));
      assert.equal(none.status, 400);
      assert.match((none.body.errors as string[])[0]!, /^file is required/);
    });

    it('checks a text body field by field', async () => {
      const cases: [unknown, RegExp][] = [
        [{ text: FAQ }, /name/],
        [{ name: 'No text' }, /text/],
        [{ name: 'Blank', text: '  \n ' }, /^text must hold some words/],
        [{ name: 'File', type: 'file', text: FAQ }, /multipart/],
        [{ name: 'Typed', text: 42 }, /text/],
      ];
      for (const [body, error] of cases) {
        const r = await t.request('POST', '/v1/knowledge/learn', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.ok(
          (r.body.errors as string[]).some((e) => error.test(e)),
          JSON.stringify(r.body),
        );
      }
    });

    it('serves the older routes: /knowledgebases and /vectors, with vector_id at the top and under data', async () => {
      for (const base of ['/v1/knowledgebases', '/v1/vectors']) {
        const created = await t.request('POST', base, { name: 'Older', description: 'Hours', text: FAQ });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        const id = String(created.body.vector_id);
        assert.match(id, /^KB-/);
        assert.equal((created.body.data as Record<string, unknown>).vector_id, id);

        const withText = await t.request('GET', `${base}/${id}`, undefined, { headers: { 'include-text': 'true' } });
        assert.equal((withText.body.data as Record<string, unknown>).text, FAQ);
        assert.equal(withText.body.name, 'Older');

        const updated = await t.request('PATCH', `${base}/${id}`, { name: 'Older', text: 'Closed on Sundays.' });
        assert.equal(updated.status, 200);
        const after = await t.request('GET', `${base}/${id}?include_text=true`);
        assert.equal(after.body.text, 'Closed on Sundays.');

        const listed = await t.request('GET', base);
        assert.ok((listed.body.vectors as { vector_id: string }[]).some((v) => v.vector_id === id));
        // And under data, where clients of the hosted API read the list.
        assert.deepEqual((listed.body.data as Record<string, unknown>).vectors, listed.body.vectors);
        assert.equal(listed.body.errors, null);
        // The same knowledge base under the newer routes.
        assert.equal((await t.request('GET', `/v1/knowledge/${id}`)).status, 200);

        const gone = await t.request('DELETE', `${base}/${id}`);
        assert.deepEqual(gone.body, { status: 'success', message: 'Knowledge base deleted' });
        assert.equal((await t.request('GET', `${base}/${id}`)).status, 404);
      }
      const file = await upload(
        '/v1/knowledgebases/upload',
        await form(
          { name: 'Uploaded', description: 'Hours' },
          { name: 'faq.txt', type: 'text/plain', data: Buffer.from(FAQ) },
        ),
      );
      assert.equal(file.status, 200, JSON.stringify(file.body));
      assert.match(String((file.body.data as Record<string, unknown>).vector_id), /^KB-/);
    });

    it('reads a file sent under a name with no extension as application/octet-stream by what it holds', async () => {
      // Go's multipart.CreateFormFile (a Terraform provider of the hosted API uses it) names no type.
      const generic = (data: Buffer) => ({ name: 'knowledge_base_file', type: 'application/octet-stream', data });
      const files = [
        generic(Buffer.from(FAQ)),
        generic(pdfDocument(['Saturday hours: 10 am to 2 pm.'])),
        generic(await docxDocument(['Saturday hours: 10 am to 2 pm.'])),
      ];
      for (const file of files) {
        const r = await upload(
          '/v1/knowledgebases/upload',
          await form({ name: 'Generic', description: 'Hours' }, file),
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const id = String((r.body.data as Record<string, unknown>).vector_id);
        const got = await t.request('GET', `/v1/knowledgebases/${id}`, undefined, {
          headers: { 'include-text': 'true' },
        });
        assert.match(String((got.body.data as Record<string, unknown>).text), /Saturday/);
      }
      const image = generic(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
      const refused = await upload('/v1/knowledgebases/upload', await form({ name: 'Image' }, image));
      assert.equal(refused.status, 400);
      assert.match((refused.body.errors as string[])[0]!, /^file "knowledge_base_file" is not a kind Openline reads/);
    });

    it('keeps each account to its own knowledge bases', async () => {
      const mine = await t.request('POST', '/v1/knowledge/learn', { name: 'Private', text: FAQ });
      const id = String((mine.body.data as Record<string, unknown>).id);
      const as = { as: t.otherKey };
      assert.equal((await t.request('GET', `/v1/knowledge/${id}`, undefined, as)).status, 404);
      assert.equal((await t.request('PUT', `/v1/knowledge/${id}`, { name: 'Taken' }, as)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/knowledgebases/${id}`, undefined, as)).status, 404);
      const theirs = await t.request('GET', '/v1/knowledge', undefined, as);
      assert.ok(!(theirs.body.data as { kbs: { id: string }[] }).kbs.some((kb) => kb.id === id));
      // Nor can another account's call use it.
      const call = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Hi', tools: [id] }, as);
      assert.equal(call.status, 400);
      assert.match((call.body.errors as string[])[0]!, /^tools\[0\] "KB-.*" is not a tool or knowledge base/);
      assert.equal((await t.request('GET', `/v1/knowledge/${id}`)).status, 200);
    });

    it('takes knowledge base ids in the tools of calls and agents', async () => {
      const kb = await t.request('POST', '/v1/knowledge/learn', { name: 'Hours', text: FAQ });
      const id = String((kb.body.data as Record<string, unknown>).id);
      const call = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Hi', tools: [id] });
      assert.equal(call.status, 200, JSON.stringify(call.body));
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Answer questions', tools: [id] });
      assert.equal(agent.status, 200, JSON.stringify(agent.body));
    });
  });

describe('knowledge bases read from web pages (type "web")', () => {
  let t: TestApp;
  let server: http.Server;
  let base = '';
  before(async () => {
    server = http.createServer((req, res) => {
      const pages: Record<string, [number, string, string]> = {
        '/hours': [
          200,
          'text/html; charset=utf-8',
          '<html><head><title>Hours</title><style>p{color:red}</style><script>var x = "hidden";</script></head>' +
            '<body><nav><a href="/">Home</a></nav><h1>Opening hours</h1><p>We open at <b>8 am</b> on weekdays.</p>' +
            '<p>See <a href="/parking">parking</a>.</p><img src="x.png" alt="logo"></body></html>',
        ],
        '/parking.txt': [200, 'text/plain', 'Parking is free after 6 pm.'],
        '/menu.pdf': [200, 'application/pdf', '%PDF-1.4'],
        '/gone': [404, 'text/html', 'Not here'],
      };
      const [status, type, body] = pages[req.url ?? ''] ?? [404, 'text/plain', 'no'];
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await createTestApp();
  });
  after(async () => {
    await t.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it("reads each page's words (not its scripts, styles, navigation or link addresses) into one knowledge base", async () => {
    const r = await t.request('POST', '/v1/knowledge/learn', {
      type: 'web',
      name: 'Clinic site',
      description: 'Hours and parking',
      urls: [`${base}/hours`, `${base}/parking.txt`],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const kb = r.body.data as Record<string, unknown>;
    assert.equal(kb.type, 'WEB_SCRAPE');
    assert.equal(kb.status, 'COMPLETED');
    assert.equal(kb.source_urls, `${base}/hours,${base}/parking.txt`);
    assert.equal(kb.base_url, base);
    const text = String(
      ((await t.request('GET', `/v1/knowledge/${String(kb.id)}?include_text=true`)).body.data as { text: string }).text,
    );
    assert.match(text, /Source: http:\/\/127\.0\.0\.1:\d+\/hours\nOpening hours\n\nWe open at 8 am on weekdays\./);
    assert.match(text, /See parking\./);
    assert.match(text, /Parking is free after 6 pm\./);
    for (const hidden of ['hidden', 'color:red', 'Home', 'x.png', '/parking]', 'logo'])
      assert.ok(!text.includes(hidden), `${hidden} left out: ${text}`);
  });

  it('names each page that gave nothing, stores nothing, and needs urls', async () => {
    const r = await t.request('POST', '/v1/knowledge/learn', {
      type: 'web',
      name: 'Broken',
      urls: [`${base}/hours`, `${base}/gone`, `${base}/menu.pdf`, 'http://169.254.169.254/latest'],
    });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    const errors = r.body.errors as string[];
    assert.equal(errors.length, 3, JSON.stringify(errors));
    assert.match(errors[0]!, /^urls\[1\] answered HTTP 404/);
    assert.match(errors[1]!, /^urls\[2\] is application\/pdf, not a web page/);
    assert.match(errors[2]!, /^urls\[3\] /);
    assert.equal(((await t.request('GET', '/v1/knowledge')).body.data as { total: number }).total, 1);
    const none = await t.request('POST', '/v1/knowledge/learn', { type: 'web', name: 'No pages' });
    assert.deepEqual(none.body.errors, ['urls is required for type "web": the pages to read']);
    const noText = await t.request('POST', '/v1/knowledge/learn', { name: 'No text' });
    assert.deepEqual(noText.body.errors, ['text is required: the text the agent searches']);
    const notHttp = await t.request('POST', '/v1/knowledge/learn', {
      type: 'web',
      name: 'x',
      urls: ['ftp://a.example'],
    });
    assert.equal(notHttp.status, 400);
    assert.match(JSON.stringify(notHttp.body.errors), /urls\[0\]/);
  });
});
