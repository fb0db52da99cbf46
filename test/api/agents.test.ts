import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { LANGUAGES, MODELS } from '../../src/schemas/call.js';

const AGENT_KEYS = [
  'agent_id',
  'created_at',
  'dynamic_data',
  'first_sentence',
  'interruption_threshold',
  'language',
  'max_duration',
  'model',
  'prompt',
  'temperature',
  'tools',
  'voice',
  'voice_settings',
  'webhook',
];

const inlineTool = { name: 'Check Stock', description: 'Looks up stock', url: 'https://api.example.com/stock' };
const dynamicItem = { url: 'https://api.example.com/weather', response_data: [{ name: 'temp', data: '$.t' }] };

type Agent = Record<string, unknown>;

function errorsOf(r: { body: Record<string, unknown> }): string[] {
  return (r.body.errors as string[] | undefined) ?? [];
}

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`agents (${storage})`, () => {
    let t: TestApp;
    let toolId: string;
    let foreignToolId: string;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
      toolId = String((await t.request('POST', '/v1/tools', { ...inlineTool, name: 'Book Slot' })).body.tool_id);
      foreignToolId = String(
        (await t.request('POST', '/v1/tools', { ...inlineTool, name: 'Other Lookup' }, { as: t.otherKey })).body
          .tool_id,
      );
    });
    after(() => t.close());

    it('creates an agent from a prompt alone, with the defaults and exactly the seed 2.6 fields', async () => {
      const r = await t.request('POST', '/v1/agents', { prompt: 'Answer questions about opening hours' });
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'success');
      const agent = r.body.agent as Agent;
      assert.equal(r.body.agent_id, agent.agent_id);
      assert.match(String(agent.agent_id), /^[0-9a-f-]{36}$/);
      assert.deepEqual(Object.keys(agent).sort(), AGENT_KEYS);
      assert.deepEqual(
        { ...agent, agent_id: undefined, created_at: undefined },
        {
          agent_id: undefined,
          created_at: undefined,
          prompt: 'Answer questions about opening hours',
          voice: 'mason',
          model: 'enhanced',
          max_duration: 30,
          language: 'en-US',
          webhook: null,
          dynamic_data: null,
          interruption_threshold: null,
          first_sentence: null,
          voice_settings: null,
          temperature: null,
          tools: null,
        },
      );
      for (const prefix of ['/v1', '/api/v1']) {
        const got = await t.request('GET', `${prefix}/agents/${String(agent.agent_id)}`);
        assert.equal(got.status, 200);
        assert.deepEqual(got.body.agent, agent);
      }
    });

    it('stores every field, normalized, and ignores unknown ones', async () => {
      const r = await t.request('POST', '/v1/agents', {
        prompt: 'Sell the premium plan',
        voice: 'Maya',
        webhook: 'https://hooks.example.com/end',
        dynamic_data: [{ ...dynamicItem, method: 'post', body: { to: '{{to}}' }, extra: 1 }],
        interruption_threshold: 80,
        first_sentence: 'Hi there!',
        model: 'turbo',
        voice_settings: { speed: 1.1 },
        temperature: 0.2,
        max_duration: 12,
        language: 'fr',
        tools: [toolId, { ...inlineTool, method: 'post', body: { q: '{{input}}' } }],
        color: 'blue',
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const agent = r.body.agent as Agent;
      assert.deepEqual(Object.keys(agent).sort(), AGENT_KEYS);
      assert.equal(agent.voice, 'Maya');
      assert.equal(agent.webhook, 'https://hooks.example.com/end');
      assert.deepEqual(agent.dynamic_data, [{ ...dynamicItem, method: 'POST', cache: true, body: { to: '{{to}}' } }]);
      assert.deepEqual(agent.voice_settings, { speed: 1.1 });
      assert.equal(agent.model, 'turbo');
      assert.equal(agent.temperature, 0.2);
      assert.equal(agent.max_duration, 12);
      assert.equal(agent.language, 'fr');
      assert.deepEqual(agent.tools, [
        toolId,
        { ...inlineTool, method: 'POST', timeout: 10000, body: { q: '{{input}}' } },
      ]);
      const list = await t.request('GET', '/v1/agents');
      assert.equal(list.status, 200);
      const listed = (list.body.agents as Agent[]).find((a) => a.agent_id === agent.agent_id);
      assert.deepEqual(listed, agent);
      for (const item of list.body.agents as Agent[]) assert.deepEqual(Object.keys(item).sort(), AGENT_KEYS);
    });

    const invalid: [string, Record<string, unknown>, string][] = [
      ['missing prompt', { prompt: undefined }, 'prompt is required'],
      ['empty prompt', { prompt: '' }, 'prompt must not be empty'],
      ['prompt not a string', { prompt: 5 }, 'prompt must be a string'],
      ['webhook not http(s)', { webhook: 'ftp://example.com' }, 'webhook must begin with'],
      ['webhook not a URL', { webhook: 'nope' }, 'webhook must be a valid URL'],
      ['dynamic_data not an array', { dynamic_data: { url: 'https://a.example' } }, 'dynamic_data must be'],
      ['dynamic_data url', { dynamic_data: [{ ...dynamicItem, url: 'x' }] }, 'dynamic_data[0].url must be a valid URL'],
      [
        'dynamic_data response_data',
        { dynamic_data: [{ url: 'https://a.example' }] },
        'dynamic_data[0].response_data is required',
      ],
      [
        'dynamic_data method',
        { dynamic_data: [{ ...dynamicItem, method: 'PUT' }] },
        'dynamic_data[0].method must be GET or POST',
      ],
      [
        'dynamic_data cache',
        { dynamic_data: [{ ...dynamicItem, cache: 'yes' }] },
        'dynamic_data[0].cache must be a boolean',
      ],
      ['interruption_threshold type', { interruption_threshold: 'low' }, 'interruption_threshold must be'],
      ['interruption_threshold negative', { interruption_threshold: -1 }, 'interruption_threshold must be >= 0'],
      ['first_sentence type', { first_sentence: 3 }, 'first_sentence must be'],
      ['model', { model: 'fast' }, 'model must be one of: base, enhanced, turbo'],
      ['voice_settings', { voice_settings: 'loud' }, 'voice_settings must be'],
      ['temperature above 1', { temperature: 1.5 }, 'temperature must be <= 1'],
      ['temperature below 0', { temperature: -0.1 }, 'temperature must be >= 0'],
      ['max_duration zero', { max_duration: 0 }, 'max_duration must be > 0'],
      ['max_duration over a day', { max_duration: 1441 }, 'max_duration must be <= 1440'],
      ['language', { language: 'xx' }, 'language must be one of: en, en-US'],
      ['tools not an array', { tools: 'TL-1' }, 'tools must be'],
      ['unknown tool id', { tools: ['TL-missing'] }, 'tools[0] is not a tool or knowledge base of this account'],
      ['inline tool url', { tools: [{ ...inlineTool, url: 'ftp://x' }] }, 'tools[0].url must begin with'],
    ];
    for (const [label, fields, expected] of invalid) {
      it(`rejects ${label}, naming the field`, async () => {
        const r = await t.request('POST', '/v1/agents', { prompt: 'p', ...fields });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.status, 'error');
        assert.ok(
          errorsOf(r).some((e) => e.startsWith(expected)),
          `${expected} not in ${JSON.stringify(errorsOf(r))}`,
        );
      });
    }

    it('reports every problem at once', async () => {
      const r = await t.request('POST', '/v1/agents', {
        model: 'x',
        language: 'xx',
        temperature: 2,
        tools: ['TL-nope'],
      });
      assert.equal(r.status, 400);
      const errors = errorsOf(r);
      for (const field of ['prompt', 'model', 'language', 'temperature', 'tools[0]']) {
        assert.ok(
          errors.some((e) => e.startsWith(`${field} `)),
          `${field}: ${JSON.stringify(errors)}`,
        );
      }
    });

    it('accepts every language and model of the seed', async () => {
      for (const language of LANGUAGES) {
        const r = await t.request('POST', '/v1/agents', { prompt: 'p', language });
        assert.equal(r.status, 200, language);
        assert.equal((r.body.agent as Agent).language, language);
      }
      for (const model of MODELS) {
        const r = await t.request('POST', '/v1/agents', { prompt: 'p', model });
        assert.equal(r.status, 200, model);
        assert.equal((r.body.agent as Agent).model, model);
      }
    });

    it('updates only the fields sent, null clears, and an invalid update changes nothing', async () => {
      const created = await t.request('POST', '/v1/agents', {
        prompt: 'Original',
        webhook: 'https://hooks.example.com/a',
        temperature: 0.5,
        tools: [toolId],
      });
      const id = String(created.body.agent_id);
      const updated = await t.request('POST', `/v1/agents/${id}`, {
        first_sentence: 'Hello!',
        webhook: null,
        temperature: null,
        model: 'base',
      });
      assert.equal(updated.status, 200);
      assert.equal(updated.body.status, 'success');
      assert.equal(typeof updated.body.message, 'string');
      const agent = updated.body.agent as Agent;
      assert.equal(agent.prompt, 'Original');
      assert.equal(agent.first_sentence, 'Hello!');
      assert.equal(agent.webhook, null);
      assert.equal(agent.temperature, null);
      assert.equal(agent.model, 'base');
      assert.deepEqual(agent.tools, [toolId]);
      assert.equal(agent.created_at, (created.body.agent as Agent).created_at);

      const bad = await t.request('POST', `/v1/agents/${id}`, { prompt: 'Changed', temperature: 3, tools: ['TL-x'] });
      assert.equal(bad.status, 400);
      assert.deepEqual(
        errorsOf(bad)
          .map((e) => e.split(' ')[0])
          .sort(),
        ['temperature', 'tools[0]'],
      );
      // An empty prompt counts as not given: the update then names no field at all.
      const emptied = await t.request('POST', `/v1/agents/${id}`, { prompt: '' });
      assert.equal(emptied.status, 400);
      assert.match(errorsOf(emptied)[0]!, /^the body gives no field to update .*expected one of: .*prompt/);
      const after = await t.request('GET', `/v1/agents/${id}`);
      assert.deepEqual(after.body.agent, agent);
    });

    it('keeps every one of many concurrent partial updates', async () => {
      const id = String((await t.request('POST', '/v1/agents', { prompt: 'Busy' })).body.agent_id);
      const fields: Agent[] = [
        { voice: 'maya' },
        { temperature: 0.1 },
        { max_duration: 7 },
        { first_sentence: 'Hi' },
        { language: 'de' },
        { model: 'base' },
        { webhook: 'https://h.example.com' },
        { voice_settings: { a: 1 } },
      ];
      const replies = await Promise.all(fields.map((f) => t.request('POST', `/v1/agents/${id}`, f)));
      for (const r of replies) assert.equal(r.status, 200, JSON.stringify(r.body));
      const stored = (await t.request('GET', `/v1/agents/${id}`)).body.agent as Agent;
      for (const f of fields) for (const [k, v] of Object.entries(f)) assert.deepEqual(stored[k], v, k);
    });

    it('deletes an agent', async () => {
      const id = String((await t.request('POST', '/v1/agents', { prompt: 'Temporary' })).body.agent_id);
      const deleted = await t.request('DELETE', `/v1/agents/${id}`);
      assert.equal(deleted.status, 200);
      assert.equal(deleted.body.status, 'success');
      assert.equal((await t.request('GET', `/v1/agents/${id}`)).status, 404);
      assert.equal((await t.request('POST', `/v1/agents/${id}`, { prompt: 'x' })).status, 404);
      assert.equal((await t.request('DELETE', `/v1/agents/${id}`)).status, 404);
      assert.ok(!((await t.request('GET', '/v1/agents')).body.agents as Agent[]).some((a) => a.agent_id === id));
    });

    it('answers 404 for an unknown agent', async () => {
      const r = await t.request('GET', '/v1/agents/00000000-0000-4000-8000-000000000000');
      assert.equal(r.status, 404);
      assert.equal(r.body.status, 'error');
      assert.equal(r.body.code, 'NOT_FOUND');
    });

    it('hides agents from other accounts, refuses their tools, and requires a key', async () => {
      const id = String((await t.request('POST', '/v1/agents', { prompt: 'Private' })).body.agent_id);
      const as = { as: t.otherKey };
      assert.equal((await t.request('GET', `/v1/agents/${id}`, undefined, as)).status, 404);
      assert.equal((await t.request('POST', `/v1/agents/${id}`, { prompt: 'Hijack' }, as)).status, 404);
      assert.equal((await t.request('DELETE', `/v1/agents/${id}`, undefined, as)).status, 404);
      assert.deepEqual((await t.request('GET', '/v1/agents', undefined, as)).body.agents, []);
      assert.equal(((await t.request('GET', `/v1/agents/${id}`)).body.agent as Agent).prompt, 'Private');

      const foreign = await t.request('POST', '/v1/agents', { prompt: 'p', tools: [foreignToolId] });
      assert.equal(foreign.status, 400);
      assert.ok(errorsOf(foreign)[0]?.startsWith('tools[0] is not a tool or knowledge base of this account'));

      for (const [method, url] of [
        ['GET', '/v1/agents'],
        ['POST', '/v1/agents'],
        ['GET', `/v1/agents/${id}`],
        ['POST', `/v1/agents/${id}`],
        ['DELETE', `/v1/agents/${id}`],
      ] as const) {
        const r = await t.request(method, url, method === 'POST' ? { prompt: 'x' } : undefined, { as: null });
        assert.equal(r.status, 401, `${method} ${url}`);
        assert.equal(r.body.status, 'error');
      }
    });
  });
