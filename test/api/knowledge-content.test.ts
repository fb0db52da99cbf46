import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { FakeOpenAi, fakeLlmConfig } from '../../src/testing/fake-openai.js';

type Json = Record<string, unknown>;

const FAQ =
  'We are open Monday to Friday from 8 am to 6 pm, and on Saturday from 10 am to 2 pm.\n\n' +
  'Parking is free in the lot behind the building.';

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`knowledge bases: content, versions and questions (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
    });
    after(() => t.close());

    const create = async (text = FAQ) => {
      const r = await t.request('POST', '/v1/knowledge/learn', { name: 'Clinic FAQ', text });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return String((r.body.data as Json).id);
    };

    it('replaces the text, keeps every text as a version, and restores one', async () => {
      const id = await create();
      const content = await t.request('GET', `/v1/knowledge/${id}/content`);
      assert.equal(content.status, 200);
      assert.deepEqual(content.body.data, { id, type: 'TEXT', text: FAQ });

      const replaced = await t.request('POST', `/v1/knowledge/${id}/content`, {
        text: 'We are open every day from 9 am to 9 pm.',
      });
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
      assert.equal((replaced.body.data as Json).id, id);
      const now = await t.request('GET', `/v1/knowledge/${id}/content`);
      assert.equal((now.body.data as Json).text, 'We are open every day from 9 am to 9 pm.');

      // The older API's text update makes a version too.
      await t.request('PATCH', `/v1/knowledgebases/${id}`, { text: 'Closed for the holidays.' });
      const versions = await t.request('GET', `/v1/knowledge/${id}/versions`);
      assert.equal(versions.status, 200);
      const list = versions.body.data as Json[];
      assert.deepEqual(
        list.map((v) => [v.version_number, v.change, v.is_current]),
        [
          [1, 'created', false],
          [2, 'content', false],
          [3, 'content', true],
        ],
      );
      assert.equal(list[0]!.characters, FAQ.length);

      // Restore by id, then by number: each is a new version with the old words.
      const restored = await t.request('POST', `/v1/knowledge/${id}/versions/${String(list[0]!.id)}/restore`);
      assert.equal(restored.status, 200, JSON.stringify(restored.body));
      assert.equal(((await t.request('GET', `/v1/knowledge/${id}/content`)).body.data as Json).text, FAQ);
      await t.request('POST', `/v1/knowledge/${id}/versions/2/restore`);
      const after = (await t.request('GET', `/v1/knowledge/${id}/versions`)).body.data as Json[];
      assert.deepEqual(
        after.slice(3).map((v) => v.change),
        ['restored from version 1', 'restored from version 2'],
      );
      // The agent's search follows the current text.
      const asked = await t.request('POST', '/v1/knowledge/answer', {
        knowledge_base_id: id,
        question: 'When are you open?',
      });
      assert.match(String((asked.body.data as Json).answer), /every day from 9 am to 9 pm/);

      assert.equal((await t.request('POST', `/v1/knowledge/${id}/versions/99/restore`)).status, 404);
      const empty = await t.request('POST', `/v1/knowledge/${id}/content`, { text: '   ' });
      assert.equal(empty.status, 400);
      assert.match(JSON.stringify(empty.body.errors), /text must hold some words/);
      const missing = await t.request('POST', `/v1/knowledge/${id}/content`, {});
      assert.equal(missing.status, 400);
      assert.match(JSON.stringify(missing.body), /text/);

      // Deleting the knowledge base deletes its versions.
      await t.request('DELETE', `/v1/knowledge/${id}`);
      assert.equal((await t.request('GET', `/v1/knowledge/${id}/versions`)).status, 404);
      const left = await t.services.storage.db
        .selectFrom('knowledge_versions')
        .select('id')
        .where('kb_id', '=', id)
        .execute();
      assert.equal(left.length, 0);
    });

    it('answers questions from the knowledge base, offline, with the passages it used', async () => {
      const id = await create();
      const r = await t.request('POST', '/v1/knowledge/answer', {
        knowledge_base_id: id,
        question: 'Is parking free?',
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const data = r.body.data as { answer: string; found: boolean; sources: Json[] };
      assert.equal(data.answer, 'Parking is free in the lot behind the building.');
      assert.equal(data.found, true);
      assert.equal(data.sources[0]!.knowledge_base, 'Clinic FAQ');
      assert.match(String(data.sources[0]!.text), /Parking is free/);

      const unknown = await t.request('POST', '/v1/knowledge/answer', {
        knowledge_base_id: id,
        question: 'Do you sell bicycles?',
      });
      assert.deepEqual(unknown.body.data, { answer: 'The knowledge base does not say.', found: false, sources: [] });

      // A follow-up in a chat is looked up with the question before it.
      const chat = await t.request('POST', '/v1/knowledge/chat', {
        knowledge_base_id: id,
        question: 'And on Saturday?',
        conversation_history: [
          { role: 'user', content: 'What are your opening hours?' },
          { role: 'assistant', content: 'Monday to Friday from 8 am to 6 pm.' },
        ],
      });
      assert.equal(chat.status, 200, JSON.stringify(chat.body));
      assert.match(String((chat.body.data as Json).answer), /Saturday from 10 am to 2 pm/);

      const bad = await t.request('POST', '/v1/knowledge/chat', {
        knowledge_base_id: id,
        question: 'x',
        conversation_history: [{ role: 'system', content: 'x' }],
      });
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.body), /conversation_history/);
      const noQuestion = await t.request('POST', '/v1/knowledge/answer', { knowledge_base_id: id });
      assert.equal(noQuestion.status, 400);
      assert.match(JSON.stringify(noQuestion.body), /question/);
    });

    it('lists, resolves and dismisses knowledge gaps, by knowledge base, status and persona', async () => {
      const id = await create();
      const persona = await t.request('POST', '/v1/personas', {
        name: 'Front desk',
        personality_prompt: 'You are Ava.',
      });
      const personaId = String((persona.body.data as Json).id);
      const gaps = t.services.knowledgeGaps;
      const { account_id: accountId } = await t.services.storage.db
        .selectFrom('knowledge_bases')
        .select('account_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      // A moment apart: listed newest first.
      const gap = async (question: string, personaOf: string | null) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        await gaps.record(accountId, { callId: 'call-1', personaId: personaOf, knowledgeBaseIds: [id], question });
      };
      await gap('Do you take Visa cards?', personaId);
      await gap('Is there a dentist on call at night?', null);
      await gap('Can I bring my dog?', personaId);

      const all = await t.request('GET', `/v1/knowledge/gaps?knowledge_base_id=${id}`);
      assert.equal(all.status, 200, JSON.stringify(all.body));
      const listed = all.body.data as { gaps: Json[]; total: number };
      assert.equal(listed.total, 3);
      assert.deepEqual(
        listed.gaps.map((g) => g.question),
        ['Can I bring my dog?', 'Is there a dentist on call at night?', 'Do you take Visa cards?'],
      );
      const paged = await t.request('GET', `/v1/knowledge/gaps?knowledge_base_id=${id}&page=2&limit=2`);
      assert.deepEqual(
        (paged.body.data as { gaps: Json[] }).gaps.map((g) => g.question),
        ['Do you take Visa cards?'],
      );
      const mine = await t.request('GET', `/v1/personas/${personaId}/gaps`);
      const personaGaps = (mine.body.data as { gaps: Json[] }).gaps;
      assert.equal(personaGaps.length, 2);

      // Resolved through the persona, without adding the answer; dismissed through the knowledge routes.
      const visa = personaGaps.find((g) => g.question === 'Do you take Visa cards?')!;
      const resolved = await t.request('POST', `/v1/personas/${personaId}/gaps/${String(visa.id)}/resolve`, {
        answer: 'Yes, and Mastercard.',
        add_to_knowledge_base: false,
      });
      assert.equal(resolved.status, 200, JSON.stringify(resolved.body));
      assert.equal((resolved.body.data as Json).answer, 'Yes, and Mastercard.');
      assert.equal(((await t.request('GET', `/v1/knowledge/${id}/content`)).body.data as Json).text, FAQ);
      const night = listed.gaps.find((g) => g.question === 'Is there a dentist on call at night?')!;
      assert.equal(
        (await t.request('POST', `/v1/personas/${personaId}/gaps/${String(night.id)}/resolve`, { answer: 'x' })).status,
        404,
        "not one of the persona's gaps",
      );
      const dismissed = await t.request('POST', `/v1/knowledge/gaps/${String(night.id)}/dismiss`);
      assert.equal((dismissed.body.data as Json).status, 'dismissed');
      const open = await t.request('GET', `/v1/knowledge/gaps?knowledge_base_id=${id}&status=open`);
      assert.deepEqual(
        (open.body.data as { gaps: Json[] }).gaps.map((g) => g.question),
        ['Can I bring my dog?'],
      );
      assert.equal((await t.request('GET', '/v1/knowledge/gaps?status=closed')).status, 400);
      assert.equal((await t.request('GET', '/v1/personas/nope/gaps')).status, 404);
      assert.equal((await t.request('POST', '/v1/knowledge/gaps/nope/dismiss')).status, 404);
      const theirs = await t.request('GET', `/v1/knowledge/gaps?knowledge_base_id=${id}`, undefined, {
        as: t.otherKey,
      });
      assert.equal((theirs.body.data as { total: number }).total, 0);
    });

    it("gives a persona's draft and production versions", async () => {
      const created = await t.request('POST', '/v1/personas', { name: 'Ava', personality_prompt: 'You are Ava.' });
      const personaId = String((created.body.data as Json).id);
      await t.request('PATCH', `/v1/personas/${personaId}`, { personality_prompt: 'You are Ava, and brief.' });
      const draft = await t.request('GET', `/v1/personas/${personaId}/draft`);
      assert.equal(draft.status, 200, JSON.stringify(draft.body));
      assert.equal((draft.body.data as Json).version_type, 'draft');
      assert.equal((draft.body.data as Json).personality_prompt, 'You are Ava, and brief.');
      const production = await t.request('GET', `/v1/personas/${personaId}/production`);
      assert.equal((production.body.data as Json).version_type, 'production');
      assert.equal((production.body.data as Json).personality_prompt, 'You are Ava.');
      assert.equal(
        (await t.request('GET', `/v1/personas/${personaId}/draft`, undefined, { as: t.otherKey })).status,
        404,
      );
    });

    it("keeps each account to its own knowledge bases' content, versions and answers", async () => {
      const id = await create();
      const as = { as: t.otherKey };
      assert.equal((await t.request('GET', `/v1/knowledge/${id}/content`, undefined, as)).status, 404);
      assert.equal((await t.request('POST', `/v1/knowledge/${id}/content`, { text: 'Mine now' }, as)).status, 404);
      assert.equal((await t.request('GET', `/v1/knowledge/${id}/versions`, undefined, as)).status, 404);
      assert.equal((await t.request('POST', `/v1/knowledge/${id}/versions/1/restore`, {}, as)).status, 404);
      const asked = await t.request(
        'POST',
        '/v1/knowledge/answer',
        { knowledge_base_id: id, question: 'Parking?' },
        as,
      );
      assert.equal(asked.status, 404);
      assert.equal(((await t.request('GET', `/v1/knowledge/${id}/content`)).body.data as Json).text, FAQ);
    });
  });

describe('knowledge bases: web pages and questions to a language model', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  let server: http.Server;
  let base = '';
  let sitemap = true;
  before(async () => {
    server = http.createServer((req, res) => {
      const pages: Record<string, [number, string, string]> = {
        '/robots.txt': [404, 'text/plain', ''],
        '/sitemap.xml': sitemap
          ? [
              200,
              'application/xml',
              `<?xml version="1.0"?><sitemapindex><sitemap><loc>${base}/pages.xml</loc></sitemap></sitemapindex>`,
            ]
          : [404, 'text/plain', ''],
        '/pages.xml': [
          200,
          'application/xml',
          `<urlset><url><loc>${base}/hours</loc></url><url><loc> ${base}/parking?a=1&amp;b=2 </loc></url>` +
            '<url><loc>https://elsewhere.example/x</loc></url></urlset>',
        ],
        '/': [
          200,
          'text/html',
          '<a href="/hours">Hours</a> <a href=\'/parking#top\'>Parking</a> <a href="https://elsewhere.example/">x</a>',
        ],
        '/hours': [200, 'text/html', '<p>We open at 7 am on weekdays.</p>'],
        '/parking': [200, 'text/plain', 'Parking costs 2 dollars an hour.'],
      };
      const [status, type, body] = pages[(req.url ?? '').split('?')[0]!] ?? [404, 'text/plain', 'no'];
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    fake = await FakeOpenAi.start();
    t = await createTestApp({ config: { llm: fakeLlmConfig(fake, 2000) } });
  });
  after(async () => {
    await t.close();
    await fake.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it('finds the pages of a site in its sitemap, or in the links of its page', async () => {
    const found = await t.request('POST', '/v1/knowledge/crawl', { url: `${base}/`, limit: 10 });
    assert.equal(found.status, 200, JSON.stringify(found.body));
    assert.deepEqual(found.body.data, {
      url: `${base}/`,
      source: 'sitemap',
      urls: [`${base}/hours`, `${base}/parking?a=1&b=2`],
    });
    sitemap = false;
    const links = await t.request('POST', '/v1/knowledge/crawl', { url: `${base}/` });
    assert.deepEqual(links.body.data, {
      url: `${base}/`,
      source: 'links',
      urls: [`${base}/`, `${base}/hours`, `${base}/parking`],
    });
    const one = await t.request('POST', '/v1/knowledge/crawl', { url: `${base}/`, limit: 1 });
    assert.deepEqual((one.body.data as Json).urls, [`${base}/`]);
    const gone = await t.request('POST', '/v1/knowledge/crawl', { url: `${base}/nothing` });
    assert.equal(gone.status, 400);
    assert.match(JSON.stringify(gone.body.errors), /url could not be read, and the site has no sitemap/);
    const notHttp = await t.request('POST', '/v1/knowledge/crawl', { url: 'ftp://a.example' });
    assert.equal(notHttp.status, 400);
    assert.match(JSON.stringify(notHttp.body), /url/);
    const metadata = await t.request('POST', '/v1/knowledge/crawl', { url: 'http://169.254.169.254/' });
    assert.equal(metadata.status, 400, 'the guarded client refuses the cloud metadata address');
  });

  it('reads a knowledge base from other pages, keeping the old text as a version', async () => {
    const created = await t.request('POST', '/v1/knowledge/learn', { name: 'Lot', text: FAQ });
    const id = String((created.body.data as Json).id);
    const r = await t.request('POST', `/v1/knowledge/${id}/replace_urls`, { urls: [`${base}/parking`] });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body.data as Json).type, 'WEB_SCRAPE');
    const content = (await t.request('GET', `/v1/knowledge/${id}/content`)).body.data as Json;
    assert.deepEqual(content.source_urls, [`${base}/parking`]);
    assert.match(String(content.text), /Parking costs 2 dollars an hour\./);
    const versions = (await t.request('GET', `/v1/knowledge/${id}/versions`)).body.data as Json[];
    assert.deepEqual(
      versions.map((v) => [v.change, v.source_urls]),
      [
        ['created', null],
        ['urls', [`${base}/parking`]],
      ],
    );
    const broken = await t.request('POST', `/v1/knowledge/${id}/replace_urls`, { urls: [`${base}/gone`] });
    assert.equal(broken.status, 400);
    assert.match(JSON.stringify(broken.body.errors), /urls\[0\] answered HTTP 404/);
    assert.equal(((await t.request('GET', `/v1/knowledge/${id}/versions`)).body.data as Json[]).length, 2);
  });

  it("gives the model the knowledge base's passages and the chat so far, and returns its answer", async () => {
    const created = await t.request('POST', '/v1/knowledge/learn', { name: 'Clinic FAQ', text: FAQ });
    const id = String((created.body.data as Json).id);
    const seen = fake.requests.length;
    fake.script({ text: 'Yes, parking behind the building is free.' });
    const r = await t.request('POST', '/v1/knowledge/chat', {
      knowledge_base_id: id,
      question: 'Is parking free?',
      conversation_history: [{ role: 'user', content: 'Hi' }],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body.data as Json).answer, 'Yes, parking behind the building is free.');
    const request = fake.requests[seen]!;
    const [system, ...rest] = request.body.messages;
    assert.match(String(system!.content), /\[Clinic FAQ\] Parking is free in the lot behind the building\./);
    assert.deepEqual(
      rest.map((m) => [m.role, m.content]),
      [
        ['user', 'Hi'],
        ['user', 'Is parking free?'],
      ],
    );
    // A question the knowledge base says nothing about is not sent to the model.
    const none = await t.request('POST', '/v1/knowledge/answer', { knowledge_base_id: id, question: 'Bicycles?' });
    assert.equal((none.body.data as Json).found, false);
    assert.equal(fake.requests.length, seen + 1);
    // A failing model is a 503 that says so.
    fake.script({ status: 500, message: 'down' }, { status: 500, message: 'down' });
    const failed = await t.request('POST', '/v1/knowledge/answer', { knowledge_base_id: id, question: 'Parking?' });
    assert.equal(failed.status, 503, JSON.stringify(failed.body));
    assert.match(String(failed.body.message), /language model failed/);
  });
});
