import fs from 'node:fs';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { postgresAvailable } from '../../src/testing/postgres.js';

type Json = Record<string, unknown>;
const example = JSON.parse(fs.readFileSync('examples/pathways/appointment-booking.json', 'utf8')) as {
  name: string;
  nodes: Json[];
  edges: Json[];
};

describe('POST /v1/pathway/{id}/version/{n}: update a version', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('replaces the fields sent, checks the graph, and leaves other versions alone', async () => {
    const created = await t.request('POST', '/v1/pathway/create', example);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = String(created.body.pathway_id);
    for (const name of ['v1', 'v2']) {
      const v = await t.request('POST', `/v1/pathway/${id}/version`, {
        name,
        nodes: example.nodes,
        edges: example.edges,
      });
      assert.equal(v.status, 200, JSON.stringify(v.body));
    }
    const renamed = await t.request('POST', `/v1/pathway/${id}/version/1`, {
      name: 'v1 (fixed)',
      edges: example.edges.slice(0, -1),
    });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    const data = renamed.body.data as Json;
    assert.equal(data.name, 'v1 (fixed)');
    assert.equal((data.edges as Json[]).length, example.edges.length - 1);
    const v2 = (await t.request('GET', `/v1/pathway/${id}/version/2`)).body;
    assert.equal(v2.name, 'v2');
    assert.equal((v2.edges as Json[]).length, example.edges.length);

    const broken = await t.request('POST', `/v1/pathway/${id}/version/1`, {
      edges: [{ id: 'e', source: 'nowhere', target: 'nothing', data: { label: 'x' } }],
    });
    assert.equal(broken.status, 400);
    assert.equal((await t.request('GET', `/v1/pathway/${id}/version/1`)).body.name, 'v1 (fixed)');
    assert.equal((await t.request('POST', `/v1/pathway/${id}/version/9`, { name: 'x' })).status, 404);
    assert.equal(
      (await t.request('POST', `/v1/pathway/${id}/version/1`, { name: 'x' }, { as: t.otherKey })).status,
      404,
    );
  });
});

