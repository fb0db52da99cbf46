import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { LANGUAGES, MAX_RETRY_WAIT_S } from '../../src/schemas/call.js';

const base = { phone_number: '+14155550100', task: 'Say hello' };

function errorsOf(body: Record<string, unknown>): string[] {
  return (body.errors as string[] | undefined) ?? [];
}

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`calls (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
    });
    after(() => t.close());

    async function send(body: unknown) {
      return t.request('POST', '/v1/calls', body);
    }

    it('queues a valid call, stores it and puts a dial job on the queue', async () => {
      const r = await send(base);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'success');
      assert.equal(r.body.batch_id, null);
      const id = String(r.body.call_id);
      const job = await t.services.queue.get(`dial:${id}`);
      assert.equal(job?.state, 'pending');
      assert.deepEqual(job?.payload, { call_id: id });
    });

    it('returns every field of the seed 2.3 record, with nulls where nothing is known yet', async () => {
      const r = await send({ ...base, metadata: { crm: 42 }, request_data: { name: 'Ada' }, record: true });
      const details = await t.request('GET', `/v1/calls/${String(r.body.call_id)}`);
      assert.equal(details.status, 200);
      const fields = [
        'call_id',
        'c_id',
        'call_length',
        'corrected_duration',
        'batch_id',
        'to',
        'from',
        'transferred_to',
        'request_data',
        'completed',
        'inbound',
        'created_at',
        'started_at',
        'end_at',
        'queue_status',
        'status',
        'endpoint_url',
        'max_duration',
        'error_message',
        'variables',
        'answered_by',
        'record',
        'recording_url',
        'metadata',
        'summary',
        'price',
        'local_dialing',
        'call_ended_by',
        'pathway_logs',
        'analysis_schema',
        'analysis',
        'concatenated_transcript',
        'transcripts',
      ];
      for (const f of fields) assert.ok(f in details.body, `missing ${f}`);
      const b = details.body;
      assert.equal(b.to, '+14155550100');
      assert.equal(b.queue_status, 'queued');
      assert.equal(b.status, 'queued');
      assert.equal(b.completed, false);
      assert.equal(b.inbound, false);
      assert.equal(b.record, true);
      assert.equal(b.recording_url, null);
      assert.equal(b.max_duration, 30);
      assert.deepEqual(b.metadata, { crm: 42 });
      assert.deepEqual(b.transcripts, []);
      const rd = b.request_data as Record<string, unknown>;
      assert.deepEqual(rd.request_data, { name: 'Ada' });
      assert.equal(rd.voice, 'mason');
      assert.equal(rd.temperature, 0.7);
      assert.equal(rd.language, 'en-US');
      assert.equal(rd.interruption_threshold, 100);
      assert.equal(rd.voicemail_action, 'hangup');
      assert.equal(rd.model, 'enhanced');
      assert.ok(!Number.isNaN(Date.parse(String(b.created_at))));
      for (const prefix of ['/v1', '/api/v1']) {
        assert.equal((await t.request('GET', `${prefix}/calls/${String(b.call_id)}`)).status, 200);
      }
    });

    const accepted: [unknown, string][] = [
      ['+14155550100', '+14155550100'],
      ['+1 (415) 555-0100', '+14155550100'],
      ['4155550100', '+14155550100'],
      ['(415) 555-0100', '+14155550100'],
      ['415-555-0100', '+14155550100'],
      ['415 555 0100', '+14155550100'],
      [4155550100, '+14155550100'],
      ['+447911123456', '+447911123456'],
      ['+44 7911 123456', '+447911123456'],
    ];
    for (const [input, e164] of accepted) {
      it(`accepts phone_number ${JSON.stringify(input)} as ${e164}`, async () => {
        const r = await send({ ...base, phone_number: input });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const details = await t.request('GET', `/v1/calls/${String(r.body.call_id)}`);
        assert.equal(details.body.to, e164);
      });
    }

    const rejected: [unknown, string][] = [
      ['14155550100', '11 digits'],
      ['07911123456', '11 digits'],
      ['7911123456789', 'E.164'],
      ['415555010', 'E.164'],
      ['+1 415 555 0100 ext 12', 'letters'],
      ['415-555-0100x12', 'letters'],
      ['415.555.0100', 'only digits'],
      ['CALL-ME-NOW', 'letters'],
      ['', 'empty'],
      ['+15555550100', 'not a valid'],
      [true, 'string or a number'],
      [{ n: 1 }, 'string or a number'],
    ];
    for (const [input, why] of rejected) {
      it(`rejects phone_number ${JSON.stringify(input)} (${why})`, async () => {
        const r = await send({ ...base, phone_number: input });
        assert.equal(r.status, 400);
        assert.equal(r.body.status, 'error');
        const errors = errorsOf(r.body);
        assert.equal(errors.length, 1, String(errors));
        assert.ok(errors[0]?.startsWith('phone_number '), String(errors));
        assert.ok(errors[0]?.includes(why), `${String(errors)} should mention ${why}`);
      });
    }

    it('reports missing phone_number and task, and non-string task, all at once', async () => {
      const r = await send({});
      assert.equal(r.status, 400);
      assert.deepEqual(errorsOf(r.body).sort(), [
        'phone_number is required',
        'task is required (or give a pathway_id)',
      ]);
      const typed = await send({ phone_number: '+14155550100', task: 12 });
      assert.deepEqual(errorsOf(typed.body), ['task must be a string']);
      const created = await t.request('POST', '/v1/pathway/create', {
        name: 'Greeter',
        nodes: [{ id: 'n1', type: 'Default', data: { name: 'Start', isStart: true, text: 'Hello!' } }],
        edges: [],
      });
      const pathwayId = String(created.body.pathway_id);
      const pathway = await send({ phone_number: '+14155550100', pathway_id: pathwayId });
      assert.equal(pathway.status, 200, `task is not needed with a pathway: ${JSON.stringify(pathway.body)}`);
      const unknown = await send({ phone_number: '+14155550100', pathway_id: 'no-such-pathway' });
      assert.deepEqual(errorsOf(unknown.body), ['pathway_id is not a pathway of this account']);
      const foreign = await t.request('POST', '/v1/calls', { ...base, pathway_id: pathwayId }, { as: t.otherKey });
      assert.equal(foreign.status, 400);
      const version = await send({ phone_number: '+14155550100', pathway_id: pathwayId, pathway_version: 7 });
      assert.deepEqual(errorsOf(version.body), ['pathway_version 7 is not a version of this pathway']);
    });

    it("calls from one of the account's own numbers only", async () => {
      const mine = String((await t.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body.phone_number);
      assert.equal((await send({ ...base, from: mine })).status, 200);
      const notOurs = `from ${mine} is not a number of this account (buy one with POST /v1/inbound/purchase, or leave from out)`;
      const theirs = await t.request('POST', '/v1/calls', { ...base, from: mine }, { as: t.otherKey });
      assert.deepEqual(errorsOf(theirs.body), [notOurs]);
      const madeUp = await send({ ...base, from: '+14155550999' });
      assert.deepEqual(errorsOf(madeUp.body), [notOurs.replace(mine, '+14155550999')]);
    });

    it('reports every invalid field in one reply, each naming its field', async () => {
      const r = await send({
        phone_number: '123',
        task: 'x',
        temperature: 1.5,
        language: 'xx',
        voicemail_action: 'scream',
        background_track: 'jungle',
        voice: 'nobody',
        webhook_events: ['call', 'weather'],
        start_time: 'tomorrow',
        timezone: 'Mars/Olympus',
        keywords: ['ok', 'boost:high'],
        max_duration: 0,
        from: '415 555 0100',
        retry: { wait: -1, voicemail_action: 'x' },
        pronunciation_guide: [{ word: 'SQL' }],
        interruption_threshold: 'fast',
        transfer_list: { default: 'nope' },
        webhook: 'not a url',
        dynamic_data: [{ url: 'https://x.example' }],
        tools: ['TL-missing', { name: 'Weather', url: 'https://x.example' }],
      });
      assert.equal(r.status, 400);
      const errors = errorsOf(r.body);
      const expectField = [
        'phone_number',
        'temperature',
        'language',
        'voicemail_action',
        'background_track',
        'webhook_events[1]',
        'start_time',
        'timezone',
        'keywords[1]',
        'max_duration',
        'from',
        'retry.wait',
        'retry.voicemail_action',
        'pronunciation_guide[0].pronunciation',
        'interruption_threshold',
        'transfer_list.default',
        'webhook',
        'dynamic_data[0].response_data',
        'tools[0]',
        'tools[1].description',
      ];
      for (const field of expectField) {
        assert.ok(
          errors.some((e) => e.startsWith(`${field} `)),
          `no error for ${field}: ${errors.join(' | ')}`,
        );
      }
    });

    it("accepts the hosted API's languages beyond the seed's list, keeping their region", async () => {
      const further = ['el', 'fi', 'uk', 'bg', 'cs', 'ro', 'sk', 'no', 'vi', 'th', 'hu', 'ca', 'et', 'lv', 'lt'];
      const regions = ['en-AU', 'en-NZ', 'en-IN', 'es-419', 'fr-CA', 'pt-BR', 'pt-PT', 'ko-KR', 'nl-BE', 'zh-HK'];
      for (const language of [...further, ...regions]) {
        const r = await send({ ...base, language });
        assert.equal(r.status, 200, `${language}: ${JSON.stringify(r.body)}`);
        const details = await t.request('GET', `/v1/calls/${String(r.body.call_id)}`);
        assert.equal((details.body.request_data as Record<string, unknown>).language, language);
      }
      const legacy = await send({ ...base, language: 'UKR' });
      const details = await t.request('GET', `/v1/calls/${String(legacy.body.call_id)}`);
      assert.equal((details.body.request_data as Record<string, unknown>).language, 'uk');
      assert.deepEqual(
        errorsOf((await send({ ...base, language: 'klingon' })).body).map((e) => e.split(' ')[0]),
        ['language'],
      );
    });

    it('takes a retry after voicemail at most 30 days later: a longer wait is a 400 naming retry.wait', async () => {
      const month = await send({ ...base, retry: { wait: MAX_RETRY_WAIT_S, voicemail_action: 'leave_message' } });
      assert.equal(month.status, 200, JSON.stringify(month.body));
      for (const wait of [MAX_RETRY_WAIT_S + 1, 1e20]) {
        const r = await send({ ...base, retry: { wait, voicemail_action: 'leave_message' } });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.deepEqual(errorsOf(r.body), [`retry.wait must be <= ${MAX_RETRY_WAIT_S}`]);
      }
    });

    for (const language of LANGUAGES) {
      it(`accepts language ${language}`, async () => {
        assert.equal((await send({ ...base, language })).status, 200);
      });
    }

    const voices: [Record<string, unknown>, string, boolean, boolean][] = [
      [{ voice: 'maya' }, 'maya', false, false],
      [{ voice: 'Evelyn' }, 'evelyn', false, false],
      [{ voice: 'RL2' }, 'ryan', true, false],
      [{ voice: 'HQ0' }, 'maya', false, true],
      [{ voice: 'maya', voice_id: 5 }, 'matt', false, false],
      [{ voice: 'maya', reduce_latency: true }, 'maya', true, false],
      [{ voice_preset_id: 'tina' }, 'tina', false, false],
      [{}, 'mason', false, false],
    ];
    for (const [params, voice, rl, hq] of voices) {
      it(`resolves ${JSON.stringify(params)} to voice ${voice}`, async () => {
        const r = await send({ ...base, ...params });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const rd = (await t.request('GET', `/v1/calls/${String(r.body.call_id)}`)).body.request_data as Record<
          string,
          unknown
        >;
        assert.equal(rd.voice, voice);
        assert.equal(rd.reduce_latency, rl);
        assert.equal(rd.high_fidelity, hq);
      });
    }
    it('takes voices it does not have, legacy voice ids included, in the default voice with a warning', async () => {
      // The hosted service's legacy ids go far beyond the curated voices (voice_id 1186).
      const legacy = await send({ ...base, voice: 'maya', voice_id: 1186 });
      assert.equal(legacy.status, 200, JSON.stringify(legacy.body));
      assert.match(String((legacy.body.warnings as string[])[0]), /^voice_id 1186 is not a voice of this server/);
      const rd = (await t.request('GET', `/v1/calls/${String(legacy.body.call_id)}`)).body.request_data as Record<
        string,
        unknown
      >;
      assert.equal(rd.voice, 'mason');
      assert.deepEqual(errorsOf((await send({ ...base, voice_id: 'abc' })).body), ['voice_id must be an integer']);
      // A voice string this server does not know is a warning, not an error (the hosted voices).
      const unknown = await send({ ...base, voice: 'RL99' });
      assert.equal(unknown.status, 200);
      assert.match(String((unknown.body.warnings as string[])[0]), /^voice "RL99" is not a voice of this server/);
    });

    it('resolves tool ids of the account and refuses those of another account', async () => {
      const tool = { name: 'Check Stock', description: 'd', url: 'https://api.example.com/stock' };
      const mine = String((await t.request('POST', '/v1/tools', tool)).body.tool_id);
      const theirs = String((await t.request('POST', '/v1/tools', tool, { as: t.otherKey })).body.tool_id);
      const ok = await send({ ...base, tools: [mine, { ...tool, name: 'Inline Lookup' }] });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const rd = (await t.request('GET', `/v1/calls/${String(ok.body.call_id)}`)).body.request_data as {
        tools: { name: string; tool_id?: string }[];
      };
      assert.deepEqual(
        rd.tools.map((x) => x.name),
        ['Check Stock', 'Inline Lookup'],
      );
      assert.equal(rd.tools[0]?.tool_id, mine);
      const foreign = await send({ ...base, tools: [theirs] });
      assert.equal(foreign.status, 400);
      assert.ok(errorsOf(foreign.body)[0]?.startsWith('tools[0] '));
    });

    it('normalizes transfer numbers and the start_time forms', async () => {
      const r = await send({
        ...base,
        transfer_phone_number: '415-555-0110',
        transfer_list: { default: '+14155550110', sales: 4155550111 },
        start_time: '2099-01-02 03:04:05 -08:00',
        amd: true,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const rd = (await t.request('GET', `/v1/calls/${String(r.body.call_id)}`)).body.request_data as Record<
        string,
        unknown
      >;
      assert.equal(rd.transfer_phone_number, '+14155550110');
      assert.deepEqual(rd.transfer_list, { default: '+14155550110', sales: '+14155550111' });
      assert.equal(rd.start_time, '2099-01-02T11:04:05.000Z');
      assert.equal(rd.answered_by_enabled, true);
      const job = await t.services.queue.get(`dial:${String(r.body.call_id)}`);
      assert.equal(job?.run_at, '2099-01-02T11:04:05.000Z', 'a scheduled call waits for its time');
      for (const form of ['2099-01-02 03:04:05', '2099-01-02 03:04:05 +05:30', '2099-01-02T03:04:05Z']) {
        assert.equal((await send({ ...base, start_time: form })).status, 200, form);
      }
      for (const bad of ['2099-13-02 03:04:05', '2099-02-30 03:04:05', '02/01/2099']) {
        assert.equal((await send({ ...base, start_time: bad })).status, 400, bad);
      }
    });

    it('places calls with registered carrier credentials and refuses unknown encrypted_key values', async () => {
      const creds = await t.request('POST', '/v1/accounts', {
        provider: 'twilio',
        account_sid: `AC${'a'.repeat(32)}`,
        auth_token: 'secret-token',
      });
      const encryptedKey = String(creds.body.encrypted_key);
      const ok = await t.request('POST', '/v1/calls', base, { headers: { encrypted_key: encryptedKey } });
      assert.equal(ok.status, 200);
      const row = await t.services.calls.get(
        (await t.services.accounts.authenticate(t.key))!.id,
        String(ok.body.call_id),
      );
      assert.equal(row?.credential_id, encryptedKey);
      assert.equal(row?.carrier, 'twilio', "the account's own carrier from the start");
      const foreign = await t.request('POST', '/v1/calls', base, {
        as: t.otherKey,
        headers: { encrypted_key: encryptedKey },
      });
      assert.equal(foreign.status, 400);
      assert.equal(foreign.body.code, 'UNKNOWN_ENCRYPTED_KEY');
    });

    it('ignores unknown fields', async () => {
      assert.equal((await send({ ...base, future_field: { x: 1 } })).status, 200);
    });

    it('stops a scheduled call: canceled, complete, length 0; a second stop is a 409', async () => {
      const r = await send({ ...base, start_time: '2099-01-01 00:00:00' });
      const id = String(r.body.call_id);
      const stop = await t.request('POST', `/v1/calls/${id}/stop`);
      assert.equal(stop.status, 200);
      assert.deepEqual(stop.body, { status: 'success', message: 'Call ended successfully.' });
      const d = (await t.request('GET', `/v1/calls/${id}`)).body;
      assert.equal(d.status, 'canceled');
      assert.equal(d.queue_status, 'complete');
      assert.equal(d.completed, true);
      assert.equal(d.call_length, 0);
      assert.equal((await t.services.queue.get(`dial:${id}`))?.state, 'canceled');
      const again = await t.request('POST', `/v1/calls/${id}/stop`);
      assert.equal(again.status, 409);
      assert.equal((await t.request('POST', '/v1/calls/no-such-call/stop')).status, 404);
    });

    it('stops every open call of the account and only of the account', async () => {
      const t2 = await createTestApp({ postgres: storage === 'postgres' });
      try {
        await t2.request('POST', '/v1/calls', base);
        await t2.request('POST', '/v1/calls', base);
        const other = await t2.request('POST', '/v1/calls', base, { as: t2.otherKey });
        const r = await t2.request('POST', '/v1/calls/active/stop');
        assert.equal(r.status, 200);
        assert.equal(r.body.num_calls, 2);
        assert.equal(r.body.message, 'Stopping active calls. This may take some time...');
        const untouched = await t2.request('GET', `/v1/calls/${String(other.body.call_id)}`, undefined, {
          as: t2.otherKey,
        });
        assert.equal(untouched.body.queue_status, 'queued');
      } finally {
        await t2.close();
      }
    });

    it('lists with filters and cursor pagination, newest first', async () => {
      const t2 = await createTestApp({ postgres: storage === 'postgres' });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const r = await t2.request('POST', '/v1/calls', {
            ...base,
            phone_number: i % 2 ? '+14155550101' : '+14155550100',
          });
          ids.push(String(r.body.call_id));
        }
        await t2.request('POST', '/v1/calls', base, { as: t2.otherKey });
        const all = await t2.request('GET', '/v1/calls');
        assert.equal(all.body.count, 5);
        const page1 = await t2.request('GET', '/v1/calls?limit=2');
        assert.equal((page1.body.calls as unknown[]).length, 2);
        assert.ok(page1.body.next_cursor);
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const url: string = `/v1/calls?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
          const page = await t2.request('GET', url);
          seen.push(...(page.body.calls as { call_id: string }[]).map((c) => c.call_id));
          cursor = page.body.next_cursor as string | null;
        } while (cursor);
        assert.deepEqual([...seen].sort(), [...ids].sort());
        assert.equal(new Set(seen).size, 5);
        const filtered = await t2.request('GET', '/v1/calls?to_number=4155550101');
        assert.equal(filtered.body.count, 2);
        const asc = await t2.request('GET', '/v1/calls?ascending=true&limit=1');
        assert.equal((asc.body.calls as { call_id: string }[])[0]?.call_id, ids[0]);
        const queued = await t2.request('GET', '/v1/calls?queue_status=queued&created_after=2000-01-01');
        assert.equal(queued.body.count, 5);
        // As clients write them: an unencoded +, yes and no as 1, TRUE, no; `completed` as a status.
        const counts = async (query: string) => (await t2.request('GET', `/v1/calls?${query}`)).body.count;
        assert.equal(await counts('to_number=+14155550101'), 2);
        assert.deepEqual(
          [await counts('completed=false'), await counts('completed=0'), await counts('completed=TRUE')],
          [5, 5, 0],
        );
        assert.equal(await counts('queue_status=completed'), 0);
        const asc1 = await t2.request('GET', '/v1/calls?ascending=1&limit=1');
        assert.equal((asc1.body.calls as { call_id: string }[])[0]?.call_id, ids[0]);
        assert.deepEqual(errorsOf((await t2.request('GET', '/v1/calls?ascending=maybe')).body), [
          'ascending must be a boolean',
        ]);
        const bad = await t2.request('GET', '/v1/calls?limit=0&queue_status=nope&to_number=abc');
        assert.equal(bad.status, 400);
        const errors = errorsOf(bad.body);
        for (const f of ['limit', 'queue_status', 'to_number'])
          assert.ok(
            errors.some((e) => e.startsWith(`${f} `)),
            String(errors),
          );
        assert.equal((await t2.request('GET', '/v1/calls?cursor=garbage')).status, 400);
      } finally {
        await t2.close();
      }
    });

    it('counts the matching calls over all pages, and takes the hosted start_date and end_date', async () => {
      const t2 = await createTestApp({ postgres: storage === 'postgres' });
      try {
        for (let i = 0; i < 5; i++)
          await t2.request('POST', '/v1/calls', { ...base, phone_number: i % 2 ? '+14155550101' : '+14155550100' });
        await t2.request('POST', '/v1/calls', base, { as: t2.otherKey });
        // Offset pages as a warehouse sync reads them: total_count stays the whole set's.
        const seen: string[] = [];
        for (let from = 0; from < 5; from += 2) {
          const page = await t2.request('GET', `/v1/calls?from=${from}&limit=2&ascending=true&sort_by=created_at`);
          assert.equal(page.status, 200, JSON.stringify(page.body));
          assert.equal(page.body.total_count, 5);
          assert.equal(page.body.count, Math.min(2, 5 - from));
          seen.push(...(page.body.calls as { call_id: string }[]).map((c) => c.call_id));
        }
        assert.equal(new Set(seen).size, 5);
        assert.equal((await t2.request('GET', '/v1/calls?to_number=4155550101&limit=1')).body.total_count, 2);
        // Both ends included, whatever the times share.
        const calls = (await t2.request('GET', '/v1/calls?ascending=true')).body.calls as { created_at: string }[];
        const [start, end] = [calls[1]!.created_at, calls[3]!.created_at];
        const inWindow = calls.filter((c) => c.created_at >= start && c.created_at <= end).length;
        const windowed = await t2.request(
          'GET',
          `/v1/calls?start_date=${encodeURIComponent(start)}&end_date=${encodeURIComponent(end)}`,
        );
        assert.equal(windowed.body.count, inWindow);
        assert.equal(windowed.body.total_count, inWindow);
        // A date alone is its midnight: one day's calls are start_date=D&end_date=D+1, as clients of
        // the hosted API ask for them, and that next day is not in them.
        const today = calls[0]!.created_at.slice(0, 10);
        const tomorrow = new Date(Date.parse(today) + 86_400_000).toISOString().slice(0, 10);
        const yesterday = new Date(Date.parse(today) - 86_400_000).toISOString().slice(0, 10);
        assert.equal((await t2.request('GET', `/v1/calls?end_date=${today}`)).body.count, 0);
        assert.equal((await t2.request('GET', `/v1/calls?start_date=${today}&end_date=${tomorrow}`)).body.count, 5);
        assert.equal((await t2.request('GET', `/v1/calls?start_date=${yesterday}&end_date=${today}`)).body.count, 0);
        assert.equal((await t2.request('GET', `/v1/calls?start_date=2999-01-01`)).body.total_count, 0);
        const bad = await t2.request('GET', '/v1/calls?start_date=soon&end_date=later');
        assert.equal(bad.status, 400);
        assert.deepEqual(
          errorsOf(bad.body).map((e) => e.split(' ')[0]),
          ['start_date', 'end_date'],
        );
      } finally {
        await t2.close();
      }
    });

    it('filters by the hosted pathway_id, duration_gt, duration_lt and created_at, and checks sort_by', async () => {
      const t2 = await createTestApp({ postgres: storage === 'postgres' });
      try {
        const created = await t2.request('POST', '/v1/pathway/create', {
          name: 'Intake',
          nodes: [{ id: 'n1', type: 'Default', data: { name: 'Start', isStart: true, text: 'Hello!' } }],
          edges: [],
        });
        const pathwayId = String(created.body.pathway_id);
        const viaPathway = await t2.request('POST', '/v1/calls', {
          phone_number: '+14155550100',
          pathway_id: pathwayId,
        });
        assert.equal(viaPathway.status, 200, JSON.stringify(viaPathway.body));
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) ids.push(String((await t2.request('POST', '/v1/calls', base)).body.call_id));
        // Calls of 0.5, 1.5 and 3 minutes (call_length is minutes, as the hosted filters read it).
        for (const [i, minutes] of [0.5, 1.5, 3].entries())
          await t2.services.calls.transition(ids[i]!, ['queued'], {
            queue_status: 'complete',
            status: 'completed',
            completed: true,
            call_length: minutes,
          });
        const found = async (query: string) => {
          const r = await t2.request('GET', `/v1/calls?${query}`);
          assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
          return (r.body.calls as { call_id: string }[]).map((c) => c.call_id).sort();
        };
        assert.deepEqual(await found(`pathway_id=${pathwayId}`), [String(viaPathway.body.call_id)]);
        assert.deepEqual(await found('pathway_id=someone-elses'), []);
        assert.deepEqual(await found('duration_gt=1'), [ids[1], ids[2]].sort());
        assert.deepEqual(await found('duration_lt=2'), [ids[0], ids[1]].sort());
        assert.deepEqual(await found('duration_gt=0.5&duration_lt=3'), [ids[1]]);
        const all = (await t2.request('GET', '/v1/calls')).body.calls as { created_at: string }[];
        const today = all[0]!.created_at.slice(0, 10);
        assert.equal((await found(`created_at=${today}`)).length, 4);
        assert.equal((await found('created_at=2001-02-03')).length, 0);
        assert.equal((await found('sort_by=created_at&ascending=true')).length, 4);
        // Another order a client asks for is not an error: the calls still come newest first.
        assert.equal((await found('sort_by=call_length')).length, 4);
        const bad = await t2.request('GET', '/v1/calls?duration_gt=long&created_at=someday&sort_by=mood');
        assert.equal(bad.status, 400);
        assert.deepEqual(
          errorsOf(bad.body)
            .map((e) => e.split(' ')[0])
            .sort(),
          ['created_at', 'duration_gt'],
        );
      } finally {
        await t2.close();
      }
    });

    it('takes a fractional max_duration (minutes) on calls, inbound numbers and agents', async () => {
      const r = await send({ ...base, max_duration: 2.5 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const call = await t.request('GET', `/v1/calls/${String(r.body.call_id)}`);
      assert.equal(call.body.max_duration, 2.5);
      assert.equal((call.body.request_data as Record<string, unknown>).max_duration, 2.5);
      const number = String((await t.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body.phone_number);
      const inbound = await t.request('POST', `/v1/inbound/${encodeURIComponent(number)}`, {
        prompt: 'Answer questions.',
        max_duration: 0.5,
      });
      assert.equal(inbound.status, 200, JSON.stringify(inbound.body));
      assert.equal((inbound.body.updates as Record<string, unknown>).max_duration, 0.5);
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Be brief.', max_duration: 1.5 });
      assert.equal(agent.status, 200, JSON.stringify(agent.body));
      for (const bad of [0, -1, 1441])
        assert.deepEqual(
          errorsOf((await send({ ...base, max_duration: bad })).body).map((e) => e.split(' ')[0]),
          ['max_duration'],
          String(bad),
        );
    });

    it('keeps calls private to their account', async () => {
      const r = await send(base);
      const id = String(r.body.call_id);
      for (const [method, url] of [
        ['GET', `/v1/calls/${id}`],
        ['POST', `/v1/calls/${id}/stop`],
        ['GET', `/v1/calls/${id}/recording`],
      ] as const) {
        const res = await t.request(method, url, undefined, { as: t.otherKey });
        assert.equal(res.status, 404, `${method} ${url}`);
      }
      assert.equal((await t.request('GET', `/v1/calls/${id}`, undefined, { as: null })).status, 401);
      assert.equal((await t.request('POST', '/v1/calls', base, { as: null })).status, 401);
    });

    it('answers a call without recording with CALL_RECORDING_NOT_FOUND', async () => {
      const r = await send(base);
      const rec = await t.request('GET', `/v1/calls/${String(r.body.call_id)}/recording`);
      assert.equal(rec.status, 404);
      assert.equal(rec.body.code, 'CALL_RECORDING_NOT_FOUND');
    });

    it('validates analyze requests and refuses calls that have not ended', async () => {
      const r = await send(base);
      const id = String(r.body.call_id);
      const bad = await t.request('POST', `/v1/calls/${id}/analyze`, { questions: 'x' });
      assert.equal(bad.status, 400);
      assert.ok(errorsOf(bad.body).includes('goal is required'));
      const early = await t.request('POST', `/v1/calls/${id}/analyze`, {
        goal: 'g',
        questions: [['Did they agree?', 'boolean']],
      });
      assert.equal(early.status, 409);
    });

    it('rejects malformed JSON and oversized bodies with the error shape', async () => {
      const malformed = await t.request('POST', '/v1/calls', '{"phone_number":', {
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.status, 'error');
      const huge = await t.request('POST', '/v1/calls', { ...base, task: 'x'.repeat(2 * 1024 * 1024) });
      assert.equal(huge.status, 413);
      assert.equal(huge.body.status, 'error');
    });
  });
