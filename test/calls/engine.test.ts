import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScaledClock } from '../../src/clock.js';
import { waitFor } from '../../src/testing/wait.js';

type Record = { [k: string]: unknown };

const ended = waitForCall;

async function place(t: TestApp, body: Record): Promise<Record> {
  const r = await t.request('POST', '/v1/calls', body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return ended(t, String(r.body.call_id));
}

const personaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-personas-'));
fs.writeFileSync(
  path.join(personaDir, 'asker.json'),
  JSON.stringify({
    id: 'asker',
    number: '0190',
    name: 'Keeps asking',
    description: 'Answers, then asks who is calling after everything the agent says.',
    ring: { kind: 'answer', afterMs: 1000 },
    start: 'ask',
    states: {
      ask: [
        { say: 'Hello, who is this?' },
        { listen: { timeoutMs: 30000, on: [{ any: true, do: [{ goto: 'ask' }] }], timeout: [{ goto: 'ask' }] } },
      ],
    },
  }),
);

fs.writeFileSync(
  path.join(personaDir, 'not-on-tuesday.json'),
  JSON.stringify({
    id: 'not-on-tuesday',
    number: '0191',
    name: 'Not available on Tuesday',
    description: "Answers, then says a voicemail's words as a person does, and hangs up.",
    ring: { kind: 'answer', afterMs: 1000 },
    start: 'greet',
    states: {
      greet: [
        { say: 'Hello?' },
        {
          listen: {
            timeoutMs: 30000,
            on: [{ any: true, do: [{ say: 'Sorry, I am not available on Tuesday.' }, { hangup: true }] }],
          },
        },
      ],
    },
  }),
);

/** One line per sandbox number, printed at the end (the issue note quotes it). */
const report: string[] = [];
process.on('exit', () => {
  if (report.length) console.log(`\nSandbox numbers through the engine:\n${report.join('\n')}`);
});

const roles = (call: Record) =>
  (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`);

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`call engine on the sandbox (${storage})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({
        postgres: storage === 'postgres',
        clock: new ScaledClock(100),
        config: { personaDirs: [personaDir], sandboxPricePerMinute: 0.09 },
      });
      await t.services.startWorkers();
    });
    after(() => t.close());

    // Every sandbox number of CONTRACT.md section 6, through the whole engine with the offline model.
    const table: {
      number: string;
      body?: Record;
      expect: {
        queue_status: string;
        answered_by: string | null;
        ended_by?: string | null;
        error?: RegExp;
        transferred?: string;
      };
      says?: RegExp;
    }[] = [
      { number: '0101', expect: { queue_status: 'complete', answered_by: 'voicemail', ended_by: 'ASSISTANT' } },
      {
        number: '0101',
        body: { voicemail_message: 'Hi, this is Openline. Please call us back.' },
        expect: { queue_status: 'complete', answered_by: 'voicemail', ended_by: 'ASSISTANT' },
        says: /assistant: Hi, this is Openline\. Please call us back\./,
      },
      { number: '0102', expect: { queue_status: 'complete', answered_by: 'voicemail', ended_by: 'ASSISTANT' } },
      {
        number: '0102',
        body: { voicemail_message: 'Call us back.' },
        expect: { queue_status: 'complete', answered_by: 'voicemail', ended_by: 'ASSISTANT' },
        says: /assistant: Call us back\./,
      },
      {
        number: '0103',
        body: { task: 'Reach the support team about a broken order.' },
        expect: { queue_status: 'complete', answered_by: 'unknown' },
        says: /agent-action: Pressed buttons: 2/,
      },
      { number: '0104', expect: { queue_status: 'complete', answered_by: 'no-answer', ended_by: null } },
      { number: '0105', expect: { queue_status: 'complete', answered_by: 'no-answer', error: /busy/ } },
      { number: '0106', expect: { queue_status: 'queue_error', answered_by: null, error: /reach/ } },
      { number: '0107', expect: { queue_status: 'complete', answered_by: 'human', ended_by: 'USER' } },
      {
        number: '0108',
        expect: { queue_status: 'complete', answered_by: 'human', ended_by: 'ASSISTANT' },
        says: /still there/,
      },
      {
        number: '0109',
        expect: { queue_status: 'complete', answered_by: 'human' },
        says: /robot: The person you are calling is using a screening service[^]*assistant: This/,
      },
      {
        number: '0100',
        body: {
          task: 'Ask if they want a demo, then transfer them to sales.',
          transfer_list: { sales: '+14155550110' },
        },
        expect: { queue_status: 'complete', answered_by: 'human', ended_by: 'ASSISTANT', transferred: '+14155550110' },
      },
      {
        number: '0100',
        body: { task: 'Transfer the caller to billing.', transfer_phone_number: '+14155550111' },
        expect: { queue_status: 'call_error', answered_by: 'human', error: /Transfer to \+14155550111 failed/ },
        // The caller is still on the line: the agent tells them and goes on.
        says: /agent-action: Transfer to \+14155550111 failed[^]*assistant: I'm sorry, I couldn't transfer your call/,
      },
      { number: '0112', expect: { queue_status: 'complete', answered_by: 'human' }, says: /user: .*meaning to call/ },
      // A person's "not available" is the person's line, not a recording's.
      {
        number: '0191',
        expect: { queue_status: 'complete', answered_by: 'human', ended_by: 'USER' },
        says: /user: Sorry, I am not available on Tuesday\./,
      },
    ];
    for (const row of table) {
      it(`+1 415 555 ${row.number}${row.body ? ` ${JSON.stringify(row.body)}` : ''}: ${row.expect.queue_status}, answered_by ${row.expect.answered_by}`, async () => {
        const call = await place(t, {
          phone_number: `+1415555${row.number}`,
          task: 'Confirm the dentist appointment for tomorrow at 3pm.',
          answered_by_enabled: true,
          ...row.body,
        });
        const lines = roles(call).join('\n');
        assert.equal(call.queue_status, row.expect.queue_status, `${String(call.error_message)}\n${lines}`);
        assert.equal(call.answered_by, row.expect.answered_by, lines);
        if (row.expect.ended_by !== undefined) assert.equal(call.call_ended_by, row.expect.ended_by, lines);
        if (row.expect.error) assert.match(String(call.error_message), row.expect.error);
        else assert.equal(call.error_message, null);
        if (row.expect.transferred) assert.equal(call.transferred_to, row.expect.transferred);
        if (row.says) assert.match(lines, row.says);
        assert.equal(call.completed, true);
        // Ended: a length, a duration and a price, of the seed's types, whether it connected or not.
        assert.deepEqual(
          [typeof call.call_length, typeof call.corrected_duration, typeof call.price],
          ['number', 'string', 'number'],
        );
        report.push(
          `${row.number}${row.body ? '*' : ' '} ${String(call.queue_status).padEnd(11)} answered_by=${String(call.answered_by).padEnd(9)} ended_by=${String(call.call_ended_by).padEnd(9)} transcript=${(call.transcripts as unknown[]).length} ${call.error_message ?? ''}`,
        );
      });
    }

    it('answered_by stays null when answered_by_enabled is off, and amd is its legacy name', async () => {
      const off = await place(t, { phone_number: '+14155550107', task: 'Say hi.' });
      assert.equal(off.answered_by, null);
      const legacy = await place(t, { phone_number: '+14155550107', task: 'Say hi.', amd: true });
      assert.equal(legacy.answered_by, 'human');
    });

    it('IVR without amd: hangs up (rule 2), or leaves the message, or with ignore talks on', async () => {
      const ends = await place(t, { phone_number: '+14155550103', task: 'Reach sales.' });
      assert.match(roles(ends).join('\n'), /IVR detected \(rule 2\): end/);
      assert.equal(
        (ends.transcripts as { user: string }[]).filter(
          (x) => x.user === 'agent-action' && /Pressed/.test(String((x as { text?: string }).text)),
        ).length,
        0,
      );
      const message = await place(t, {
        phone_number: '+14155550103',
        task: 'Reach sales.',
        voicemail_message: 'Please call back.',
      });
      assert.match(roles(message).join('\n'), /assistant: Please call back\./);
      const ignore = await place(t, { phone_number: '+14155550103', task: 'Reach sales.', voicemail_action: 'ignore' });
      assert.match(roles(ignore).join('\n'), /IVR detected \(rule 2\): continue/);
    });

    it('max_duration ends a call that is still going, by the assistant', async () => {
      // A user persona (personas are data) that keeps asking, so only max_duration can end the call.
      const call = await place(t, { phone_number: '+14155550190', task: 'Answer their questions.', max_duration: 1 });
      assert.equal(call.call_ended_by, 'ASSISTANT');
      assert.match(roles(call).join('\n'), /max_duration of 1 minutes reached/);
      const seconds = Number(call.corrected_duration);
      assert.ok(seconds >= 60 && seconds <= 90, String(seconds));
      assert.ok(Math.abs(Date.parse(String(call.end_at)) - Date.parse(String(call.started_at)) - 60_000) < 1000);
    });

    it('closes live calls whose process stopped renewing their lease, and only those', async () => {
      const accountId = (await t.services.accounts.authenticate(t.key))!.id;
      const make = async (lease: string) => {
        const r = await t.request('POST', '/v1/calls', {
          phone_number: '+14155550100',
          task: 'x',
          start_time: '2099-01-01 00:00:00',
        });
        const id = String(r.body.call_id);
        await t.services.queue.cancel(`dial:${id}`);
        await t.services.calls.transition(id, ['queued'], { queue_status: 'allocated', status: 'allocated' });
        await t.services.calls.transition(id, ['allocated'], {
          queue_status: 'started',
          status: 'started',
          lease_until: lease,
        });
        return id;
      };
      const now = t.services.clock.now().getTime();
      const orphan = await make(new Date(now - 1000).toISOString());
      const alive = await make(new Date(now + 3_600_000).toISOString());
      await t.services.engine.recover({ soleProcess: false });
      const closed = await t.services.calls.get(accountId, orphan);
      assert.equal(closed?.queue_status, 'call_error');
      assert.match(String(closed?.error_message), /server running it stopped/);
      assert.equal((await t.services.calls.get(accountId, alive))?.queue_status, 'started');
      await t.services.calls.transition(alive, ['started'], {
        queue_status: 'complete',
        status: 'completed',
        completed: true,
      });
    });

    it('refuses, without writing, a state change the call lifecycle does not allow', async () => {
      const accountId = (await t.services.accounts.authenticate(t.key))!.id;
      const r = await t.request('POST', '/v1/calls', {
        phone_number: '+14155550100',
        task: 'x',
        start_time: '2099-01-01 00:00:00',
      });
      const id = String(r.body.call_id);
      await t.services.queue.cancel(`dial:${id}`);
      await assert.rejects(
        t.services.calls.transition(id, ['queued'], { queue_status: 'started', status: 'started' }),
        (error: Error) => error.name === 'IllegalTransition' && /queued -> started/.test(error.message),
      );
      assert.equal((await t.services.calls.get(accountId, id))?.queue_status, 'queued');
      // A move the lifecycle allows from every state named goes through.
      assert.equal(
        await t.services.calls.transition(id, ['queued'], { queue_status: 'complete', status: 'canceled' }),
        true,
      );
    });

    it('stops a live call through the API', async () => {
      const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550108', task: 'Wait on the line.' });
      const id = String(r.body.call_id);
      for (let i = 0; i < 200; i++) {
        if ((await t.request('GET', `/v1/calls/${id}`)).body.queue_status === 'started') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const stop = await t.request('POST', `/v1/calls/${id}/stop`);
      assert.equal(stop.status, 200);
      const call = await ended(t, id);
      assert.equal(call.queue_status, 'complete');
      assert.equal(call.call_ended_by, 'ASSISTANT');
      assert.match(roles(call).join('\n'), /stopped through the API/);
    });

    it('retries after voicemail with the retry settings, linked to the first call', async () => {
      const first = await place(t, {
        phone_number: '+14155550101',
        task: 'Remind them of the appointment.',
        retry: { wait: 5, voicemail_action: 'leave_message', voicemail_message: 'Second try: please call back.' },
      });
      assert.equal(first.answered_by, null);
      // The retry is placed by the call's post-call job, a moment after it ended.
      const retried = await waitFor('the retry after voicemail', async () => {
        const rows = await t.services.storage.db
          .selectFrom('calls')
          .select('id')
          .where('retry_of', '=', String(first.call_id))
          .execute();
        return rows.length > 0 && rows.map((r) => r.id);
      });
      assert.equal(retried.length, 1);
      const second = await ended(t, retried[0]!);
      assert.match(roles(second).join('\n'), /assistant: Second try: please call back\./);
    });

    it('0100: a person answers, the offline model states the task, they agree and both say goodbye', async () => {
      const call = await place(t, {
        phone_number: '+14155550100',
        task: 'Confirm the dentist appointment for tomorrow at 3pm.',
        answered_by_enabled: true,
      });
      assert.equal(call.queue_status, 'complete', JSON.stringify(call));
      assert.equal(call.status, 'completed');
      assert.equal(call.answered_by, 'human');
      assert.ok(['USER', 'ASSISTANT'].includes(String(call.call_ended_by)));
      assert.ok(Number(call.call_length) > 0);
      // OPENLINE_SANDBOX_PRICE_PER_MINUTE: the price follows the length.
      assert.ok(Math.abs(Number(call.price) - Number(call.call_length) * 0.09) < 0.001, String(call.price));
      assert.ok(Number(call.corrected_duration) > 0);
      assert.ok(call.started_at && call.end_at);
      const lines = roles(call);
      assert.ok(
        lines.some((l) => l.startsWith('user: ')),
        lines.join('\n'),
      );
      assert.ok(
        lines.some((l) => l.startsWith('assistant: ') && l.includes('confirm the dentist appointment')),
        lines.join('\n'),
      );
      assert.ok(String(call.concatenated_transcript).includes('assistant: '));
      assert.equal((call.request_data as Record).model, 'offline');
      assert.equal((call.variables as Record).call_id, call.call_id);
      // No `from` was sent: the number the sandbox called from is the record's and {{from}}'s.
      assert.match(String(call.from), /^\+1415555120\d$/);
      assert.equal((call.variables as Record).from, call.from);
      assert.equal((call.variables as Record).short_from, String(call.from).slice(2));
    });
  });

