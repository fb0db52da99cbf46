import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { normalizeLanguage } from '../../src/domain/language.js';

type Json = Record<string, unknown>;

describe('real clients of the hosted API: the leniency rule', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('Send Call with the nulls, empty values and legacy codes exported code snippets carry', async () => {
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the appointment.',
      from: null,
      temperature: null,
      start_time: null,
      webhook: null,
      first_sentence: '',
      pathway_id: '',
      language: 'ENG',
      dynamic_data: {},
      tools: [{}],
      transfer_list: {},
      keywords: [],
      voice: null,
      max_duration: null,
      metadata: { source: 'snippet' },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.warnings, undefined);
    const record = (await t.request('GET', `/v1/calls/${String(r.body.call_id)}`)).body;
    const request = record.request_data as Json;
    assert.equal(request.language, 'en');
    assert.equal(request.temperature, 0.7, 'null temperature: the default');
    assert.equal(request.max_duration, 30);
    assert.equal(request.pathway_id, null);
    assert.deepEqual(request.tools, []);
    assert.deepEqual(request.dynamic_data, []);
    assert.equal(request.start_time, null);
    assert.deepEqual(record.warnings, []);
  });

  it('bodies without a JSON content type: empty is no body, JSON text is JSON, anything else a 415', async () => {
    const send = (contentType: string, payload: string, url = '/v1/calls') =>
      t.request('POST', url, payload, { headers: { 'content-type': contentType } });
    const queued = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Say hello.',
      start_time: '2030-01-01T00:00:00Z',
    });
    // An empty form, as clients POST to stop a call.
    const stopped = await send(
      'application/x-www-form-urlencoded',
      '',
      `/v1/calls/${String(queued.body.call_id)}/stop`,
    );
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    // fetch sends a string body as text/plain.
    const json = JSON.stringify({ phone_number: '+14155550100', task: 'Say hello.' });
    for (const type of ['text/plain;charset=UTF-8', 'application/octet-stream']) {
      const r = await send(type, json);
      assert.equal(r.status, 200, `${type}: ${JSON.stringify(r.body)}`);
    }
    const broken = await send('text/plain', '{"phone_number":');
    assert.equal(broken.status, 400);
    assert.equal(broken.body.code, 'INVALID_JSON');
    const form = await send('application/x-www-form-urlencoded', 'phone_number=%2B14155550100&task=hi');
    assert.equal(form.status, 415);
    assert.equal(form.body.message, 'Content-Type must be application/json');
  });

  it('a POST with no body at all reads as {}: optional bodies are not needed, required fields are named', async () => {
    const bought = await t.request('POST', '/v1/inbound/purchase');
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    assert.match(String(bought.body.phone_number), /^\+1\d{10}$/);
    const sms = await t.request('POST', '/v1/sms/send');
    assert.equal(sms.status, 400);
    assert.ok(
      (sms.body.errors as string[]).some((e) => e.startsWith('phone_number')),
      JSON.stringify(sms.body),
    );
    for (const url of ['/v2/batches/create', '/api/registerA2PBrand']) {
      const r = await t.request('POST', url);
      assert.equal(r.status, 400, url);
      assert.ok(!(r.body.errors as string[]).includes('body must be an object'), JSON.stringify(r.body));
    }
    const block = await t.request('POST', '/v1/blocked_numbers');
    assert.equal(block.status, 400);
    assert.match((block.body.errors as string[])[0]!, /^phone_number is required/);
  });

  it('an optional query parameter sent empty is not given; a wrong one is still named', async () => {
    await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Say hello.',
      start_time: '2030-01-01',
    });
    const all = await t.request('GET', '/v1/calls');
    const empty = await t.request('GET', '/v1/calls?limit=&to_number=&answered_by=&created_after=&ascending=');
    assert.equal(empty.status, 200, JSON.stringify(empty.body));
    assert.equal(empty.body.total_count, all.body.total_count);
    const conversations = await t.request('GET', '/v1/sms/conversations?page=&pageSize=&phone_number=');
    assert.equal(conversations.status, 200, JSON.stringify(conversations.body));
    const wrong = await t.request('GET', '/v1/calls?limit=abc');
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.body.errors, ['limit must be an integer']);
  });

  it('a whole number in a query string beyond what storage counts is a 400 naming it, never a 500', async () => {
    for (const [url, name] of [
      ['/v1/batches?offset=99999999999999999999', 'offset'],
      ['/v1/calls?from=1e309', 'from'],
      ['/v1/knowledge?page=99999999999999999999', 'page'],
      ['/v1/sms/conversations?page=1e309', 'page'],
      ['/v1/agent-testing/runs?offset=99999999999999999999', 'offset'],
    ] as const) {
      const r = await t.request('GET', url);
      assert.equal(r.status, 400, `${url}: ${JSON.stringify(r.body)}`);
      assert.match(JSON.stringify(r.body.errors), new RegExp(`${name} must be <= ${Number.MAX_SAFE_INTEGER}`), url);
    }
  });

  it('a voice only the hosted service has: 200, the default voice, and a warning on the answer and the record', async () => {
    for (const voice of ['ravi', 'default_voice', '13843c96-ab9e-4938-baf3-ad53fcee541d']) {
      const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Say hello.', voice });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const warnings = r.body.warnings as string[];
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, new RegExp(`voice "${voice}" is not a voice of this server: the default voice`));
      const record = (await t.request('GET', `/v1/calls/${String(r.body.call_id)}`)).body;
      assert.equal((record.request_data as Json).voice, voice, 'kept as sent');
      assert.deepEqual(record.warnings, warnings);
    }
    const known = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Hi.', voice: 'MAYA' });
    assert.equal(known.body.warnings, undefined);
  });

  it("numbers and booleans sent as strings, and codes sent as numbers, take their field's type", async () => {
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the appointment.',
      interruption_threshold: '150',
      temperature: ' 0.5 ',
      max_duration: '5',
      record: 'true',
      wait_for_greeting: 'FALSE',
      retry: { wait: '10', voicemail_action: 'hangup' },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const request = (await t.request('GET', `/v1/calls/${String(r.body.call_id)}`)).body.request_data as Json;
    assert.deepEqual(
      [request.interruption_threshold, request.temperature, request.max_duration, request.record],
      [150, 0.5, 5, true],
    );
    assert.equal(request.wait_for_greeting, false);
    assert.equal((request.retry as Json).wait, 10);
    const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: 415 });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    assert.match(String(bought.body.phone_number), /^\+1415/);
    // Not a number, out of range, or free text: the field's own error, as ever.
    const wrong = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 12,
      interruption_threshold: 'fast',
      temperature: '1.5',
      record: 'yes',
    });
    assert.deepEqual((wrong.body.errors as string[]).map((e) => e.split(' ')[0]).sort(), [
      'interruption_threshold',
      'record',
      'task',
      'temperature',
    ]);
  });

  it('hard rules stay errors: an empty-like required field, a value out of range, a wrong type', async () => {
    const missing = await t.request('POST', '/v1/calls', { phone_number: null, task: 'x' });
    assert.equal(missing.status, 400);
    assert.ok((missing.body.errors as string[]).some((e) => e.startsWith('phone_number')));
    const hot = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'x', temperature: 3 });
    assert.equal(hot.status, 400);
    assert.ok((hot.body.errors as string[]).some((e) => e.startsWith('temperature')));
    const klingon = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'x', language: 'tlh' });
    assert.equal(klingon.status, 400);
    assert.ok((klingon.body.errors as string[]).some((e) => e.startsWith('language')));
  });

  it('an update wrapped as GET returns it is applied; one naming no field is a 400 saying what was expected', async () => {
    const created = await t.request('POST', '/v1/tools', {
      name: 'Lookup',
      description: 'Looks an order up',
      url: 'https://api.example.com/orders',
      input_schema: { type: 'object', properties: { id: { type: 'string' } } },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = String(created.body.tool_id);
    const got = await t.request('GET', `/v1/tools/${id}`);
    const wrapped = { status: 'success', tool: { ...got.body, description: 'Finds an order by its id' } };
    const updated = await t.request('POST', `/v1/tools/${id}`, wrapped);
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const after = await t.request('GET', `/v1/tools/${id}`);
    assert.equal(after.body.description, 'Finds an order by its id');

    const nothing = await t.request('POST', `/v1/tools/${id}`, { tool_name: 'Lookup', colour: 'blue' });
    assert.equal(nothing.status, 400);
    assert.match((nothing.body.errors as string[])[0]!, /gives no field to update.*expected one of: .*description/);
    assert.equal((await t.request('GET', `/v1/tools/${id}`)).body.description, 'Finds an order by its id');
  });

  it('knowledge bases, secrets, personas, citation schemas and block rules: an update naming no field is a 400', async () => {
    const kb = (await t.request('POST', '/v1/knowledge/learn', { type: 'text', name: 'FAQ', text: 'Parking is free.' }))
      .body.data as Json;
    const secret = (await t.request('POST', '/v1/secrets', { name: 'TOKEN', value: 'abc' })).body.data as Json;
    const persona = (await t.request('POST', '/v1/personas', { name: 'Front desk' })).body.data as Json;
    const schema = (await t.request('POST', '/v1/citation_schemas', { name: 'Sources' })).body.data as Json;
    await t.request('POST', '/v1/blocked_numbers', { phone_number: '+14155550107' });
    const updates: [string, string][] = [
      ['PUT', `/v1/knowledge/${String(kb.id)}`],
      ['PATCH', `/v1/knowledgebases/${String(kb.id)}`],
      ['PATCH', `/v1/secrets/${String(secret.secret_id)}`],
      ['PATCH', `/v1/personas/${String(persona.id)}`],
      ['POST', `/v1/personas/${String(persona.id)}`],
      ['PATCH', `/v1/citation_schemas?id=${String(schema.id)}`],
      ['POST', '/v1/blocked_numbers/%2B14155550107/edit'],
    ];
    for (const [method, url] of updates) {
      for (const body of [{}, { nme: 'typo' }, { name: null }]) {
        const r = await t.request(method as 'POST', url, body);
        assert.equal(r.status, 400, `${method} ${url} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.match((r.body.errors as string[])[0]!, /^the body gives no field to update/);
      }
    }
    // A field that clears with null is still a field.
    const cleared = await t.request('PUT', `/v1/knowledge/${String(kb.id)}`, { description: null });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    const renamed = await t.request('PATCH', `/v1/knowledgebases/${String(kb.id)}`, { data: { name: 'Parking' } });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.equal(((await t.request('GET', `/v1/knowledge/${String(kb.id)}`)).body.data as Json).name, 'Parking');
  });

  it('an update may still clear a field with the null or "" the field accepts', async () => {
    const phone = String(
      ((await t.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body as Json).phone_number,
    );
    const set = await t.request('POST', `/v1/inbound/${phone}`, { prompt: 'Take orders.', language: 'esp' });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const number = (await t.request('GET', `/v1/inbound/${phone}`)).body;
    assert.equal(number.language, 'es');
  });
});

describe('voice aliases (OPENLINE_VOICE_ALIASES)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({
      env: { OPENLINE_VOICE_ALIASES: 'ravi=maya, 13843C96-AB9E-4938-BAF3-AD53FCEE541D=ryan' },
    });
  });
  after(() => t.close());

  it('give a hosted voice a chosen local voice: no warning, shown on GET /v1/voices', async () => {
    for (const [voice, local] of [
      ['Ravi', 'maya'],
      ['13843c96-ab9e-4938-baf3-ad53fcee541d', 'ryan'],
    ] as const) {
      const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Hi.', voice });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.warnings, undefined);
      const record = (await t.request('GET', `/v1/calls/${String(r.body.call_id)}`)).body;
      assert.equal((record.request_data as Json).voice, local);
    }
    const voices = (await t.request('GET', '/v1/voices')).body.voices as Json[];
    assert.deepEqual(voices.find((v) => v.name === 'maya')!.aliases, ['ravi']);
    assert.deepEqual(voices.find((v) => v.name === 'ryan')!.aliases, ['13843c96-ab9e-4938-baf3-ad53fcee541d']);
    assert.equal(((await t.request('GET', '/v1/voices/ravi')).body.voice as Json).name, 'maya');
    const agent = await t.request('POST', '/v1/agents', { prompt: 'Help.', voice: 'ravi' });
    assert.equal((agent.body.agent as Json).voice, 'maya');
  });
});

describe('language codes', () => {
  it('match case-insensitively, with legacy aliases and unknown regions falling back to the language', () => {
    const cases: [string, string | undefined][] = [
      ['en', 'en'],
      ['EN-us', 'en-US'],
      ['en_GB', 'en-GB'],
      ['ENG', 'en'],
      ['eng', 'en'],
      ['ESP', 'es'],
      ['GER', 'de'],
      ['es-MX', 'es'],
      ['pt-BR', 'pt-BR'],
      ['pt-AO', 'pt'],
      ['EN_au', 'en-AU'],
      ['UKR', 'uk'],
      ['zh-hant', 'zh-Hant'],
      ['fra', 'fr'],
      // The hosted API's multilingual modes: the language they start in, else English.
      ['babel-en', 'en'],
      ['babel-es', 'es'],
      ['Babel-FR', 'fr'],
      ['babel', 'en'],
      ['fluent', 'en'],
      ['auto', 'en'],
      ['babel-xx', undefined],
      ['tlh', undefined],
      ['xx-YY', undefined],
      ['', undefined],
    ];
    for (const [given, expected] of cases) assert.equal(normalizeLanguage(given), expected, given);
  });
});
