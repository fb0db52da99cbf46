import fs from 'node:fs';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

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