describe('inbound calls on the sandbox', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(100) });
    await t.services.startWorkers();
  });
  after(() => t.close());

  it('a sandbox person calls an inbound number and its agent answers with the configured prompt', async () => {
    const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: '415' });
    const number = String(bought.body.phone_number);
    const configured = await t.request('POST', `/v1/inbound/${encodeURIComponent(number)}`, {
      prompt: 'Take a message for the dental office.',
      first_sentence: 'Smile Dental, how can I help?',
    });
    assert.equal(configured.status, 200, JSON.stringify(configured.body));
    const r = await t.request('POST', '/v1/sandbox/inbound', { from: '+12125550100', to: number });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.caller_call_id, null);
    const call = await ended(t, String(r.body.call_id));
    assert.equal(call.inbound, true);
    assert.equal(call.to, number);
    assert.equal(call.from, '+12125550100');
    assert.equal(call.queue_status, 'complete');
    const lines = roles(call);
    assert.ok(
      lines[0]?.startsWith('assistant: Smile Dental') || lines.includes('assistant: Smile Dental, how can I help?'),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => l.startsWith('user: ')),
      lines.join('\n'),
    );
  });

  it('a call between two numbers of the account connects agent to agent, each with its record', async () => {
    const a = String((await t.request('POST', '/v1/inbound/purchase', {})).body.phone_number);
    const b = String((await t.request('POST', '/v1/inbound/purchase', {})).body.phone_number);
    await t.request('POST', `/v1/inbound/${encodeURIComponent(a)}`, { prompt: 'Confirm the order for tomorrow.' });
    await t.request('POST', `/v1/inbound/${encodeURIComponent(b)}`, { prompt: 'Answer questions about orders.' });
    const r = await t.request('POST', '/v1/sandbox/inbound', { from: a, to: b });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const callee = await ended(t, String(r.body.call_id));
    const caller = await ended(t, String(r.body.caller_call_id));
    assert.equal(callee.inbound, true);
    assert.equal(caller.inbound, false);
    assert.equal(caller.from, a);
    assert.equal(caller.to, b);
    assert.ok(
      roles(callee).some((l) => l.startsWith('user: ')),
      roles(callee).join('\n'),
    );
    assert.ok(
      roles(caller).some((l) => l.startsWith('user: ')),
      roles(caller).join('\n'),
    );
  });

  it('refuses numbers the account does not hold', async () => {
    const r = await t.request('POST', '/v1/sandbox/inbound', { from: '+12125550100', to: '+14155550999' });
    assert.equal(r.status, 404);
    const other = String((await t.request('POST', '/v1/inbound/purchase', {}, { as: t.otherKey })).body.phone_number);
    assert.equal((await t.request('POST', '/v1/sandbox/inbound', { from: '+12125550100', to: other })).status, 404);
  });
});
