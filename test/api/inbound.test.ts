import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { LANGUAGES, MODELS } from '../../src/schemas/call.js';

type Body = Record<string, unknown>;

const inlineTool = { name: 'Check Stock', description: 'Looks up stock', url: 'https://api.example.com/stock' };
const dynamicItem = { url: 'https://api.example.com/orders', response_data: [{ name: 'order', data: '$.id' }] };
const storedDynamicItem = { ...dynamicItem, method: 'GET', cache: true };

function errorsOf(r: { body: Body }): string[] {
  return (r.body.errors as string[] | undefined) ?? [];
}

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`inbound numbers (${storage})`, () => {
    let t: TestApp;
    let toolId: string;
    let pathwayId: string;
    let foreignPathwayId: string;

    /** A fresh number of the main account with `config` as its initial settings. */
    async function buy(config: Body = { prompt: 'Answer the phone' }, as?: string): Promise<string> {
      const r = await t.request('POST', '/v1/inbound/purchase', config, as ? { as } : {});
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return String(r.body.phone_number);
    }

    async function config(phone: string): Promise<Body> {
      const r = await t.request('GET', `/v1/inbound/${encodeURIComponent(phone)}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    }

    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
      toolId = String((await t.request('POST', '/v1/tools', inlineTool)).body.tool_id);
      pathwayId = String((await t.request('POST', '/v1/pathway/create', { name: 'Front desk' })).body.pathway_id);
      foreignPathwayId = String(
        (await t.request('POST', '/v1/pathway/create', { name: 'Theirs' }, { as: t.otherKey })).body.pathway_id,
      );
    });
    after(() => t.close());

    describe('purchase', () => {
      it('allocates the lowest free sandbox number of area code 415, skipping held ones', async () => {
        const first = await t.request('POST', '/v1/inbound/purchase', {
          prompt: 'Greet callers',
          webhook: 'https://h.example.com',
        });
        assert.equal(first.status, 200);
        assert.equal(first.body.status, 'success');
        assert.equal(first.body.phone_number, '+14155550200');
        assert.equal(first.body.prompt, 'Greet callers');
        assert.equal(first.body.webhook, 'https://h.example.com');
        assert.equal(first.body.carrier, 'sandbox');
        assert.equal(first.body.model, 'enhanced');
        assert.equal(first.body.max_duration, 30);
        // Numbers are global: another account gets the next one.
        const second = await t.request('POST', '/v1/inbound/purchase', { prompt: 'x' }, { as: t.otherKey });
        assert.equal(second.body.phone_number, '+14155550201');
      });

      it('honours area_code and country_code', async () => {
        const ny = await t.request('POST', '/v1/inbound/purchase', { area_code: '212' });
        assert.equal(ny.status, 200);
        assert.equal(ny.body.phone_number, '+12125550200');
        assert.equal(ny.body.prompt, null);
        const ca = await t.request('POST', '/v1/inbound/purchase', { country_code: 'CA' });
        assert.equal(ca.body.phone_number, '+14165550200');
        const vancouver = await t.request('POST', '/v1/inbound/purchase', { country_code: 'CA', area_code: '604' });
        assert.equal(vancouver.body.phone_number, '+16045550200');
      });

      it('takes a specific number once; anyone asking for it again gets 409', async () => {
        const r = await t.request('POST', '/v1/inbound/purchase', { phone_number: '(303) 555-0777', prompt: 'Hi' });
        assert.equal(r.status, 200);
        assert.equal(r.body.phone_number, '+13035550777');
        for (const as of [t.key, t.otherKey]) {
          const again = await t.request('POST', '/v1/inbound/purchase', { phone_number: '+13035550777' }, { as });
          assert.equal(again.status, 409);
          assert.equal(again.body.status, 'error');
          assert.equal(again.body.code, 'CONFLICT');
        }
      });

      const invalid: [string, Body, string][] = [
        ['area_code of 2 digits', { area_code: '41' }, 'area_code must be 3 digits'],
        ['area_code starting with 1', { area_code: '123' }, 'area_code must be 3 digits'],
        ['area_code as a number out of range', { area_code: 41 }, 'area_code must be 3 digits'],
        ['unassigned area_code', { area_code: '999' }, 'area_code 999 is not an assigned area code'],
        ['area_code of another country', { area_code: '416', country_code: 'US' }, 'area_code 416 is not in US'],
        ['country_code', { country_code: 'MX' }, 'country_code must be one of: US, CA'],
        ['invalid phone_number', { phone_number: '555' }, 'phone_number '],
        ['foreign phone_number', { phone_number: '+442071838750' }, 'phone_number must be a US or Canadian number'],
        [
          'phone_number of another country',
          { phone_number: '+14165550300', country_code: 'US' },
          'phone_number is not a number in US',
        ],
        [
          'phone_number outside area_code',
          { phone_number: '+14155550300', area_code: '212' },
          'phone_number is not in area code 212',
        ],
        ['sandbox persona', { phone_number: '+14155550101' }, 'phone_number is a sandbox persona number'],
        ['invalid initial setting', { model: 'fast' }, 'model must be one of'],
        ['unknown tool id', { tools: ['TL-nope'] }, 'tools[0] is not a tool or knowledge base of this account'],
      ];
      for (const [label, body, expected] of invalid) {
        it(`rejects ${label}`, async () => {
          const r = await t.request('POST', '/v1/inbound/purchase', body);
          assert.equal(r.status, 400, JSON.stringify(r.body));
          assert.ok(
            errorsOf(r).some((e) => e.startsWith(expected)),
            `${expected} not in ${JSON.stringify(errorsOf(r))}`,
          );
        });
      }
    });

    describe('read', () => {
      it('lists only the numbers of the account, with their configuration', async () => {
        const phone = await buy({ area_code: '305', prompt: 'Listed' });
        const list = await t.request('GET', '/v1/inbound');
        assert.equal(list.status, 200);
        assert.equal(list.body.status, 'success');
        const numbers = list.body.inbound_numbers as Body[];
        const mine = numbers.find((n) => n.phone_number === phone);
        assert.ok(mine);
        assert.equal(mine.prompt, 'Listed');
        assert.equal(typeof mine.created_at, 'string');
        assert.ok(!numbers.some((n) => n.phone_number === '+14155550201'), 'the other account number is not listed');
        const theirs = await t.request('GET', '/v1/inbound', undefined, { as: t.otherKey });
        assert.ok(!(theirs.body.inbound_numbers as Body[]).some((n) => n.phone_number === phone));
      });

      it('gets one number with every seed 2.4 setting, defaults filled', async () => {
        const phone = await buy({ area_code: '305', prompt: 'Defaults' });
        const got = await config(phone);
        assert.deepEqual(
          { ...got, phone_number: undefined, created_at: undefined, updated_at: undefined },
          {
            status: 'success',
            phone_number: undefined,
            created_at: undefined,
            updated_at: undefined,
            carrier: 'sandbox',
            prompt: 'Defaults',
            persona_id: null,
            persona_settings: null,
            pathway_id: null,
            voice: 'mason',
            background_track: null,
            first_sentence: null,
            wait_for_greeting: false,
            interruption_threshold: 100,
            model: 'enhanced',
            tools: null,
            language: 'en-US',
            timezone: 'America/Los_Angeles',
            transfer_phone_number: null,
            transfer_list: null,
            dynamic_data: null,
            keywords: [],
            max_duration: 30,
            webhook: null,
            analysis_schema: null,
            metadata: null,
            summary_prompt: null,
            analysis_prompt: null,
            record: false,
            label: null,
          },
        );
      });
    });

    describe('path number forms', () => {
      let phone: string;
      before(async () => {
        phone = await buy({ area_code: '720', prompt: 'Forms' });
        assert.equal(phone, '+17205550200');
      });
      const forms = ['+17205550200', '%2B17205550200', '%2b17205550200', '17205550200', '7205550200'];
      for (const form of forms) {
        it(`reads and updates ${form} as the same number`, async () => {
          const got = await t.request('GET', `/v1/inbound/${form}`);
          assert.equal(got.status, 200, form);
          assert.equal(got.body.phone_number, phone);
          const updated = await t.request('POST', `/v1/inbound/${form}`, { first_sentence: `Via ${form}` });
          assert.equal(updated.status, 200, form);
          assert.equal((await config(phone)).first_sentence, `Via ${form}`);
          assert.equal((await t.request('GET', `/api/v1/inbound/${form}`)).status, 200);
        });
      }
      for (const form of ['abc', '12345', '720555020', '%2B1720555', '+1720555020x']) {
        it(`rejects the path number ${form} with 400 naming phone_number`, async () => {
          for (const method of ['GET', 'POST'] as const) {
            const r = await t.request(method, `/v1/inbound/${form}`, method === 'POST' ? { prompt: 'x' } : undefined);
            assert.equal(r.status, 400, `${method} ${form}`);
            assert.ok(errorsOf(r)[0]?.startsWith('phone_number '), JSON.stringify(r.body));
          }
        });
      }
      it('answers 404 for a valid number nobody holds', async () => {
        for (const method of ['GET', 'POST'] as const) {
          const r = await t.request(
            method,
            '/v1/inbound/+12025550999',
            method === 'POST' ? { prompt: 'x' } : undefined,
          );
          assert.equal(r.status, 404);
          assert.equal(r.body.code, 'NOT_FOUND');
        }
      });
    });

    describe('update', () => {
      it("takes task, Send Call's name for the instructions, as the prompt; prompt wins when both are sent", async () => {
        const bought = await t.request('POST', '/v1/inbound/purchase', { task: 'Answer as the front desk.' });
        assert.equal(bought.status, 200, JSON.stringify(bought.body));
        assert.equal(bought.body.prompt, 'Answer as the front desk.');
        const phone = String(bought.body.phone_number);
        const r = await t.request('POST', `/v1/inbound/${encodeURIComponent(phone)}`, { task: 'Take orders.' });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body.updates, { prompt: 'Take orders.' });
        assert.equal((await config(phone)).prompt, 'Take orders.');
        const both = await t.request('POST', `/v1/inbound/${encodeURIComponent(phone)}`, {
          prompt: 'The prompt',
          task: 'The task',
        });
        assert.deepEqual(both.body.updates, { prompt: 'The prompt' });
        const typed = await t.request('POST', `/v1/inbound/${encodeURIComponent(phone)}`, { task: 7 });
        assert.equal(typed.status, 400);
        assert.deepEqual(errorsOf(typed), ['task must be a string or null']);
      });

      it('applies every seed 2.4 setting, normalized, and returns what changed', async () => {
        const phone = await buy();
        const body = {
          prompt: 'Take orders',
          voice: 'evelyn',
          background_track: 'cafe',
          first_sentence: 'Thanks for calling!',
          wait_for_greeting: true,
          interruption_threshold: 150,
          model: 'base',
          tools: [toolId, inlineTool],
          language: 'en-GB',
          timezone: 'Europe/London',
          transfer_phone_number: '(415) 555-0110',
          transfer_list: { default: '4155550110', sales: '+1 415 555 0111' },
          dynamic_data: [dynamicItem],
          keywords: ['Openline', 'pizza:3'],
          max_duration: 10,
          webhook: 'https://hooks.example.com/inbound',
          analysis_schema: { order_total: 'number' },
          metadata: { store: 12 },
          summary_prompt: 'Summarize the order',
          analysis_prompt: 'Extract the total',
          record: true,
          unknown_field: 'ignored',
        };
        const r = await t.request('POST', `/v1/inbound/${phone}`, body);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.status, 'success');
        assert.equal(r.body.message, 'Inbound number updated');
        const expected = {
          ...body,
          unknown_field: undefined,
          tools: [toolId, { ...inlineTool, method: 'GET', timeout: 10000 }],
          transfer_phone_number: '+14155550110',
          transfer_list: { default: '+14155550110', sales: '+14155550111' },
          dynamic_data: [storedDynamicItem],
        };
        delete expected.unknown_field;
        assert.deepEqual(r.body.updates, expected);
        const stored = await config(phone);
        for (const [key, value] of Object.entries(expected)) assert.deepEqual(stored[key], value, key);
        assert.equal('unknown_field' in stored, false);
      });

      it('changes only the settings sent', async () => {
        const phone = await buy({ prompt: 'Keep me', voice: 'maya', record: true });
        const r = await t.request('POST', `/v1/inbound/${phone}`, { max_duration: 5 });
        assert.equal(r.status, 200);
        assert.deepEqual(r.body.updates, { max_duration: 5 });
        const stored = await config(phone);
        assert.equal(stored.prompt, 'Keep me');
        assert.equal(stored.voice, 'maya');
        assert.equal(stored.record, true);
        assert.equal(stored.max_duration, 5);
      });

      const invalid: [string, unknown][] = [
        ['prompt', 5],
        ['pathway_id', 7],
        ['voice', 7],
        ['background_track', 'jazz'],
        ['first_sentence', false],
        ['wait_for_greeting', 'yes'],
        ['interruption_threshold', -5],
        ['model', 'fast'],
        ['tools', 'TL-1'],
        ['language', 'klingon'],
        ['timezone', 'Mars/Olympus'],
        ['transfer_phone_number', '123'],
        ['transfer_list', ['+14155550110']],
        ['dynamic_data', 5],
        ['keywords', 'pizza'],
        ['max_duration', 0],
        ['webhook', 'not a url'],
        ['analysis_schema', 'total'],
        ['metadata', [1]],
        ['summary_prompt', 1],
        ['analysis_prompt', 7],
        ['record', 'on'],
      ];
      it('refuses an update that gives no field once empty values count as not given', async () => {
        const phone = await buy();
        const r = await t.request('POST', `/v1/inbound/${phone}`, { analysis_prompt: {}, voice: [] });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.match(errorsOf(r)[0]!, /^the body gives no field to update .*expected one of: .*prompt/);
      });

      for (const [field, value] of invalid) {
        it(`rejects an invalid ${field}, naming it in errors and failed_updates`, async () => {
          const phone = await buy();
          const r = await t.request('POST', `/v1/inbound/${phone}`, { [field]: value });
          assert.equal(r.status, 400, JSON.stringify(r.body));
          assert.equal(r.body.status, 'error');
          assert.equal(typeof r.body.message, 'string');
          assert.ok(
            errorsOf(r).some((e) => e.startsWith(`${field} `)),
            JSON.stringify(errorsOf(r)),
          );
          assert.deepEqual(Object.keys(r.body.failed_updates as Body), [field]);
        });
      }

      const nested: [string, Body, string][] = [
        ['transfer_list.sales', { transfer_list: { default: '+14155550110', sales: 'call me' } }, 'transfer_list'],
        ['dynamic_data[0].url', { dynamic_data: [{ ...dynamicItem, url: 'nope' }] }, 'dynamic_data'],
        ['dynamic_data.url', { dynamic_data: { ...dynamicItem, url: 'nope' } }, 'dynamic_data'],
        ['dynamic_data[0].response_data', { dynamic_data: [{ url: 'https://a.example' }] }, 'dynamic_data'],
        ['tools[0].url', { tools: [{ ...inlineTool, url: 'ftp://x.example' }] }, 'tools'],
        ['tools[1]', { tools: [toolId, 'TL-missing'] }, 'tools'],
        ['keywords[1]', { keywords: ['ok', ''] }, 'keywords'],
        ['pathway_id', { pathway_id: 'no-such-pathway' }, 'pathway_id'],
      ];
      for (const [name, body, setting] of nested) {
        it(`names ${name} when it is invalid`, async () => {
          const phone = await buy();
          const r = await t.request('POST', `/v1/inbound/${phone}`, body);
          assert.equal(r.status, 400, JSON.stringify(r.body));
          assert.ok(
            errorsOf(r).some((e) => e.startsWith(`${name} `)),
            JSON.stringify(errorsOf(r)),
          );
          assert.ok(setting in (r.body.failed_updates as Body), JSON.stringify(r.body.failed_updates));
        });
      }

      it('is atomic: one invalid setting and nothing is applied, every problem is reported', async () => {
        const phone = await buy({ prompt: 'Original', voice: 'maya' });
        const before = await config(phone);
        const r = await t.request('POST', `/v1/inbound/${phone}`, {
          prompt: 'Changed',
          voice: 'ryan',
          record: true,
          model: 'warp',
          timezone: 'Nowhere/Land',
        });
        assert.equal(r.status, 400);
        assert.deepEqual(Object.keys(r.body.failed_updates as Body).sort(), ['model', 'timezone']);
        assert.equal(errorsOf(r).length, 2);
        assert.deepEqual(await config(phone), before);
      });

      it('a pathway resets prompt, first_sentence, model, dynamic_data, tools and transfer_list', async () => {
        const phone = await buy({
          prompt: 'Old prompt',
          first_sentence: 'Hello',
          model: 'turbo',
          dynamic_data: [dynamicItem],
          tools: [toolId],
          transfer_list: { default: '+14155550110' },
          transfer_phone_number: '+14155550110',
          voice: 'maya',
        });
        const r = await t.request('POST', `/v1/inbound/${phone}`, { pathway_id: pathwayId });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body.updates, {
          pathway_id: pathwayId,
          prompt: null,
          first_sentence: null,
          model: 'enhanced',
          dynamic_data: null,
          tools: null,
          transfer_list: null,
        });
        const stored = await config(phone);
        assert.equal(stored.pathway_id, pathwayId);
        assert.equal(stored.prompt, null);
        assert.equal(stored.model, 'enhanced');
        assert.equal(stored.voice, 'maya', 'settings a pathway does not replace are kept');
        assert.equal(stored.transfer_phone_number, '+14155550110');
      });

      it('keeps settings sent together with the pathway', async () => {
        const phone = await buy({ prompt: 'Old', first_sentence: 'Old hello' });
        const r = await t.request('POST', `/v1/inbound/${phone}`, {
          pathway_id: pathwayId,
          first_sentence: 'New hello',
        });
        assert.equal(r.status, 200);
        const stored = await config(phone);
        assert.equal(stored.first_sentence, 'New hello');
        assert.equal(stored.prompt, null);
      });

      it("refuses another account's pathway", async () => {
        const phone = await buy();
        const r = await t.request('POST', `/v1/inbound/${phone}`, { pathway_id: foreignPathwayId });
        assert.equal(r.status, 400);
        assert.ok(errorsOf(r)[0]?.startsWith('pathway_id is an unknown pathway'));
      });

      for (const cleared of [null, '']) {
        it(`pathway_id ${JSON.stringify(cleared)} clears the pathway; a prompt is then required`, async () => {
          const phone = await buy({ prompt: 'Before' });
          assert.equal((await t.request('POST', `/v1/inbound/${phone}`, { pathway_id: pathwayId })).status, 200);
          const without = await t.request('POST', `/v1/inbound/${phone}`, { pathway_id: cleared });
          assert.equal(without.status, 400);
          assert.deepEqual(errorsOf(without), ['prompt is required']);
          assert.deepEqual(without.body.failed_updates, { prompt: 'prompt is required' });
          assert.equal((await config(phone)).pathway_id, pathwayId, 'nothing applied');
          const r = await t.request('POST', `/v1/inbound/${phone}`, { pathway_id: cleared, prompt: 'After' });
          assert.equal(r.status, 200);
          assert.deepEqual(r.body.updates, { pathway_id: null, prompt: 'After' });
          const stored = await config(phone);
          assert.equal(stored.pathway_id, null);
          assert.equal(stored.prompt, 'After');
        });

        it(`dynamic_data ${JSON.stringify(cleared)} clears it`, async () => {
          const phone = await buy({ prompt: 'p', dynamic_data: [dynamicItem] });
          const r = await t.request('POST', `/v1/inbound/${phone}`, { dynamic_data: cleared });
          assert.equal(r.status, 200);
          assert.deepEqual(r.body.updates, { dynamic_data: null });
          assert.equal((await config(phone)).dynamic_data, null);
        });
      }

      it('accepts a single dynamic_data object and stores it as a one-item array', async () => {
        const phone = await buy();
        const r = await t.request('POST', `/v1/inbound/${phone}`, { dynamic_data: { ...dynamicItem, cache: false } });
        assert.equal(r.status, 200);
        assert.deepEqual((await config(phone)).dynamic_data, [{ ...storedDynamicItem, cache: false }]);
      });

      it('null removes transfer_phone_number and resets other settings to their defaults', async () => {
        const phone = await buy({
          prompt: 'p',
          transfer_phone_number: '+14155550110',
          model: 'turbo',
          keywords: ['a'],
          record: true,
          voice: 'maya',
        });
        const r = await t.request('POST', `/v1/inbound/${phone}`, {
          transfer_phone_number: null,
          model: null,
          keywords: null,
          record: null,
          voice: null,
        });
        assert.equal(r.status, 200);
        const stored = await config(phone);
        assert.equal(stored.transfer_phone_number, null);
        assert.equal(stored.model, 'enhanced');
        assert.deepEqual(stored.keywords, []);
        assert.equal(stored.record, false);
        assert.equal(stored.voice, 'mason');
      });

      it('requires a prompt when the number has neither prompt nor pathway', async () => {
        const phone = await buy({ area_code: '206' });
        const r = await t.request('POST', `/v1/inbound/${phone}`, { voice: 'maya' });
        assert.equal(r.status, 400);
        assert.deepEqual(errorsOf(r), ['prompt is required']);
        const cleared = await t.request('POST', `/v1/inbound/${phone}`, { prompt: '   ' });
        assert.equal(cleared.status, 400);
        assert.equal((await t.request('POST', `/v1/inbound/${phone}`, { pathway_id: pathwayId })).status, 200);
      });

      it('accepts every language and model of the seed', async () => {
        const phone = await buy();
        for (const language of LANGUAGES) {
          const r = await t.request('POST', `/v1/inbound/${phone}`, { language });
          assert.equal(r.status, 200, language);
        }
        for (const model of MODELS) {
          const r = await t.request('POST', `/v1/inbound/${phone}`, { model });
          assert.equal(r.status, 200, model);
          assert.equal((await config(phone)).model, model);
        }
        for (const background_track of ['office', 'cafe', 'restaurant', 'none', null]) {
          const r = await t.request('POST', `/v1/inbound/${phone}`, { background_track });
          assert.equal(r.status, 200, String(background_track));
        }
      });

      it('keeps every one of many concurrent partial updates', async () => {
        const phone = await buy();
        const fields: Body[] = [
          { voice: 'maya' },
          { record: true },
          { max_duration: 7 },
          { first_sentence: 'Hi' },
          { language: 'de' },
          { model: 'base' },
          { webhook: 'https://h.example.com' },
          { metadata: { a: 1 } },
        ];
        const replies = await Promise.all(fields.map((f) => t.request('POST', `/v1/inbound/${phone}`, f)));
        for (const r of replies) assert.equal(r.status, 200, JSON.stringify(r.body));
        const stored = await config(phone);
        for (const f of fields) for (const [k, v] of Object.entries(f)) assert.deepEqual(stored[k], v, k);
      });

      it('ignores the encrypted_key header for sandbox numbers', async () => {
        const phone = await buy();
        const r = await t.request(
          'POST',
          `/v1/inbound/${phone}`,
          { record: true },
          { headers: { encrypted_key: 'x' } },
        );
        assert.equal(r.status, 200);
      });
    });

    describe('security', () => {
      it("answers 404 for another account's number, exactly as for a missing one", async () => {
        const theirs = await buy({ area_code: '512', prompt: 'Theirs' }, t.otherKey);
        const missing = await t.request('GET', '/v1/inbound/+15125550999');
        for (const form of [theirs, encodeURIComponent(theirs), theirs.slice(2)]) {
          const got = await t.request('GET', `/v1/inbound/${form}`);
          assert.equal(got.status, 404);
          assert.deepEqual(got.body, missing.body);
          const updated = await t.request('POST', `/v1/inbound/${form}`, { prompt: 'Hijacked' });
          assert.equal(updated.status, 404);
        }
        const stored = await t.request('GET', `/v1/inbound/${theirs}`, undefined, { as: t.otherKey });
        assert.equal(stored.body.prompt, 'Theirs');
      });

      it('requires an API key', async () => {
        const phone = await buy();
        for (const [method, url] of [
          ['GET', '/v1/inbound'],
          ['GET', `/v1/inbound/${phone}`],
          ['POST', `/v1/inbound/${phone}`],
          ['POST', '/v1/inbound/purchase'],
        ] as const) {
          for (const as of [null, 'wrong-key']) {
            const r = await t.request(method, url, method === 'POST' ? { prompt: 'x' } : undefined, { as });
            assert.equal(r.status, 401, `${method} ${url}`);
            assert.equal(r.body.status, 'error');
          }
        }
      });
    });
  });