describe('the older pathway routes with the id in the body (/v1/convo_pathway/...)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  const globalEntry = { globalConfig: { globalPrompt: 'Speak briefly and kindly.' } };

  it('saves versions, updates one in place, publishes by number, reads one and duplicates the draft', async () => {
    const created = await t.request('POST', '/v1/convo_pathway/create', { name: 'Booking' });
    const id = String(created.body.pathway_id);
    const nodes = [globalEntry, ...example.nodes];

    const saved = await t.request('POST', '/v1/convo_pathway/create-version', {
      pathway_id: id,
      nodes,
      edges: example.edges,
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.equal((saved.body.data as Json).version_number, 1);
    // The graph saved is the working copy too.
    const draft = (await t.request('GET', `/v1/convo_pathway/${id}`)).body;
    assert.deepEqual((draft.nodes as Json[])[0], globalEntry);
    assert.equal((draft.nodes as Json[]).length, nodes.length);

    // A call follows the nodes, with the entry's prompt as the pathway's global prompt.
    const accountId = String(((await t.request('GET', '/v1/me')).body.account as Json).id);
    const resolved = await t.services.pathways.resolveVersion(accountId, id, null);
    assert.equal(resolved?.globalPrompt, 'Speak briefly and kindly.');
    assert.equal(resolved?.nodes.length, example.nodes.length);
    // The graph as GET returns it, global config entry and all, saved as a version (seed 4.9).
    const again = await t.request('POST', `/v1/pathway/${id}/version`, {
      name: 'Again',
      nodes: draft.nodes,
      edges: draft.edges,
    });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const number = (again.body.data as Json).version_number as number;
    assert.equal(
      (await t.services.pathways.resolveVersion(accountId, id, number))?.globalPrompt,
      globalEntry.globalConfig.globalPrompt,
    );
    await t.request('DELETE', `/v1/pathway/${id}/version/${number}`);

    let versions = (await t.request('GET', `/v1/pathway/${id}/versions`)).body as unknown as Json[];
    assert.deepEqual(
      versions.map((v) => [v.version_number, v.is_prev_published]),
      [[1, false]],
    );

    const renamedNodes = nodes.map((n, i) =>
      i === 1 ? { ...n, data: { ...((n as Json).data as Json), name: 'Hello' } } : n,
    );
    const updated = await t.request('POST', '/v1/convo_pathway/update', {
      id,
      version_number: 1,
      nodes: renamedNodes,
      edges: example.edges,
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const v1 = (await t.request('GET', `/v1/pathway/${id}/version/1`)).body;
    assert.equal(((v1.nodes as Json[])[1]!.data as Json).name, 'Hello');
    assert.equal((((await t.request('GET', `/v1/pathway/${id}`)).body.nodes as Json[])[1]!.data as Json).name, 'Hello');

    // No graph given: the draft is saved as the next version.
    const snapshot = await t.request('POST', '/v1/convo_pathway/create-version', { pathway_id: id });
    assert.equal((snapshot.body.data as Json).version_number, 2);
    const published = await t.request('POST', '/v1/convo_pathway/publish', {
      id,
      version_number: 2,
      environment: 'production',
    });
    assert.equal(published.status, 200, JSON.stringify(published.body));
    assert.equal(published.body.version_number, 2);
    versions = (await t.request('GET', `/v1/pathway/${id}/versions`)).body as unknown as Json[];
    assert.deepEqual(
      versions.map((v) => [v.version_number, v.is_production, v.is_prev_published]),
      [
        [1, false, false],
        [2, true, true],
      ],
    );
    // Replaced in production, a version stays one that has been published.
    await t.request('POST', '/v1/convo_pathway/publish', { id, version_number: 1 });
    versions = (await t.request('GET', `/v1/pathway/${id}/versions`)).body as unknown as Json[];
    assert.deepEqual(
      versions.map((v) => [v.version_number, v.is_production, v.is_prev_published]),
      [
        [1, true, true],
        [2, false, true],
      ],
    );

    const one = await t.request('POST', '/v1/convo_pathway/get_one', { id, version_number: 2 });
    assert.equal(one.status, 200);
    assert.equal((one.body.data as Json).version_number, 2);
    assert.deepEqual(((one.body.data as Json).nodes as Json[])[0], globalEntry);

    const copy = await t.request('POST', '/v1/convo_pathway/duplicate', { pathwayID: id, name: 'Booking copy' });
    assert.equal(copy.status, 200, JSON.stringify(copy.body));
    const copied = (await t.request('GET', `/v1/pathway/${String(copy.body.id)}`)).body;
    assert.equal(copied.name, 'Booking copy');
    assert.deepEqual(copied.nodes, (await t.request('GET', `/v1/pathway/${id}`)).body.nodes);
  });

  it('names the field when a body is wrong, and is 404 for another account', async () => {
    const created = await t.request('POST', '/v1/convo_pathway/create', { name: 'Mine' });
    const id = String(created.body.pathway_id);
    const noId = await t.request('POST', '/v1/convo_pathway/create-version', { nodes: example.nodes });
    assert.equal(noId.status, 400);
    assert.deepEqual(noId.body.errors, ['pathway_id is required: the id of the pathway']);
    const numericId = await t.request('POST', '/v1/convo_pathway/get_one', { id: 5 });
    assert.deepEqual(numericId.body.errors, ['id must be a string: the id of the pathway']);
    const badNumber = await t.request('POST', '/v1/convo_pathway/publish', { id, version_number: 'latest' });
    assert.deepEqual(badNumber.body.errors, ['version_number must be a whole number of 1 or more']);
    const empty = await t.request('POST', '/v1/convo_pathway/create-version', { pathway_id: id });
    assert.equal(empty.status, 400);
    assert.match(JSON.stringify(empty.body.errors), /the draft: nodes must have at least 1 item/);
    const twoEntries = await t.request('POST', '/v1/convo_pathway/create-version', {
      pathway_id: id,
      nodes: [globalEntry, ...example.nodes, { globalConfig: { globalPrompt: 7 } }],
      edges: example.edges,
    });
    assert.equal(twoEntries.status, 400);
    const at = example.nodes.length + 1;
    assert.ok(
      (twoEntries.body.errors as string[]).includes(
        `nodes[${at}]: only one globalConfig entry is allowed (nodes[0] is one)`,
      ),
      JSON.stringify(twoEntries.body.errors),
    );
    assert.ok((twoEntries.body.errors as string[]).includes(`nodes[${at}].globalConfig.globalPrompt must be a string`));
    for (const [path, body] of [
      ['/v1/convo_pathway/get_one', { id }],
      ['/v1/convo_pathway/duplicate', { pathway_id: id }],
      ['/v1/convo_pathway/publish', { id, version_number: 1 }],
    ] as const) {
      const r = await t.request('POST', path, body, { as: t.otherKey });
      assert.equal(r.status, 404, `${path}: ${JSON.stringify(r.body)}`);
    }
  });
});

describe('GET /v1/pathway/{id}/versions and DELETE /v1/pathway/{id}/version/{n}', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('lists the versions as a bare array with is_latest, and deletes any version not published', async () => {
    const id = String((await t.request('POST', '/v1/pathway/create', example)).body.pathway_id);
    for (const name of ['one', 'two', 'three'])
      await t.request('POST', `/v1/pathway/${id}/version`, { name, nodes: example.nodes, edges: example.edges });
    await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: 2 });
    const list = await t.request('GET', `/v1/pathway/${id}/versions`);
    const versions = list.body as unknown as Json[];
    assert.ok(Array.isArray(versions));
    assert.deepEqual(
      versions.map((v) => [v.version_number, v.name, v.is_latest, v.is_production]),
      [
        [1, 'one', false, false],
        [2, 'two', false, true],
        [3, 'three', true, false],
      ],
    );
    // A version is also named by its id.
    const byId = await t.request('GET', `/v1/pathway/${id}/version/${String(versions[2]!.id)}`);
    assert.equal(byId.status, 200, JSON.stringify(byId.body));
    assert.equal(byId.body.version_number, 3);
    assert.equal((await t.request('GET', `/v1/pathway/${id}/version/no-such-version`)).status, 404);
    const live = await t.request('DELETE', `/v1/pathway/${id}/version/2`);
    assert.equal(live.status, 409);
    assert.match(String(live.body.message), /published/);
    const gone = await t.request('DELETE', `/v1/pathway/${id}/version/3`);
    assert.deepEqual(gone.body, { status: 'success', message: 'Version deleted successfully' });
    assert.equal((await t.request('DELETE', `/v1/pathway/${id}/version/3`)).status, 404);
    assert.equal((await t.request('DELETE', `/v1/pathway/${id}/version/1`, undefined, { as: t.otherKey })).status, 404);
    const after = (await t.request('GET', `/v1/pathway/${id}/versions`)).body as unknown as Json[];
    assert.deepEqual(
      after.map((v) => [v.version_number, v.is_latest]),
      [
        [1, false],
        [2, true],
      ],
    );
    // The next version takes the next number after the highest left.
    const next = await t.request('POST', `/v1/pathway/${id}/version`, {
      name: 'again',
      nodes: example.nodes,
      edges: example.edges,
    });
    assert.equal((next.body.data as Json).version_number, 3);
  });
});

describe('POST /v1/pathway/{id}/version from many clients at once', () => {
  for (const storage of ['sqlite', 'postgres'] as const)
    it(`numbers every version once, none refused (${storage})`, async (c) => {
      if (storage === 'postgres' && !(await postgresAvailable())) return c.skip('no PostgreSQL');
      const t = await createTestApp({ postgres: storage === 'postgres' });
      try {
        const created = await t.request('POST', '/v1/pathway/create', example);
        const id = String(created.body.pathway_id);
        const saved = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            t.request('POST', `/v1/pathway/${id}/version`, {
              name: `v${i}`,
              nodes: example.nodes,
              edges: example.edges,
            }),
          ),
        );
        assert.deepEqual(
          saved.filter((r) => r.status !== 200).map((r) => `${r.status} ${JSON.stringify(r.body)}`),
          [],
        );
        const numbers = ((await t.request('GET', `/v1/pathway/${id}/versions`)).body as unknown as Json[])
          .map((v) => Number(v.version_number))
          .sort((a, b) => a - b);
        assert.deepEqual(
          numbers,
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
      } finally {
        await t.close();
      }
    });
});
