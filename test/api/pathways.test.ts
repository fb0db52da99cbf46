import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

const nodes = [
  { id: '1', type: 'Default', data: { name: 'Start', text: 'Hi, this is Ava. Do you have a minute?', isStart: true } },
  { id: '2', type: 'end_call', data: { name: 'Goodbye', prompt: 'Say goodbye politely' }, position: { x: 0, y: 120 } },
  { id: '3', type: 'Transfer Call', data: { name: 'Sales', transferNumber: '+14155550110' } },
];
const edges = [
  { id: 'e1', source: '1', target: '2', label: 'not interested' },
  { id: 'e2', source: '1', target: '3', label: 'wants to buy', description: 'The caller asks for pricing' },
];

type Json = Record<string, unknown>;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`pathways (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
    });
    after(() => t.close());

    async function createPathway(body: Json = { name: 'Sales flow' }): Promise<string> {
      const r = await t.request('POST', '/v1/pathway/create', body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return String(r.body.pathway_id);
    }

    async function createVersion(id: string, name: string, graph = { nodes, edges }): Promise<Json> {
      const r = await t.request('POST', `/v1/pathway/${id}/version`, { name, ...graph });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    }

    it('creates a pathway with an empty draft and reads it back under /v1 and /api/v1', async () => {
      const r = await t.request('POST', '/v1/pathway/create', { name: 'Empty', description: 'nothing yet', extra: 1 });
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'success');
      const id = String(r.body.pathway_id);
      // Also under data, as the hosted API's newer clients read it.
      assert.deepEqual(r.body.data, { pathway_id: id });
      assert.equal(r.body.errors, null);
      for (const prefix of ['/v1', '/api/v1']) {
        const got = await t.request('GET', `${prefix}/pathway/${id}`);
        assert.equal(got.status, 200);
        assert.equal(got.body.pathway_id, id);
        assert.equal(got.body.name, 'Empty');
        assert.equal(got.body.description, 'nothing yet');
        assert.deepEqual(got.body.nodes, []);
        assert.deepEqual(got.body.edges, []);
        assert.equal(got.body.production_version, null);
        assert.equal(got.body.latest_version, null);
      }
    });

    it('stores the draft graph with canonical types and unknown fields kept', async () => {
      const id = await createPathway({ name: 'Flow', nodes, edges });
      const got = await t.request('GET', `/v1/pathway/${id}`);
      const stored = got.body.nodes as Json[];
      assert.equal(stored[1]?.type, 'End Call');
      assert.deepEqual(stored[1]?.position, { x: 0, y: 120 });
      // Each edge as sent, its label and description also under data, as the hosted API answers.
      assert.deepEqual(
        got.body.edges,
        edges.map((e) => ({
          ...e,
          data: { label: e.label, ...(e.description !== undefined && { description: e.description }) },
        })),
      );
    });

    it('rejects a broken graph naming every problem', async () => {
      const r = await t.request('POST', '/v1/pathway/create', {
        nodes: [
          { id: 'a', type: 'Default', data: { text: 'x', isStart: true } },
          { id: 'a', type: 'Teleport', data: { name: 'T' } },
          { id: 'w', type: 'Webhook', data: { name: 'W', url: 'ftp://x' } },
        ],
        edges: [{ id: 'e', source: 'a', target: 'n9', label: '' }],
      });
      assert.equal(r.status, 400);
      assert.equal(r.body.status, 'error');
      const errors = r.body.errors as string[];
      for (const expected of [
        'name is required',
        'nodes[0].data.name is required',
        'nodes[1].id "a" is already used by nodes[0]',
        'nodes[1].type "Teleport" is not a known node type',
        'nodes[2].data.url must begin with http:// or https://',
        'edges[0].target "n9" is not a node',
        // An empty label is a label not given (the API's leniency drops empty optional strings).
        'edges[0].label is required',
      ]) {
        assert.ok(
          errors.some((e) => e.startsWith(expected)),
          `${expected} missing from ${JSON.stringify(errors)}`,
        );
      }
      assert.equal(errors.filter((e) => e === 'nodes[0].data.name is required').length, 1, 'reported once');
      const notArray = await t.request('POST', '/v1/pathway/create', { name: 'x', nodes: 'no' });
      assert.equal(notArray.status, 400);
      assert.deepEqual(notArray.body.errors, ['nodes must be an array']);
    });

    it('takes a Webhook node whose url is a prompt variable, as the hosted dashboard saves it', async () => {
      const webhookNodes = [
        nodes[0]!,
        { id: 'w', type: 'Webhook', data: { name: 'Send lead', url: '{{webhook_url}}', method: 'POST' } },
      ];
      const id = await createPathway({ name: 'Leads', nodes: webhookNodes, edges: [] });
      const read = await t.request('GET', `/v1/pathway/${id}`);
      const saved = (read.body.nodes as { id: string; data: Json }[]).find((n) => n.id === 'w');
      assert.equal(saved?.data.url, '{{webhook_url}}');
      const bad = await t.request('POST', '/v1/pathway/create', {
        name: 'Bad',
        nodes: [nodes[0]!, { id: 'w', type: 'Webhook', data: { name: 'Send', url: 'not a url' } }],
        edges: [],
      });
      assert.equal(bad.status, 400);
    });

    it('lists pathways with their version numbers and draft graphs', async () => {
      const id = await createPathway({ name: 'Listed' });
      await createVersion(id, 'v1');
      await createVersion(id, 'v2');
      await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: 1 });
      await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: 2, environment: 'staging' });
      const list = await t.request('GET', '/v1/pathway');
      assert.equal(list.status, 200);
      assert.equal(list.body.status, 'success');
      const item = (list.body.pathways as Json[]).find((p) => p.id === id);
      assert.deepEqual(
        { ...item, created_at: undefined, updated_at: undefined },
        {
          id,
          pathway_id: id,
          name: 'Listed',
          description: null,
          created_at: undefined,
          updated_at: undefined,
          production_version: 1,
          production_version_number: 1,
          staging_version: 2,
          latest_version: 2,
          folder_id: null,
          // As the hosted list shows each pathway: its (draft's) nodes and edges.
          nodes: [],
          edges: [],
        },
      );
    });

    it('updates the draft, checking the merged graph', async () => {
      const id = await createPathway({ name: 'Draft', nodes, edges });
      const renamed = await t.request('POST', `/v1/pathway/${id}`, { name: 'Renamed', description: 'd' });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.message, 'Pathway updated successfully');
      const data = renamed.body.pathway_data as Json;
      assert.equal(data.name, 'Renamed');
      assert.equal(data.description, 'd');
      assert.equal((data.nodes as Json[]).length, 3);

      // Dropping node 3 while the stored edge e2 still points at it is an error.
      const orphan = await t.request('POST', `/v1/pathway/${id}`, { nodes: nodes.slice(0, 2) });
      assert.equal(orphan.status, 400);
      assert.deepEqual(orphan.body.errors, ['edges[1].target "3" is not a node']);

      const both = await t.request('POST', `/v1/pathway/${id}`, { nodes: nodes.slice(0, 2), edges: edges.slice(0, 1) });
      assert.equal(both.status, 200);
      assert.equal(((both.body.pathway_data as Json).nodes as Json[]).length, 2);

      const badName = await t.request('POST', `/v1/pathway/${id}`, { name: 7 });
      assert.equal(badName.status, 400);
      assert.deepEqual(badName.body.errors, ['name must be a string']);
      // An empty name counts as not given: the update then names no field at all.
      const emptyName = await t.request('POST', `/v1/pathway/${id}`, { name: '' });
      assert.equal(emptyName.status, 400);
      assert.match(String((emptyName.body.errors as string[])[0]), /^the body gives no field to update/);
    });

    it('numbers versions 1, 2, 3 and never changes them', async () => {
      const id = await createPathway({ name: 'Versions', nodes, edges });
      const numbers: unknown[] = [];
      for (const name of ['first', 'second', 'third']) {
        const body = await createVersion(id, name);
        assert.equal(body.status, 'success');
        assert.equal(body.message, 'Version created successfully');
        const data = body.data as Json;
        assert.equal(data.name, name);
        assert.equal(typeof data.id, 'string');
        assert.equal(typeof data.created_at, 'string');
        numbers.push(data.version_number);
      }
      assert.deepEqual(numbers, [1, 2, 3]);

      await t.request('POST', `/v1/pathway/${id}`, { nodes: [nodes[0]], edges: [] });
      const v1 = await t.request('GET', `/v1/pathway/${id}/version/1`);
      assert.equal(v1.status, 200);
      assert.equal((v1.body.nodes as Json[]).length, 3, 'editing the draft leaves versions alone');
      assert.equal(v1.body.is_latest, false);
      assert.equal((await t.request('GET', `/v1/pathway/${id}/version/3`)).body.is_latest, true);
      assert.equal((await t.request('GET', `/v1/pathway/${id}/version/4`)).status, 404);
      assert.equal((await t.request('PUT', `/v1/pathway/${id}/version/1`, { name: 'x' })).status, 404);

      const list = await t.request('GET', `/v1/pathway/${id}/versions`);
      assert.equal(list.status, 200);
      assert.deepEqual(
        (list.body as unknown as Json[]).map((v) => [v.version_number, v.name, v.is_production, v.is_staging]),
        [
          [1, 'first', false, false],
          [2, 'second', false, false],
          [3, 'third', false, false],
        ],
      );
    });

    it('gives concurrent versions distinct numbers', async () => {
      const id = await createPathway({ name: 'Race' });
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          t.request('POST', `/v1/pathway/${id}/version`, { name: `v${i}`, nodes, edges }),
        ),
      );
      const got = results.map((r) => (r.body.data as Json).version_number as number).sort((a, b) => a - b);
      assert.deepEqual(got, [1, 2, 3, 4, 5, 6]);
    });

    it('requires name, nodes and edges for a version, and a valid graph', async () => {
      const id = await createPathway();
      const empty = await t.request('POST', `/v1/pathway/${id}/version`, {});
      assert.equal(empty.status, 400);
      assert.deepEqual(
        new Set(empty.body.errors as string[]),
        new Set(['name is required', 'nodes is required', 'edges is required']),
      );
      const noNodes = await t.request('POST', `/v1/pathway/${id}/version`, { name: 'v', nodes: [], edges: [] });
      assert.deepEqual(noNodes.body.errors, ['nodes must have at least 1 item']);
      const noStart = await t.request('POST', `/v1/pathway/${id}/version`, {
        name: 'v',
        nodes: [{ id: 'x', type: 'End Call', data: { name: 'x' } }],
        edges: [],
      });
      assert.equal(noStart.status, 400);
      assert.match(String((noStart.body.errors as string[])[0]), /exactly one start node/);
      const versions = await t.request('GET', `/v1/pathway/${id}/versions`);
      assert.deepEqual(versions.body, []);
    });

    it('publishes to production and staging; version 0 is the live one', async () => {
      const id = await createPathway({ name: 'Publish' });
      const live0 = await t.request('GET', `/v1/pathway/${id}/version/0`);
      assert.equal(live0.status, 404);
      assert.match(String(live0.body.message), /no published version/);

      const v1 = (await createVersion(id, 'one')).data as Json;
      await createVersion(id, 'two', { nodes: [nodes[0]!], edges: [] });
      await createVersion(id, 'three');

      const byId = await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: v1.id });
      assert.equal(byId.status, 200);
      assert.deepEqual(byId.body, {
        status: 'success',
        message: 'Pathway published successfully',
        version_number: 1,
        environment: 'production',
      });
      const live = await t.request('GET', `/v1/pathway/${id}/version/0`);
      assert.equal(live.status, 200);
      assert.equal(live.body.version_number, 1);
      assert.equal(live.body.name, 'one');
      assert.equal(live.body.is_production, true);

      const staging = await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: '2', environment: 'staging' });
      assert.equal(staging.body.version_number, 2);
      assert.equal(staging.body.environment, 'staging');
      assert.equal(
        (await t.request('GET', `/v1/pathway/${id}/version/0`)).body.version_number,
        1,
        'staging is not live',
      );

      const byNumber = await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: 3 });
      assert.equal(byNumber.body.version_number, 3);
      assert.equal((await t.request('GET', `/v1/pathway/${id}/version/0`)).body.version_number, 3);
      const list = await t.request('GET', `/v1/pathway/${id}/versions`);
      assert.deepEqual(
        (list.body as unknown as Json[]).map((v) => [v.version_number, v.is_production, v.is_staging]),
        [
          [1, false, false],
          [2, false, true],
          [3, true, false],
        ],
      );

      for (const version_id of [9, '9', 'no-such-version']) {
        const r = await t.request('POST', `/v1/pathway/${id}/publish`, { version_id });
        assert.equal(r.status, 404, String(version_id));
        assert.equal(r.body.status, 'error');
      }
      const badEnv = await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: 1, environment: 'dev' });
      assert.equal(badEnv.status, 400);
      assert.deepEqual(badEnv.body.errors, ['environment must be one of: production, staging']);
      // Without version_id, the draft is saved as the next version and published.
      await t.request('POST', `/v1/pathway/${id}`, { nodes: [nodes[0]], edges: [] });
      const draft = await t.request('POST', `/v1/pathway/${id}/publish`, { environment: 'production' });
      assert.equal(draft.status, 200, JSON.stringify(draft.body));
      assert.equal(draft.body.version_number, 4);
      const liveDraft = await t.request('GET', `/v1/pathway/${id}/version/0`);
      assert.equal(liveDraft.body.version_number, 4);
      assert.equal((liveDraft.body.nodes as Json[]).length, 1);
      const empty = await createPathway({ name: 'Nothing yet' });
      const none = await t.request('POST', `/v1/pathway/${empty}/publish`, { version_id: null });
      assert.equal(none.status, 400);
      assert.deepEqual(none.body.errors, ['version_id is required: the draft has no nodes to publish']);
    });

    it('takes the older update form, POST /convo_pathway/update with the id in the body', async () => {
      const id = await createPathway({ name: 'Older form' });
      for (const url of ['/convo_pathway/update', '/v1/convo_pathway/update']) {
        const r = await t.request('POST', url, { id, name: `Renamed at ${url}`, nodes: [nodes[0]], edges: [] });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'success');
        const got = await t.request('GET', `/v1/pathway/${id}`);
        assert.equal(got.body.name, `Renamed at ${url}`);
      }
      const missing = await t.request('POST', '/convo_pathway/update', { name: 'No id' });
      assert.equal(missing.status, 400);
      const foreign = await t.request('POST', '/convo_pathway/update', { id, name: 'Taken' }, { as: t.otherKey });
      assert.equal(foreign.status, 404);
    });

    it('resolveVersion: production, else latest, else the draft', async () => {
      const account = (await t.services.accounts.authenticate(t.key))!;
      const pathways = t.services.pathways;
      const id = await createPathway({ name: 'Resolve', nodes: [nodes[0]], edges: [] });

      const draft = await pathways.resolveVersion(account.id, id, null);
      assert.equal(draft?.version_number, null);
      assert.equal(draft?.nodes.length, 1);
      assert.equal(await pathways.resolveVersion(account.id, id, 0), undefined, 'nothing is live');
      assert.equal(await pathways.resolveVersion(account.id, id, 1), undefined);

      await createVersion(id, 'one');
      await createVersion(id, 'two', { nodes: [nodes[0]!, nodes[1]!], edges: [edges[0]!] });
      const latest = await pathways.resolveVersion(account.id, id, null);
      assert.equal(latest?.version_number, 2);
      assert.equal(latest?.nodes.length, 2);

      await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: 2, environment: 'staging' });
      assert.equal((await pathways.resolveVersion(account.id, id, null))?.version_number, 2);
      await t.request('POST', `/v1/pathway/${id}/publish`, { version_id: 1 });
      const production = await pathways.resolveVersion(account.id, id, null);
      assert.equal(production?.version_number, 1);
      assert.equal(production?.nodes.length, 3);
      assert.equal((await pathways.resolveVersion(account.id, id, 0))?.version_number, 1);
      assert.equal((await pathways.resolveVersion(account.id, id, 2))?.version_number, 2);

      const other = (await t.services.accounts.authenticate(t.otherKey))!;
      assert.equal(await pathways.resolveVersion(other.id, id, null), undefined);
      assert.equal(await pathways.get(other.id, id), undefined);
      assert.equal((await pathways.get(account.id, id))?.name, 'Resolve');
    });

    it('deletes a pathway with its versions', async () => {
      const id = await createPathway({ name: 'Doomed' });
      await createVersion(id, 'one');
      const del = await t.request('DELETE', `/v1/pathway/${id}`);
      assert.equal(del.status, 200);
      assert.equal(del.body.status, 'success');
      assert.equal((await t.request('GET', `/v1/pathway/${id}`)).status, 404);
      assert.equal((await t.request('GET', `/v1/pathway/${id}/version/1`)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/pathway/${id}`)).status, 404);
      const left = await t.services.storage.db
        .selectFrom('pathway_versions')
        .select('id')
        .where('pathway_id', '=', id)
        .execute();
      assert.deepEqual(left, []);
    });

    it('hides pathways of other accounts and requires a key on every endpoint', async () => {
      const id = await createPathway({ name: 'Private', nodes, edges });
      await createVersion(id, 'one');
      const calls: [Parameters<TestApp['request']>[0], string, unknown][] = [
        ['GET', `/v1/pathway/${id}`, undefined],
        ['POST', `/v1/pathway/${id}`, { name: 'stolen' }],
        ['POST', `/v1/pathway/${id}/version`, { name: 'v', nodes, edges }],
        ['GET', `/v1/pathway/${id}/versions`, undefined],
        ['GET', `/v1/pathway/${id}/version/1`, undefined],
        ['GET', `/v1/pathway/${id}/version/0`, undefined],
        ['POST', `/v1/pathway/${id}/publish`, { version_id: 1 }],
        ['DELETE', `/v1/pathway/${id}`, undefined],
      ];
      for (const [method, url, body] of calls) {
        const foreign = await t.request(method, url, body, { as: t.otherKey });
        assert.equal(foreign.status, 404, `${method} ${url} as another account`);
        assert.equal(foreign.body.status, 'error');
        const anonymous = await t.request(method, url, body, { as: null });
        assert.equal(anonymous.status, 401, `${method} ${url} without a key`);
      }
      assert.equal((await t.request('GET', '/v1/pathway', undefined, { as: null })).status, 401);
      assert.equal((await t.request('POST', '/v1/pathway/create', { name: 'x' }, { as: null })).status, 401);
      const others = await t.request('GET', '/v1/pathway', undefined, { as: t.otherKey });
      assert.deepEqual(others.body.pathways, []);
      const still = await t.request('GET', `/v1/pathway/${id}`);
      assert.equal(still.body.name, 'Private');
      assert.equal(still.body.latest_version, 1);
      assert.equal(still.body.production_version, null);
      assert.equal((await t.request('GET', '/v1/pathway/no-such-id')).status, 404);
    });

    it('serves the same pathways under /convo_pathway, the older name clients still call', async () => {
      const created = await t.request('POST', '/v1/convo_pathway/create', { name: 'Convo', description: 'old name' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const id = String(created.body.pathway_id);
      // Posted to the collection itself, with a graph.
      const posted = await t.request('POST', '/api/v1/convo_pathway', { name: 'Convo 2', nodes, edges });
      assert.equal(posted.status, 200, JSON.stringify(posted.body));
      const got = await t.request('GET', `/v1/convo_pathway/${id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.name, 'Convo');
      // One pathway, whichever name reads or writes it.
      const updated = await t.request('POST', `/v1/convo_pathway/${id}`, { nodes, edges });
      assert.equal(updated.status, 200, JSON.stringify(updated.body));
      assert.equal(((await t.request('GET', `/v1/pathway/${id}`)).body.nodes as Json[]).length, 3);
      assert.equal(
        (await t.request('POST', `/v1/convo_pathway/${id}/version`, { name: 'v1', nodes, edges })).status,
        200,
      );
      assert.equal((await t.request('POST', `/v1/convo_pathway/${id}/publish`, { version_id: 1 })).status, 200);
      const live = await t.request('GET', `/v1/convo_pathway/${id}/version/0`);
      assert.equal(live.body.version_number, 1);
      const versions = await t.request('GET', `/v1/convo_pathway/${id}/versions`);
      assert.equal((versions.body as unknown as Json[]).length, 1);
      const listed = await t.request('GET', '/v1/convo_pathway');
      const ids = (listed.body.pathways as Json[]).map((p) => p.pathway_id);
      assert.ok(ids.includes(id) && ids.includes(posted.body.pathway_id));
      // The same checks: a broken graph names its problem, another account sees nothing, a key is needed.
      const broken = await t.request('POST', `/v1/convo_pathway/${id}`, {
        edges: [{ id: 'x', source: '1', target: '9' }],
      });
      assert.equal(broken.status, 400);
      assert.match(JSON.stringify(broken.body.errors), /9/);
      assert.equal((await t.request('GET', `/v1/convo_pathway/${id}`, undefined, { as: t.otherKey })).status, 404);
      assert.equal((await t.request('GET', '/v1/convo_pathway', undefined, { as: null })).status, 401);
      assert.equal((await t.request('DELETE', `/v1/convo_pathway/${id}`)).status, 200);
      assert.equal((await t.request('GET', `/v1/pathway/${id}`)).status, 404);
      // Documented once, under /pathway.
      const spec = await t.request('GET', '/openapi.json', undefined, { as: null });
      const paths = Object.keys(spec.body.paths as Json);
      assert.ok(paths.includes('/v1/pathway/{id}'));
      assert.ok(!paths.some((p) => p.includes('convo_pathway')));
    });
  });
