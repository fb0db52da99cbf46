import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`pathway folders (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
    });
    after(() => t.close());

    const pathway = async (name: string) =>
      String((await t.request('POST', '/v1/pathway/create', { name })).body.pathway_id);

    it('files pathways in nested folders, lists and moves them, and deleting a folder moves what it held up', async () => {
      const sales = await t.request('POST', '/v1/pathway/folders', { name: 'Sales' });
      assert.equal(sales.status, 200, JSON.stringify(sales.body));
      const salesId = String(sales.body.folder_id);
      assert.equal(sales.body.id, salesId);
      assert.deepEqual([sales.body.name, sales.body.parent_folder_id], ['Sales', null]);
      const west = await t.request('POST', '/v1/pathway/folders', { name: 'West', parent_folder_id: salesId });
      const westId = String(west.body.folder_id);
      assert.equal(west.body.parent_folder_id, salesId);

      const a = await pathway('Outbound A');
      const b = await pathway('Outbound B');
      const moved = await t.request('POST', '/v1/pathway/folders/move', { pathway_id: a, folder_id: westId });
      assert.deepEqual(moved.body, { pathway_id: a, old_folder_id: null, new_folder_id: westId });
      await t.request('POST', '/v1/pathway/folders/move', { pathway_id: b, folder_id: salesId });
      assert.equal((await t.request('GET', `/v1/pathway/${a}`)).body.folder_id, westId);
      const inWest = await t.request('GET', `/v1/pathway/folders/${westId}/pathways`);
      assert.deepEqual(
        (inWest.body.pathways as Json[]).map((p) => [p.id, p.name]),
        [[a, 'Outbound A']],
      );

      const renamed = await t.request('PATCH', `/v1/pathway/folders/${westId}`, { name: 'West coast' });
      assert.equal(renamed.body.name, 'West coast');
      const folders = (await t.request('GET', '/v1/pathway/folders')).body.folders as Json[];
      assert.deepEqual(
        folders.map((f) => [f.name, f.parent_folder_id]),
        [
          ['Sales', null],
          ['West coast', salesId],
        ],
      );

      // Deleting Sales: West coast and pathway B move to the top; A stays in West coast.
      assert.equal((await t.request('DELETE', `/v1/pathway/folders/${salesId}`)).status, 200);
      const left = (await t.request('GET', '/v1/pathway/folders')).body.folders as Json[];
      assert.deepEqual(
        left.map((f) => [f.folder_id, f.parent_folder_id]),
        [[westId, null]],
      );
      assert.equal((await t.request('GET', `/v1/pathway/${b}`)).body.folder_id, null);
      assert.equal((await t.request('GET', `/v1/pathway/${a}`)).body.folder_id, westId);
      const back = await t.request('POST', '/v1/pathway/folders/move', { pathway_id: a, folder_id: null });
      assert.deepEqual(back.body, { pathway_id: a, old_folder_id: westId, new_folder_id: null });
    });

    it('names wrong fields, and keeps each account to its own folders', async () => {
      const noName = await t.request('POST', '/v1/pathway/folders', {});
      assert.deepEqual(noName.body.errors, ['name is required']);
      const badParent = await t.request('POST', '/v1/pathway/folders', { name: 'x', parent_folder_id: 'nope' });
      assert.deepEqual(badParent.body.errors, ['parent_folder_id is not a folder of this account']);
      const mine = String((await t.request('POST', '/v1/pathway/folders', { name: 'Mine' })).body.folder_id);
      const p = await pathway('Mine too');
      const as = { as: t.otherKey };
      assert.equal((await t.request('GET', `/v1/pathway/folders/${mine}/pathways`, undefined, as)).status, 404);
      assert.equal((await t.request('PATCH', `/v1/pathway/folders/${mine}`, { name: 'x' }, as)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/pathway/folders/${mine}`, undefined, as)).status, 404);
      assert.deepEqual((await t.request('GET', '/v1/pathway/folders', undefined, as)).body.folders, []);
      const intoTheirs = await t.request('POST', '/v1/pathway/folders/move', { pathway_id: p, folder_id: mine }, as);
      assert.deepEqual(intoTheirs.body.errors, ['folder_id is not a folder of this account']);
      const theirPathway = await t.request('POST', '/v1/pathway/folders/move', { pathway_id: p }, as);
      assert.equal(theirPathway.status, 404);
    });
  });
