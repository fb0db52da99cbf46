import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import {
  CAMPAIGN_STATES,
  CAMPAIGN_TRANSITIONS,
  nextCampaignState,
  type CampaignAction,
} from '../../src/schemas/campaign.js';

type Json = Record<string, unknown>;

const base = { name: 'Spring outreach', task: 'Ask whether they want to renew their subscription.' };

describe('campaign state transitions (pure table)', () => {
  const expected: Record<string, Partial<Record<CampaignAction, string>>> = {
    active: { pause: 'paused', stop: 'stopped', complete: 'completed' },
    paused: { resume: 'active', stop: 'stopped' },
    completed: {},
    stopped: {},
  };
  for (const state of CAMPAIGN_STATES) {
    for (const action of Object.keys(CAMPAIGN_TRANSITIONS) as CampaignAction[]) {
      const to = expected[state]?.[action];
      it(`${action} from ${state} -> ${to ?? 'not allowed'}`, () => {
        assert.equal(nextCampaignState(state, action), to);
      });
    }
  }
});

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`campaigns (${storage})`, () => {
    let t: TestApp;
    let accountId: string;
    before(async () => {
      t = await createTestApp({ postgres: storage === 'postgres' });
      accountId = (await t.services.accounts.authenticate(t.key))!.id;
    });
    after(() => t.close());

    async function create(body: Json): Promise<string> {
      const r = await t.request('POST', '/v1/campaigns', body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'success');
      return String(r.body.campaign_id);
    }

    async function details(id: string, method: 'GET' | 'POST' = 'GET'): Promise<Json> {
      const r = await t.request(method, `/v1/campaigns/${id}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'success');
      assert.equal(r.body.count, 1);
      return (r.body.campaigns as Json[])[0]!;
    }

    function errorsOf(r: { body: Json }): string[] {
      return (r.body.errors as string[] | undefined) ?? [];
    }

    it('creates an active campaign and shows its details (POST and GET, /v1 and /api/v1)', async () => {
      const from = String((await t.request('POST', '/v1/inbound/purchase', { area_code: '415' })).body.phone_number);
      const id = await create({
        ...base,
        numbers: ['+14155550100'],
        temperature: 0.3,
        max_duration: 12,
        interruption_threshold: 80,
        voice: 'maya',
        record: true,
        from,
      });
      const item = await details(id, 'POST');
      assert.deepEqual(await details(id, 'GET'), item);
      const viaApi = await t.request('POST', `/api/v1/campaigns/${id}`);
      assert.equal(viaApi.status, 200);
      assert.equal(item.id, id);
      assert.equal(item.campaign_id, id);
      assert.equal(item.campaign_name, 'Spring outreach');
      assert.equal(item.campaign_state, 'active');
      assert.equal(item.phone_number, from);
      assert.equal(typeof item.created_at, 'string');
      const requestData = item.request_data as Json;
      assert.equal(requestData.temperature, 0.3);
      assert.equal(requestData.max_duration, 12);
      assert.equal(requestData.interruption_threshold, 80);
      assert.equal(requestData.voice, 'maya');
      assert.equal(requestData.record, true);
      assert.equal(requestData.language, 'en-US');
      const sequences = item.sequences as Json[];
      assert.equal(sequences.length, 1);
      assert.deepEqual(
        { ...sequences[0], seqId: undefined },
        {
          seqId: undefined,
          step: 0,
          type: 'send_call',
          task: base.task,
          pathway_id: null,
          start_time: null,
          delay: 0,
          pathway: [],
        },
      );
      assert.equal(item.curr_seq, sequences[0]?.seqId);
      assert.deepEqual(item.campaign_config, {
        stop_when_answer: false,
        auto_mark_complete: true,
        pacing: { max_concurrent: 10, calls_per_minute: 60 },
        calling_window: null,
        retries: 0,
        wait_period: 1,
      });
      for (const counter of [
        'human_ended',
        'assistant_ended',
        'human_answered',
        'voicemail_answered',
        'unknown_answered',
        'transferred_count',
      ]) {
        assert.equal(item[counter], 0, counter);
      }
      assert.equal(item.count, 1);
    });

    it('accepts numbers in every Send Call form and stores them in E.164, pending', async () => {
      const id = await create({
        ...base,
        numbers: [
          '+14155550100',
          '4155550101',
          4155550102,
          '(415) 555-0103',
          { phone_number: '415-555-0104', request_data: { first_name: 'Ada' }, metadata: { crm: 7 } },
        ],
      });
      const rows = await t.services.storage.db
        .selectFrom('campaign_numbers')
        .selectAll()
        .where('campaign_id', '=', id)
        .orderBy('position')
        .execute();
      assert.deepEqual(
        rows.map((r) => [Number(r.position), r.phone_number, r.state, Number(r.step), Number(r.attempts)]),
        [
          [0, '+14155550100', 'pending', 0, 0],
          [1, '+14155550101', 'pending', 0, 0],
          [2, '+14155550102', 'pending', 0, 0],
          [3, '+14155550103', 'pending', 0, 0],
          [4, '+14155550104', 'pending', 0, 0],
        ],
      );
      assert.deepEqual(JSON.parse(rows[4]!.request_data!), { first_name: 'Ada' });
      assert.deepEqual(JSON.parse(rows[4]!.metadata!), { crm: 7 });
      assert.equal(rows[0]!.request_data, null);
      assert.equal((await details(id)).count, 5);
    });

    it('names every bad number and both positions of a duplicate', async () => {
      const r = await t.request('POST', '/v1/campaigns', {
        ...base,
        numbers: [
          '+14155550100',
          '14155550100',
          'call me',
          true,
          { request_data: {} },
          { phone_number: '123' },
          '(415) 555-0100',
          4155550101,
          '+1 415 555 0101',
        ],
      });
      assert.equal(r.status, 400);
      const errors = errorsOf(r);
      for (const expected of [
        'numbers[1] has 11 digits without a +',
        'numbers[2] must not contain letters',
        'numbers[3] must be a phone number (string or number) or an object',
        'numbers[4].phone_number is required',
        'numbers[5].phone_number must be in E.164 form',
        'numbers[6] duplicates numbers[0] (+14155550100)',
        'numbers[8] duplicates numbers[7] (+14155550101)',
      ]) {
        assert.ok(
          errors.some((e) => e.startsWith(expected)),
          `${expected} missing from ${JSON.stringify(errors)}`,
        );
      }
      assert.equal(errors.length, 7, JSON.stringify(errors));

      const notOurs = await t.request('POST', '/v1/campaigns', {
        ...base,
        numbers: ['+14155550100'],
        from: '+14155550999',
      });
      assert.deepEqual(errorsOf(notOurs), [
        'from +14155550999 is not a number of this account (buy one with POST /v1/inbound/purchase, or leave from out)',
      ]);

      const object = await t.request('POST', '/v1/campaigns', { ...base, numbers: [{ request_data: {} }] });
      assert.deepEqual(errorsOf(object), ['numbers[0].phone_number is required']);
      const none = await t.request('POST', '/v1/campaigns', { ...base, numbers: [] });
      assert.deepEqual(errorsOf(none), ['numbers must have at least 1 item']);
      const missing = await t.request('POST', '/v1/campaigns', { numbers: ['+14155550100'] });
      assert.deepEqual(
        new Set(errorsOf(missing)),
        new Set(['name is required', 'task is required (or give a pathway_id)']),
      );
    });

    it('caps the list of number problems', async () => {
      const numbers = Array.from({ length: 150 }, (_, i) => `bad-${i}`);
      const r = await t.request('POST', '/v1/campaigns', { ...base, numbers });
      assert.equal(r.status, 400);
      const errors = errorsOf(r);
      assert.equal(errors.length, 11);
      assert.equal(errors.at(-1), 'numbers: 140 more problems not listed');
    });

    it('checks and normalizes the Send Call settings', async () => {
      const r = await t.request('POST', '/v1/campaigns', {
        ...base,
        numbers: ['+14155550100'],
        temperature: 2,
        voice: 'nobody-knows-me',
        from: '415 555 0100',
        tools: ['TL-missing'],
        webhook: 'not a url',
      });
      assert.equal(r.status, 400);
      const errors = errorsOf(r);
      for (const expected of ['temperature must be <= 1', 'from ', 'tools[0] "TL-missing"', 'webhook ']) {
        assert.ok(
          errors.some((e) => e.startsWith(expected)),
          `${expected} missing from ${JSON.stringify(errors)}`,
        );
      }
      const tool = await t.request('POST', '/v1/tools', {
        name: 'Check Stock',
        description: 'Looks up stock',
        url: 'https://api.example.com/stock',
      });
      const id = await create({ ...base, numbers: ['+14155550100'], tools: [tool.body.tool_id], amd: true });
      const requestData = (await details(id)).request_data as Json;
      assert.equal((requestData.tools as Json[])[0]?.tool_id, tool.body.tool_id);
      assert.equal(requestData.answered_by_enabled, true);
    });

    it('builds sequences from steps, inheriting the campaign task or pathway', async () => {
      const pathway = await t.request('POST', '/v1/pathway/create', {
        name: 'Renewal flow',
        nodes: [{ id: 'n1', type: 'Default', data: { name: 'Start', isStart: true, text: 'Hello!' } }],
      });
      const pathwayId = String(pathway.body.pathway_id);
      const id = await create({
        name: 'Multi-step',
        numbers: ['+14155550100'],
        pathway_id: pathwayId,
        start_time: '2030-01-02 09:00:00 -05:00',
        sequence: { retries: 2, wait_period: 2 },
        sequences: [{}, { task: 'Follow up on the renewal.', delay: 3600 }, { type: 'send_call' }],
      });
      const item = await details(id);
      const steps = item.sequences as Json[];
      assert.deepEqual(
        steps.map((s) => [s.step, s.task, s.pathway_id, s.start_time, s.delay, s.pathway]),
        [
          [0, null, pathwayId, '2030-01-02T14:00:00.000Z', 0, [{ value: pathwayId, label: 'Renewal flow' }]],
          [1, 'Follow up on the renewal.', null, null, 3600, []],
          [2, null, pathwayId, null, 2 * 86400, [{ value: pathwayId, label: 'Renewal flow' }]],
        ],
      );
      assert.equal(new Set(steps.map((s) => s.seqId)).size, 3);
      assert.equal(item.curr_seq, steps[0]?.seqId);
      const config = item.campaign_config as Json;
      assert.equal(config.retries, 2);
      assert.equal(config.wait_period, 2);
      assert.equal((item.request_data as Json).task, undefined, 'the task lives in the steps');

      const ownOnly = await create({
        name: 'Steps only',
        numbers: ['+14155550100'],
        sequences: [{ task: 'First call' }, { task: 'Second call', start_time: '2030-01-05 10:00:00' }],
      });
      const stepsOnly = (await details(ownOnly)).sequences as Json[];
      assert.deepEqual(
        stepsOnly.map((s) => [s.task, s.start_time]),
        [
          ['First call', null],
          ['Second call', '2030-01-05T10:00:00.000Z'],
        ],
      );

      const gap = await t.request('POST', '/v1/campaigns', {
        name: 'Gap',
        numbers: ['+14155550100'],
        sequences: [{ task: 'First call' }, { delay: 60 }],
      });
      assert.equal(gap.status, 400);
      assert.deepEqual(errorsOf(gap), [
        'sequences[1] needs a task or a pathway_id (none here and none at the top level)',
      ]);

      const unknown = await t.request('POST', '/v1/campaigns', {
        name: 'Unknown pathway',
        numbers: ['+14155550100'],
        sequences: [{ pathway_id: 'nope' }, { type: 'sms', task: 'x', delay: -1 }],
      });
      assert.equal(unknown.status, 400);
      for (const expected of [
        'sequences[0].pathway_id is not a pathway of this account',
        'sequences[1].type must be one of: send_call',
        'sequences[1].delay must be >= 0',
      ]) {
        assert.ok(
          errorsOf(unknown).includes(expected),
          `${expected} missing from ${JSON.stringify(errorsOf(unknown))}`,
        );
      }
      const foreign = await t.request(
        'POST',
        '/v1/campaigns',
        { name: 'x', numbers: ['+14155550100'], pathway_id: pathwayId },
        { as: t.otherKey },
      );
      assert.deepEqual(errorsOf(foreign), ['pathway_id is not a pathway of this account']);
      // The version and start node every call uses are checked against each step's pathway, as Send Call checks them.
      const wrongVersion = await t.request('POST', '/v1/campaigns', {
        name: 'x',
        numbers: ['+14155550100'],
        pathway_id: pathwayId,
        pathway_version: 99,
        start_node_id: 'nowhere',
      });
      assert.deepEqual(errorsOf(wrongVersion), ['pathway_version 99 is not a version of this pathway']);
      const empty = await t.request('POST', '/v1/pathway/create', { name: 'Not built yet' });
      const unbuilt = await t.request('POST', '/v1/campaigns', {
        name: 'x',
        numbers: ['+14155550100'],
        pathway_id: empty.body.pathway_id,
      });
      assert.match(errorsOf(unbuilt).join(), /^pathway_id names a pathway with no nodes yet/);
      const wrongNode = await t.request('POST', '/v1/campaigns', {
        name: 'x',
        numbers: ['+14155550100'],
        sequences: [{ pathway_id: pathwayId }],
        start_node_id: 'nowhere',
      });
      assert.deepEqual(errorsOf(wrongNode), [
        'sequences[0].start_node_id "nowhere" is not a node of the pathway version the call uses',
      ]);
    });

    it('stores pacing and a calling window, checking both', async () => {
      const id = await create({
        ...base,
        numbers: ['+14155550100'],
        timezone: 'America/New_York',
        pacing: { max_concurrent: 3, calls_per_minute: 0.5 },
        calling_window: { start: '09:00', end: '17:30' },
        stop_when_answer: true,
        auto_mark_complete: false,
      });
      const config = (await details(id)).campaign_config as Json;
      assert.deepEqual(config.pacing, { max_concurrent: 3, calls_per_minute: 0.5 });
      assert.deepEqual(config.calling_window, {
        start: '09:00',
        end: '17:30',
        days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
        timezone: 'America/New_York',
      });
      assert.equal(config.stop_when_answer, true);
      assert.equal(config.auto_mark_complete, false);

      const bad = await t.request('POST', '/v1/campaigns', {
        ...base,
        numbers: ['+14155550100'],
        pacing: { max_concurrent: 0, calls_per_minute: 0 },
        calling_window: { start: '9:00', end: '25:00', days: ['monday'], timezone: 'Mars/Base' },
        sequence: { retries: -1, wait_period: -2 },
        stop_when_answer: 'yes',
      });
      assert.equal(bad.status, 400);
      for (const expected of [
        'pacing.max_concurrent must be >= 1',
        'pacing.calls_per_minute must be > 0',
        'calling_window.start must be a time "HH:MM" (24-hour clock)',
        'calling_window.end must be a time "HH:MM" (24-hour clock)',
        'calling_window.days[0] must be one of: mon, tue, wed, thu, fri, sat, sun',
        'calling_window.timezone must be an IANA time zone such as America/Los_Angeles',
        'sequence.retries must be >= 0',
        'sequence.wait_period must be >= 0',
        'stop_when_answer must be a boolean',
      ]) {
        assert.ok(errorsOf(bad).includes(expected), `${expected} missing from ${JSON.stringify(errorsOf(bad))}`);
      }
      const same = await t.request('POST', '/v1/campaigns', {
        ...base,
        numbers: ['+14155550100'],
        calling_window: { start: '09:00', end: '09:00' },
      });
      assert.deepEqual(errorsOf(same), ['calling_window.end must differ from calling_window.start']);
    });

    it('accepts a campaign of 10,000 numbers', async () => {
      const numbers = Array.from({ length: 10_000 }, (_, i) => `+1415${String(2_000_000 + i).padStart(7, '0')}`);
      const started = performance.now();
      const id = await create({ ...base, name: 'Big', numbers });
      const ms = Math.round(performance.now() - started);
      console.log(`# 10,000-number campaign created in ${ms} ms (${storage})`);
      assert.equal((await details(id)).count, 10_000);
      assert.deepEqual(await t.services.campaigns.numberStates(accountId, id), { pending: 10_000 });
    });

    it('counts calls of the campaign by who ended, who answered and transfers', async () => {
      const id = await create({ ...base, name: 'Counted', numbers: ['+14155550100', '+14155550101'] });
      const other = await create({ ...base, name: 'Other', numbers: ['+14155550100'] });
      const now = new Date().toISOString();
      const call = (campaignId: string | null, fields: Json) => ({
        id: randomUUID(),
        account_id: accountId,
        created_at: now,
        updated_at: now,
        to_number: '+14155550100',
        campaign_id: campaignId,
        inbound: 0,
        queue_status: 'complete' as const,
        status: 'completed',
        completed: 1,
        max_duration: 30,
        record: 0,
        request: '{}',
        carrier: 'sandbox',
        ...fields,
      });
      await t.services.storage.db
        .insertInto('calls')
        .values([
          call(id, { call_ended_by: 'USER', answered_by: 'human' }),
          call(id, { call_ended_by: 'USER', answered_by: 'human', transferred_to: '+14155550110' }),
          call(id, { call_ended_by: 'ASSISTANT', answered_by: 'voicemail' }),
          call(id, { call_ended_by: 'ASSISTANT', answered_by: 'unknown' }),
          call(id, { answered_by: 'no-answer' }),
          // Detection off: connected and completed, a person as the dialer (and the progress) reads it.
          call(id, { call_ended_by: 'ASSISTANT' }),
          call(other, { call_ended_by: 'USER', answered_by: 'human' }),
          call(null, { call_ended_by: 'USER', answered_by: 'human' }),
        ])
        .execute();
      const expected = {
        count: 2,
        human_ended: 2,
        assistant_ended: 3,
        human_answered: 3,
        voicemail_answered: 1,
        unknown_answered: 1,
        transferred_count: 1,
      };
      const item = await details(id);
      for (const [key, value] of Object.entries(expected)) assert.equal(item[key], value, key);

      const list = await t.request('GET', '/v1/campaigns');
      assert.equal(list.status, 200);
      assert.equal(list.body.status, 'success');
      const summaries = list.body.campaigns as Json[];
      const summary = summaries.find((c) => c.campaign_id === id)!;
      assert.deepEqual(
        { ...summary, created_at: undefined },
        {
          campaign_id: id,
          campaign_name: 'Counted',
          campaign_state: 'active',
          created_at: undefined,
          ...expected,
        },
      );
      const progress = (await t.request('GET', `/v1/campaigns/${id}/progress`)).body;
      assert.equal(((progress.data ?? progress) as { calls: Json }).calls.answered, expected.human_answered);
      const otherSummary = summaries.find((c) => c.campaign_id === other)!;
      assert.equal(otherSummary.human_ended, 1);
      assert.equal(otherSummary.count, 1);
    });

    it('pauses, resumes and stops; refuses illegal transitions with 409', async () => {
      const id = await create({ ...base, numbers: ['+14155550100', '+14155550101', '+14155550102'] });
      // The dialer moves numbers on; a number already called must not become skipped.
      await t.services.storage.db
        .updateTable('campaign_numbers')
        .set({ state: 'done' })
        .where('campaign_id', '=', id)
        .where('position', '=', 0)
        .execute();

      const resumeActive = await t.request('POST', `/v1/campaigns/${id}/resume`);
      assert.equal(resumeActive.status, 409);
      assert.equal(resumeActive.body.status, 'error');
      assert.equal(resumeActive.body.message, 'Campaign is active; only a paused campaign can be resumed');

      const pause = await t.request('POST', `/v1/campaigns/${id}/pause`);
      assert.equal(pause.status, 200);
      assert.deepEqual(pause.body, { status: 'success', message: 'Campaign paused', campaign_state: 'paused' });
      assert.equal((await details(id)).campaign_state, 'paused');
      assert.equal((await t.request('POST', `/v1/campaigns/${id}/pause`)).status, 409);

      const resume = await t.request('POST', `/v1/campaigns/${id}/resume`);
      assert.equal(resume.body.campaign_state, 'active');

      const stop = await t.request('POST', `/v1/campaigns/${id}/stop`);
      assert.equal(stop.status, 200);
      assert.equal(stop.body.campaign_state, 'stopped');
      assert.deepEqual(await t.services.campaigns.numberStates(accountId, id), { done: 1, skipped: 2 });

      for (const action of ['pause', 'resume', 'stop']) {
        const r = await t.request('POST', `/v1/campaigns/${id}/${action}`);
        assert.equal(r.status, 409, action);
        assert.match(String(r.body.message), /^Campaign is stopped;/);
      }

      const paused = await create({ ...base, numbers: ['+14155550100'] });
      await t.request('POST', `/v1/campaigns/${paused}/pause`);
      const stopPaused = await t.request('POST', `/v1/campaigns/${paused}/stop`);
      assert.equal(stopPaused.body.campaign_state, 'stopped');

      const completed = await create({ ...base, numbers: ['+14155550100'] });
      const done = await t.services.campaigns.transition(accountId, completed, 'complete');
      assert.deepEqual(done, { ok: true, state: 'completed' });
      const resumeCompleted = await t.request('POST', `/v1/campaigns/${completed}/resume`);
      assert.equal(resumeCompleted.status, 409);
      assert.equal(resumeCompleted.body.message, 'Campaign is completed; only a paused campaign can be resumed');
    });

    it('hides campaigns of other accounts and requires a key on every endpoint', async () => {
      const id = await create({ ...base, numbers: ['+14155550100'] });
      const calls: [Parameters<TestApp['request']>[0], string][] = [
        ['GET', `/v1/campaigns/${id}`],
        ['POST', `/v1/campaigns/${id}`],
        ['POST', `/v1/campaigns/${id}/pause`],
        ['POST', `/v1/campaigns/${id}/resume`],
        ['POST', `/v1/campaigns/${id}/stop`],
      ];
      for (const [method, url] of calls) {
        const foreign = await t.request(method, url, undefined, { as: t.otherKey });
        assert.equal(foreign.status, 404, `${method} ${url} as another account`);
        assert.equal(foreign.body.status, 'error');
        assert.equal((await t.request(method, url, undefined, { as: null })).status, 401, `${method} ${url}`);
      }
      assert.equal((await t.request('GET', '/v1/campaigns', undefined, { as: null })).status, 401);
      assert.equal(
        (await t.request('POST', '/v1/campaigns', { ...base, numbers: ['+14155550100'] }, { as: null })).status,
        401,
      );
      const others = await t.request('GET', '/v1/campaigns', undefined, { as: t.otherKey });
      assert.deepEqual(others.body.campaigns, []);
      assert.equal((await details(id)).campaign_state, 'active', 'foreign calls changed nothing');
      assert.equal((await t.request('GET', '/v1/campaigns/no-such-campaign')).status, 404);
      const otherAccount = (await t.services.accounts.authenticate(t.otherKey))!;
      assert.deepEqual(await t.services.campaigns.numberStates(otherAccount.id, id), {});
    });
  });
