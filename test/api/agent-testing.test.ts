import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { verifyWebhook } from '../../src/outbound/signing.js';
import { FakeOpenAi, fakeLlmConfig, type FakeReply } from '../../src/testing/fake-openai.js';
import {
  callerLines,
  evaluateAssertion,
  inputMessageProblems,
  normalizeAssertions,
  userLinesOf,
} from '../../src/agent-tests/scenarios.js';
import type { CallView } from '../../src/agent-tests/expect.js';

type Json = Record<string, unknown>;

const pathwaySpec = JSON.parse(fs.readFileSync('examples/pathways/lead-qualification.json', 'utf8')) as Json;

/** The renter of the lead qualification example: the pathway must say he is not a fit. */
const RENTER = ['Hello?', 'No, I rent my apartment.', 'Okay, bye.'];

/** A run read through the API once it is no longer RUNNING. */
async function finished(t: TestApp, runId: string): Promise<Json> {
  for (let i = 0; i < 1200; i++) {
    const r = await t.request('GET', `/v1/agent-testing/runs/${runId}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    if (r.body.status !== 'RUNNING') return r.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${runId} did not finish`);
}

describe('userLinesOf: the caller of a finished call as scripted lines', () => {
  it('keeps the caller words, one line per turn, and skips the agent', () => {
    assert.deepEqual(
      userLinesOf([
        { user: 'assistant', text: 'Hi, do you own your home?' },
        { user: 'user', text: 'Hello?' },
        { user: 'user', text: 'Who is this?' },
        { user: 'assistant', text: 'Riley from Sunny Solar.' },
        { user: 'user', text: ' No, I rent. ' },
        { user: 'agent-action', text: 'ended the call' },
      ]),
      ['Hello? Who is this?', 'No, I rent.'],
    );
  });
});

describe("callerLines: a scenario's input_messages as scripted lines", () => {
  it("keeps the caller's words, with after_ms and interrupt when a message has them, and checks them", () => {
    const messages = [
      'Hello?',
      { role: 'user', content: 'Yes, that works.', after_ms: 1500 },
      { role: 'assistant', content: 'Great.', after_ms: 'soon' },
      { content: 'Wait, which day?', interrupt: true },
      { role: 'User', text: ' Bye. ', after_ms: 0, interrupt: false },
    ];
    assert.deepEqual(callerLines(messages), [
      'Hello?',
      { say: 'Yes, that works.', after_ms: 1500 },
      { say: 'Wait, which day?', interrupt: true },
      { say: 'Bye.', after_ms: 0, interrupt: false },
    ]);
    assert.deepEqual(inputMessageProblems(messages), [], "the agent's messages are not checked");
    assert.deepEqual(
      inputMessageProblems(['Hi', { content: 'a', after_ms: -1 }, { content: 'b', after_ms: 1.5, interrupt: 'yes' }]),
      [
        'input_messages[1].after_ms: Expected integer to be greater or equal to 0',
        'input_messages[2].after_ms: Expected integer',
      ],
    );
    assert.deepEqual(inputMessageProblems([{ content: 'c', interrupt: 'yes' }]), [
      'input_messages[0].interrupt: Expected boolean',
    ]);
  });
});

describe('the hosted assertion types as expectations', () => {
  const call: CallView = {
    status: 'completed',
    answered_by: 'human',
    call_ended_by: 'USER',
    call_length: 0.5,
    transferred_to: null,
    variables: { owns_home: 'false', email: 'a@b.c' },
    pathway_logs: JSON.stringify([
      { event: 'entered', node_name: 'Greeting' },
      { event: 'entered', node_name: 'Not a fit' },
    ]),
    transcripts: [
      { user: 'assistant', text: 'Do you own your home?' },
      { user: 'user', text: 'No, I rent.' },
    ],
    latency: null,
  };
  const judged = async (assertion: Json) => {
    const errors: string[] = [];
    const [stored] = normalizeAssertions([assertion], errors);
    assert.deepEqual(errors, []);
    return evaluateAssertion(stored!, call, undefined);
  };
  const table: [Json, boolean, RegExp?][] = [
    [{ type: 'contains', config: { value: 'own your home' } }, true],
    [{ type: 'TRANSCRIPT_CONTAINS', config: { value: ['rent', 'mortgage'] } }, false, /"mortgage" was not said/],
    [{ type: 'NOT_CONTAINS', config: { value: 'rent' } }, false, /"rent" was said \(user: "No, I rent\."\)/],
    [{ type: 'regex', config: { pattern: 'r[e]nt\\.$' } }, true],
    [{ type: 'VARIABLE_EQUALS', config: { variable: 'owns_home', value: false } }, true],
    [
      { type: 'variable_extracted', config: { variable: 'owns_home', value: true } },
      false,
      /variables\.owns_home: wanted true/,
    ],
    [{ type: 'VARIABLE_EXISTS', config: { variable: 'zip' } }, false, /variables\.zip: wanted "\*", got nothing/],
    [{ type: 'NODE_VISITED', config: { node: 'Not a fit' } }, true],
    [
      { type: 'NODE_NOT_VISITED', config: { node: 'Not a fit' } },
      false,
      /"Not a fit" was visited \(nodes: Greeting > Not a fit\)/,
    ],
    [{ type: 'NODE_NOT_VISITED', config: { node: 'Monthly bill' } }, true],
    [
      { type: 'NODE_SEQUENCE', config: { nodes: ['Not a fit', 'Greeting'] } },
      false,
      /"Greeting" was not reached after "Not a fit"/,
    ],
    [{ type: 'ENDED_BY', config: { value: 'assistant' } }, false, /ended_by: wanted ASSISTANT, got USER/],
    [{ type: 'MAX_DURATION', config: { seconds: 20 } }, false, /took 30\.0 s, over 20 s/],
    [{ type: 'LLM_JUDGE', config: { prompt: 'Polite?' } }, false, /needs a language model/],
  ];
  for (const [assertion, passed, message] of table)
    it(`${String(assertion.type)} ${JSON.stringify(assertion.config)} ${passed ? 'passes' : 'fails'}`, async () => {
      const result = await judged(assertion);
      assert.equal(result.passed, passed, result.message);
      if (message) assert.match(result.message, message);
    });
});

for (const storage of ['sqlite', 'postgres'] as const)
  describe(`agent testing through the API (${storage}, sandbox, clock 50x)`, () => {
    let t: TestApp;
    let pathwayId: string;
    const hooks: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    let sink: http.Server;
    let sinkUrl: string;

    before(async () => {
      t = await createTestApp({ clock: new ScaledClock(50), postgres: storage === 'postgres' });
      await t.services.startWorkers();
      const r = await t.request('POST', '/v1/pathway/create', {
        name: 'Lead qualification',
        nodes: pathwaySpec.nodes,
        edges: pathwaySpec.edges,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      pathwayId = String(r.body.pathway_id);
      sink = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          hooks.push({ headers: req.headers, body });
          res.writeHead(200).end('ok');
        });
      });
      await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
      sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;
    });
    after(async () => {
      await t.close();
      await new Promise((resolve) => sink.close(resolve));
    });

    const scenario = (extra: Json = {}): Json => ({
      name: 'A renter is not a fit',
      pathway_id: pathwayId,
      input_messages: RENTER.map((content) => ({ role: 'user', content })),
      assertions: [
        { type: 'NODE_VISITED', name: 'told not a fit', config: { node: 'Not a fit' } },
        { type: 'VARIABLE_EQUALS', config: { variable: 'owns_home', value: false } },
        { type: 'NOT_CONTAINS', config: { value: 'e-mail address' } },
      ],
      ...extra,
    });

    const create = async (body: Json, as?: string): Promise<string> => {
      const r = await t.request('POST', '/v1/agent-testing/scenarios', body, as ? { as } : {});
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return String(r.body.id);
    };

    const run = async (id: string, body: Json = {}): Promise<Json> => {
      const r = await t.request('POST', `/v1/agent-testing/scenarios/${id}/run`, body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'RUNNING');
      return finished(t, String(r.body.run_id));
    };

    it('creates, reads, lists, updates and deletes a scenario in the hosted shape', async () => {
      const r = await t.request('POST', '/v1/agent-testing/scenarios', scenario({ category: 'HAPPY_PATH' }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const id = String(r.body.id);
      assert.equal(r.body.pathway_id, pathwayId);
      assert.equal(r.body.enabled, true);
      assert.equal(r.body.most_recent_run, null);
      const assertions = r.body.assertions as Json[];
      assert.deepEqual(
        assertions.map((a) => [a.type, a.is_required, a.weight, a.order]),
        [
          ['NODE_VISITED', true, 1, 0],
          ['VARIABLE_EQUALS', true, 1, 1],
          ['NOT_CONTAINS', true, 1, 2],
        ],
      );
      assert.ok(assertions.every((a) => typeof a.id === 'string'));

      const got = await t.request('GET', `/v1/agent-testing/scenarios/${id}`);
      assert.equal(got.body.name, 'A renter is not a fit');
      assert.equal(got.body.category, 'HAPPY_PATH');
      const list = await t.request('GET', '/v1/agent-testing/scenarios');
      assert.ok((list.body.scenarios as Json[]).some((s) => s.id === id));

      const put = await t.request('PUT', `/v1/agent-testing/scenarios/${id}`, { name: 'Renamed', max_turns: 8 });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(put.body.name, 'Renamed');
      assert.equal(put.body.max_turns, 8);
      assert.equal((put.body.assertions as Json[]).length, 3, 'assertions kept when not given');
      assert.equal(put.body.pathway_id, pathwayId);

      const del = await t.request('DELETE', `/v1/agent-testing/scenarios/${id}`);
      assert.equal(del.status, 200);
      assert.equal((await t.request('GET', `/v1/agent-testing/scenarios/${id}`)).status, 404);
    });

    it('refuses bad scenarios with a 400 whose errors name each field', async () => {
      const r = await t.request('POST', '/v1/agent-testing/scenarios', {
        pathway_id: 'no-such-pathway',
        max_turns: 0,
        assertions: [
          { type: 'SOUNDS_NICE' },
          { type: 'regex', config: { pattern: '(' } },
          { type: 'VARIABLE_EQUALS', config: { value: 1 } },
        ],
      });
      assert.equal(r.status, 400);
      const errors = (r.body.errors as string[]).join('\n');
      assert.match(errors, /^name /m);
      assert.match(errors, /^max_turns /m);
      assert.match(errors, /pathway_id is not a pathway of this account/);
      assert.match(errors, /assertions\[0\]\.type must be one of: LLM_JUDGE, CONTAINS/);
      assert.match(errors, /assertions\[1\] \(REGEX\) config\.pattern is not a valid regular expression/);
      assert.match(errors, /assertions\[2\] \(VARIABLE_EQUALS\) needs the variable name in config\.variable/);

      const timing = await t.request(
        'POST',
        '/v1/agent-testing/scenarios',
        scenario({ input_messages: [{ role: 'user', content: 'Hello?', after_ms: 90_000 }, 'Bye.'] }),
      );
      assert.equal(timing.status, 400);
      assert.match(
        (timing.body.errors as string[]).join(),
        /input_messages\[0\]\.after_ms: Expected integer to be less or equal to 60000/,
      );

      const noAgent = await t.request('POST', '/v1/agent-testing/scenarios', { name: 'x' });
      assert.equal(noAgent.status, 400);
      assert.match((noAgent.body.errors as string[])[0]!, /^pathway_id is required \(or agent_id, phone_number/);

      const id = await create(scenario());
      const empty = await t.request('PUT', `/v1/agent-testing/scenarios/${id}`, { colour: 'blue' });
      assert.equal(empty.status, 400);
    });

    it("another account's scenarios, runs and batches answer 404, and its pathway is not the account's", async () => {
      const id = await create(scenario());
      for (const [method, url, body] of [
        ['GET', `/v1/agent-testing/scenarios/${id}`, undefined],
        ['PUT', `/v1/agent-testing/scenarios/${id}`, { name: 'mine' }],
        ['DELETE', `/v1/agent-testing/scenarios/${id}`, undefined],
        ['POST', `/v1/agent-testing/scenarios/${id}/run`, {}],
        ['GET', `/v1/agent-testing/scenarios/${id}/runs`, undefined],
      ] as const) {
        const r = await t.request(method, url, body, { as: t.otherKey });
        assert.equal(r.status, 404, `${method} ${url}: ${JSON.stringify(r.body)}`);
      }
      const theirs = await t.request('GET', '/v1/agent-testing/scenarios', undefined, { as: t.otherKey });
      assert.ok(!(theirs.body.scenarios as Json[]).some((s) => s.id === id));
      const foreign = await t.request('POST', '/v1/agent-testing/scenarios', scenario(), { as: t.otherKey });
      assert.equal(foreign.status, 400);
      assert.match((foreign.body.errors as string[]).join(), /pathway_id is not a pathway of this account/);
      const batch = await t.request('POST', '/v1/agent-testing/batch-run', { scenario_ids: [id] }, { as: t.otherKey });
      assert.equal(batch.status, 400);
      assert.match((batch.body.errors as string[]).join(), /scenario_ids\[0\] is not a scenario of this account/);
    });

    it('a run is a real sandbox call that passes its assertions, with the transcript and the call', async () => {
      const id = await create(scenario());
      const result = await run(id);
      assert.equal(result.status, 'PASSED', JSON.stringify(result));
      assert.equal(result.overall_score, 1);
      assert.equal(result.scenario_id, id);
      assert.deepEqual(
        (result.assertion_results as Json[]).map((a) => [a.type, a.passed]),
        [
          ['NODE_VISITED', true],
          ['VARIABLE_EQUALS', true],
          ['NOT_CONTAINS', true],
        ],
      );
      assert.match(String(result.transcript), /user: No, I rent my apartment\./);
      assert.deepEqual((result.nodes_visited as string[]).slice(0, 2), ['Greeting', 'Not a fit']);
      assert.equal((result.variables_extracted as Json).owns_home, false);
      const call = await t.request('GET', `/v1/calls/${String(result.call_id)}`);
      assert.equal(call.body.status, 'completed');
      assert.equal((call.body.request_data as Json).pathway_id, pathwayId);
      const scenarioNow = await t.request('GET', `/v1/agent-testing/scenarios/${id}`);
      assert.equal((scenarioNow.body.most_recent_run as Json).status, 'PASSED');
      const runs = await t.request('GET', `/v1/agent-testing/scenarios/${id}/runs`);
      assert.equal(runs.body.total_count, 1);
      assert.equal(
        (await t.request('GET', `/v1/agent-testing/runs/${String(result.id)}`, undefined, { as: t.otherKey })).status,
        404,
      );
    });

    it('a run that fails says which assertion and why, scores by weight, and its result reaches the webhook signed', async () => {
      const id = await create(
        scenario({
          assertions: [
            { type: 'NODE_VISITED', name: 'asks for the bill', config: { node: 'Monthly bill' }, weight: 3 },
            { type: 'CONTAINS', config: { value: 'rent' }, weight: 1 },
            { type: 'LLM_JUDGE', config: { prompt: 'Was the agent polite?', threshold: 0.7 }, is_required: false },
          ],
        }),
      );
      const r = await t.request('POST', `/v1/agent-testing/scenarios/${id}/run`, { webhook_url: sinkUrl });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const result = await finished(t, String(r.body.run_id));
      assert.equal(result.status, 'FAILED');
      assert.equal(result.overall_score, 0.2, 'the CONTAINS weight of 1 out of 5');
      const [node, contains, judge] = result.assertion_results as Json[];
      assert.equal(node!.passed, false);
      assert.match(
        String(node!.message),
        /pathway_nodes: "Monthly bill" was not reached \(nodes: Greeting > Not a fit/,
      );
      assert.equal(contains!.passed, true);
      assert.equal(judge!.passed, false);
      assert.match(String(judge!.message), /LLM_JUDGE needs a language model/);
      const hook = await waitForHook(hooks, String(r.body.run_id));
      const body = JSON.parse(hook.body) as Json;
      assert.equal(body.status, 'FAILED');
      assert.equal(body.call_id, result.call_id);
      const row = await t.services.agentTests.runById(String(r.body.run_id));
      const secret = await t.services.accounts.webhookSecret(row!.account_id);
      // Signed at the server's clock (50x here): checked against it.
      assert.ok(verifyWebhook(hook.headers, hook.body, secret, { now: t.services.clock.now() }), 'signature verifies');
    });

    it('a scenario with only tester_persona_prompt is a 400 on run without a model, naming the field', async () => {
      const id = await create({
        name: 'An angry caller',
        pathway_id: pathwayId,
        tester_persona_prompt: 'You are angry about your bill.',
      });
      const r = await t.request('POST', `/v1/agent-testing/scenarios/${id}/run`, {});
      assert.equal(r.status, 400);
      assert.match((r.body.errors as string[])[0]!, /^tester_persona_prompt needs a language model/);
    });

    it('a run whose call Send Call refuses is a 400 with its reasons, and the run ends as ERROR', async () => {
      const id = await create(scenario());
      const r = await t.request('POST', `/v1/agent-testing/scenarios/${id}/run`, { version_number: 99 });
      assert.equal(r.status, 400);
      assert.match((r.body.errors as string[]).join(), /pathway_version 99 is not a version of this pathway/);
      const runs = await t.request('GET', `/v1/agent-testing/scenarios/${id}/runs`);
      const [run] = runs.body.runs as Json[];
      assert.equal(run!.status, 'ERROR');
      assert.match(String(run!.error_message), /^the call was refused: pathway_version 99/);
    });

    it('tests agents without pathways: an agent_id and an inline Send Call body', async () => {
      const agent = await t.request('POST', '/v1/agents', {
        prompt: 'You are Ava of Bright Smile Dental. Confirm the cleaning tomorrow at 3 pm.',
        first_sentence: 'Hi, this is Ava from Bright Smile Dental about your cleaning tomorrow at 3 pm.',
      });
      assert.equal(agent.status, 200, JSON.stringify(agent.body));
      const agentId = String((agent.body.agent as Json | undefined)?.agent_id ?? agent.body.agent_id);
      const lines = [
        { role: 'user', content: 'Hello?' },
        { role: 'assistant', content: 'ignored' },
        'Yes, that works. Bye.',
      ];
      const byAgent = await create({
        name: 'agent confirms',
        agent_id: agentId,
        input_messages: lines,
        assertions: [
          { type: 'CONTAINS', config: { value: 'tomorrow at 3 pm' } },
          { type: 'CALL_STATUS', config: { value: 'completed' } },
        ],
      });
      const inline = await create({
        name: 'inline confirms',
        call: { task: 'Confirm the order.', first_sentence: 'Hello, I am calling about order 42.' },
        input_messages: lines,
        assertions: [{ type: 'REGEX', config: { pattern: 'order \\d+' } }],
      });
      const number = await t.request('POST', '/v1/inbound/purchase', {
        prompt: 'You answer for Corner Bakery. Take cake orders.',
        first_sentence: 'Corner Bakery, how can I help with your cake order?',
      });
      assert.equal(number.status, 200, JSON.stringify(number.body));
      const byNumber = await create({
        name: 'the bakery line answers',
        phone_number: String(number.body.phone_number),
        input_messages: lines,
        assertions: [{ type: 'CONTAINS', config: { value: 'Corner Bakery' } }],
      });
      const [a, b, c] = await Promise.all([run(byAgent), run(inline), run(byNumber)]);
      assert.equal(a.status, 'PASSED', JSON.stringify(a.assertion_results));
      assert.equal(b.status, 'PASSED', JSON.stringify(b.assertion_results));
      assert.equal(c.status, 'PASSED', JSON.stringify(c.assertion_results));
      const foreignNumber = await t.request(
        'POST',
        '/v1/agent-testing/scenarios',
        { name: 'x', phone_number: String(number.body.phone_number) },
        { as: t.otherKey },
      );
      assert.equal(foreignNumber.status, 400);
      assert.match(
        (foreignNumber.body.errors as string[]).join(),
        /phone_number is not an inbound number of this account/,
      );
      assert.equal(
        (await t.request('POST', '/v1/agent-testing/scenarios', { name: 'x', agent_id: 'nope' })).status,
        400,
      );
    });

    it('from-call: a finished call becomes a scenario whose caller says what its caller said, against the same pathway', async () => {
      const first = await run(await create(scenario()));
      const r = await t.request('POST', '/v1/agent-testing/scenarios/from-call', {
        call_id: first.call_id,
        name: 'Replay of the renter',
        assertions: [{ type: 'NODE_VISITED', config: { node: 'Not a fit' } }],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.name, 'Replay of the renter');
      assert.equal(r.body.pathway_id, pathwayId);
      const said = (r.body.input_messages as Json[]).map((m) => m.content);
      const callerSaid = (first.chat_history as Json[]).filter((m) => m.role === 'user').map((m) => m.content);
      assert.deepEqual(said, callerSaid);
      assert.deepEqual(said.slice(0, 2), RENTER.slice(0, 2));
      assert.equal((r.body.metadata as Json).source_call_id, first.call_id);
      const replay = await run(String(r.body.id));
      assert.equal(replay.status, 'PASSED', JSON.stringify(replay.assertion_results));
      const foreign = await t.request(
        'POST',
        '/v1/agent-testing/scenarios/from-call',
        { call_id: first.call_id },
        { as: t.otherKey },
      );
      assert.equal(foreign.status, 404);
    });

    it('batch runs and repeats: pass rates per scenario and overall, and the batch webhook once all ended', async () => {
      const pass = await create(scenario({ name: 'passes' }));
      const fail = await create(
        scenario({ name: 'fails', assertions: [{ type: 'NODE_VISITED', config: { node: 'Monthly bill' } }] }),
      );
      const r = await t.request('POST', '/v1/agent-testing/batch-run', {
        scenario_ids: [pass, fail],
        repeat: 2,
        webhook_url: sinkUrl,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal((r.body.runs as Json[]).length, 4);
      const batchId = String(r.body.batch_id);
      let batch: Json = {};
      for (let i = 0; i < 1200; i++) {
        batch = (await t.request('GET', `/v1/agent-testing/batches/${batchId}`)).body;
        if (batch.status !== 'RUNNING') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(batch.status, 'FAILED', JSON.stringify(batch.scenarios));
      assert.equal(batch.total_runs, 4);
      assert.equal(batch.passed_runs, 2);
      assert.equal(batch.pass_rate, 0.5);
      assert.equal(batch.passed_scenarios, 1);
      assert.equal(batch.failed_scenarios, 1);
      assert.deepEqual(
        (batch.scenarios as Json[]).map((s) => [s.name, s.runs, s.pass_rate]),
        [
          ['passes', 2, 1],
          ['fails', 2, 0],
        ],
      );
      const listed = await t.request('GET', `/v1/agent-testing/runs?batch_id=${batchId}&status=failed`);
      assert.equal(listed.body.total_count, 2);
      const hook = await waitForHook(hooks, batchId);
      assert.equal((JSON.parse(hook.body) as Json).pass_rate, 0.5);
      assert.equal(
        (await t.request('GET', `/v1/agent-testing/batches/${batchId}`, undefined, { as: t.otherKey })).status,
        404,
      );

      const sim = await t.request('POST', '/v1/agent-testing/simulation-sets', {
        scenario_ids: [pass],
        simulations_per_scenario: 3,
      });
      assert.equal(sim.status, 200, JSON.stringify(sim.body));
      assert.equal(sim.body.total_runs, 3);
    });

    it('clones built-in templates onto a pathway, an agent or a persona, and runs one without a model', async () => {
      const templates = await t.request('GET', '/v1/agent-testing/templates');
      assert.equal(templates.status, 200);
      const list = templates.body.data as Json[];
      assert.ok(list.length >= 5);
      assert.ok(list.some((x) => x.id === 'wrong-number'));

      const onPathway = await t.request('POST', '/v1/agent-testing/templates/wrong-number/clone', {
        pathway_id: pathwayId,
        name: 'Wrong number, lead pathway',
      });
      assert.equal(onPathway.status, 200, JSON.stringify(onPathway.body));
      assert.equal(onPathway.body.name, 'Wrong number, lead pathway');
      assert.equal(onPathway.body.pathway_id, pathwayId);
      assert.equal(onPathway.body.category, 'edge case');

      const agent = await t.request('POST', '/v1/agents', { prompt: 'You remind patients of their cleaning.' });
      const agentId = String((agent.body.agent as Json).agent_id);
      const onAgent = await t.request('POST', '/v1/agent-testing/templates/who-is-calling/clone', {
        agent_id: agentId,
      });
      assert.equal(onAgent.status, 200, JSON.stringify(onAgent.body));
      const started = await t.request('POST', `/v1/agent-testing/scenarios/${String(onAgent.body.id)}/run`, {});
      const run = await finished(t, String(started.body.run_id));
      // The scripted caller runs offline; the judge's rubric, not required, fails for want of a model.
      assert.equal(run.status, 'PASSED', JSON.stringify(run));
      const results = run.assertion_results as Json[];
      assert.equal(results.find((r) => r.name === 'no unfilled variables')?.passed, true);
      assert.equal(results.find((r) => r.name === 'behaviour')?.passed, false);
      assert.match(String(run.transcript), /user: Sorry, who is this\? What is this about\?/);

      const persona = await t.request('POST', '/v1/personas', { name: 'Ava', personality_prompt: 'You are Ava.' });
      const personaId = String((persona.body.data as Json).id);
      const onPersona = await t.request('POST', '/v1/agent-testing/templates/not-interested/clone', {
        persona_id: personaId,
      });
      assert.equal(onPersona.status, 200, JSON.stringify(onPersona.body));
      assert.deepEqual(onPersona.body.call, { persona_id: personaId });

      assert.equal(
        (await t.request('POST', '/v1/agent-testing/templates/nope/clone', { pathway_id: pathwayId })).status,
        404,
      );
      const nobody = await t.request('POST', '/v1/agent-testing/templates/wrong-number/clone', {});
      assert.equal(nobody.status, 400);
      assert.match(JSON.stringify(nobody.body.errors), /pathway_id is required/);
      const foreign = await t.request(
        'POST',
        '/v1/agent-testing/templates/wrong-number/clone',
        { persona_id: personaId },
        { as: t.otherKey },
      );
      assert.match(JSON.stringify(foreign.body.errors), /call\.persona_id is not a persona of this account/);
    });

    it("gives a pathway's testing analytics from its runs so far, and makes scenarios from calls under the hosted name", async () => {
      const basic = await t.request('GET', `/v1/agent-testing/analytics/${pathwayId}`);
      assert.equal(basic.status, 200, JSON.stringify(basic.body));
      const a = basic.body;
      assert.ok((a.total_runs as number) >= 4, JSON.stringify(a));
      assert.equal(
        a.total_runs,
        (a.passed as number) + (a.failed as number) + (a.errored as number) + (a.running as number),
      );
      const byName = new Map((a.scenarios as Json[]).map((x) => [x.name, x]));
      assert.equal(byName.get('passes')?.pass_rate, 1);
      assert.equal(byName.get('fails')?.pass_rate, 0);
      assert.ok((a.trend as Json[]).length >= 1);
      const enhanced = (await t.request('GET', `/v1/agent-testing/analytics/${pathwayId}/enhanced`)).body;
      const visits = new Map((enhanced.node_visits as Json[]).map((x) => [x.node, x.runs]));
      assert.ok((visits.get('Not a fit') as number) >= 2, JSON.stringify(enhanced.node_visits));
      assert.ok(enhanced.weakest_link, 'the failing runs ended somewhere');
      assert.equal((await t.request('GET', '/v1/agent-testing/analytics/nope')).status, 404);
      assert.equal(
        (await t.request('GET', `/v1/agent-testing/analytics/${pathwayId}`, undefined, { as: t.otherKey })).status,
        404,
      );

      const first = await run(await create(scenario()));
      const persona = await t.request('POST', '/v1/personas', { name: 'Lee', personality_prompt: 'You are Lee.' });
      const generated = await t.request('POST', '/v1/agent-testing/scenarios/generate', {
        call_id: first.call_id,
        persona_id: String((persona.body.data as Json).id),
        name: 'The renter, to the persona',
      });
      assert.equal(generated.status, 200, JSON.stringify(generated.body));
      assert.deepEqual(generated.body.call, { persona_id: (persona.body.data as Json).id });
      assert.equal(generated.body.pathway_id, null);
      assert.deepEqual((generated.body.input_messages as Json[]).map((m) => m.content).slice(0, 2), RENTER.slice(0, 2));
    });

    it('analyzes a failed run by its assertions and the node it ended in (no model)', async () => {
      const failing = await run(
        await create(
          scenario({ name: 'wants a bill', assertions: [{ type: 'NODE_VISITED', config: { node: 'Monthly bill' } }] }),
        ),
      );
      assert.equal(failing.status, 'FAILED');
      const r = await t.request('POST', `/v1/agent-testing/runs/${String(failing.run_id)}/analyze`, {});
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.analyzed_by, 'rules');
      assert.equal(r.body.run_status, 'FAILED');
      assert.equal((r.body.failed_assertions as Json[]).length, 1);
      assert.match(
        String(r.body.summary),
        /^1 of 1 assertions failed: NODE_VISITED \(.*Monthly bill.*\)\. The call ended in node "/,
      );
      assert.equal(r.body.last_node, (failing.nodes_visited as string[]).at(-1));
      assert.equal(r.body.root_cause, null);
      const passing = await run(await create(scenario()));
      const ok = await t.request('POST', `/v1/agent-testing/runs/${String(passing.run_id)}/analyze`, {});
      assert.match(String(ok.body.summary), /^The run passed with no failed assertion/);
      assert.equal((await t.request('POST', '/v1/agent-testing/runs/nope/analyze', {})).status, 404);
      const foreign = await t.request(
        'POST',
        `/v1/agent-testing/runs/${String(failing.run_id)}/analyze`,
        {},
        { as: t.otherKey },
      );
      assert.equal(foreign.status, 404);
    });
  });

async function waitForHook(
  hooks: { headers: http.IncomingHttpHeaders; body: string }[],
  id: string,
): Promise<{ headers: http.IncomingHttpHeaders; body: string }> {
  for (let i = 0; i < 600; i++) {
    const hook = hooks.find((h) => String(h.headers['webhook-id']).endsWith(id));
    if (hook) return hook;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no webhook for ${id}`);
}

// Its timing is the test: at 10x, as a call's seconds allow, so a loaded machine's stalls do not
// reorder the caller's timed line and the agent's words.
describe('a timed line (clock 10x)', () => {
  it('the caller pauses before it, so the agent asks whether anyone is there first', async () => {
    const t = await createTestApp({ clock: new ScaledClock(10) });
    try {
      await t.services.startWorkers();
      const messages = [
        { role: 'user', content: 'Hello?' },
        { role: 'user', content: 'Yes, that works.', after_ms: 9000 },
        { role: 'user', content: 'Thanks, bye.' },
      ];
      const r = await t.request('POST', '/v1/agent-testing/scenarios', {
        name: 'a slow patient',
        call: {
          task: 'Confirm the cleaning tomorrow at 3 pm.',
          first_sentence: 'Hi, this is Ava from Bright Smile Dental about your cleaning tomorrow at 3 pm.',
          wait_for_greeting: true,
        },
        input_messages: messages,
        assertions: [{ type: 'REGEX', config: { pattern: 'still there\\?[\\s\\S]*user: Yes, that works' } }],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.input_messages, messages, 'the hosted shape, with the timing kept');
      const started = await t.request('POST', `/v1/agent-testing/scenarios/${String(r.body.id)}/run`, {});
      assert.equal(started.status, 200, JSON.stringify(started.body));
      const result = await finished(t, String(started.body.run_id));
      assert.equal(result.status, 'PASSED', JSON.stringify(result));
      const said = (result.chat_history as Json[]).map((m) => `${String(m.role)}: ${String(m.content)}`);
      const asked = said.findIndex((l) => /^assistant: .*still there\?/.test(l));
      assert.ok(asked > 0 && said.indexOf('user: Yes, that works.') > asked, said.join('\n'));
    } finally {
      await t.close();
    }
  });
});

describe('a run survives a restart of the server (SQLite file, clock 50x)', () => {
  it('a run started before the restart is dialed, judged and finished after it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tests-'));
    try {
      // No workers: the server stops before the run's call is dialed.
      const first = await createTestApp({ clock: new ScaledClock(50), env: { DATA_DIR: dir } });
      const pathway = await first.request('POST', '/v1/pathway/create', {
        name: 'Lead qualification',
        nodes: pathwaySpec.nodes,
        edges: pathwaySpec.edges,
      });
      const scenario = await first.request('POST', '/v1/agent-testing/scenarios', {
        name: 'renter',
        pathway_id: pathway.body.pathway_id,
        input_messages: RENTER,
        assertions: [{ type: 'NODE_VISITED', config: { node: 'Not a fit' } }],
      });
      const started = await first.request('POST', `/v1/agent-testing/scenarios/${String(scenario.body.id)}/run`, {});
      assert.equal(started.status, 200, JSON.stringify(started.body));
      const runId = String(started.body.run_id);
      await first.close();

      const second = await createTestApp({ clock: new ScaledClock(50), env: { DATA_DIR: dir } });
      try {
        await second.services.startWorkers();
        let run = await second.services.agentTests.runById(runId);
        for (let i = 0; i < 1200 && run?.status === 'RUNNING'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          run = await second.services.agentTests.runById(runId);
        }
        assert.equal(run?.status, 'PASSED', run?.result ?? 'still running');
        const call = await second.services.calls.byId(String(run?.call_id));
        assert.equal(call?.queue_status, 'complete');
      } finally {
        await second.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LLM_JUDGE with a language model (a local OpenAI-compatible fake, clock 25x)', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (r): FakeReply => {
      const system = String(r.body.messages[0]?.content ?? '');
      const asked = String(r.body.messages.at(-1)?.content ?? '');
      // The judge (the same as test files' `judge`): it scores politeness high, speed low.
      if (system.startsWith('You find why an automated test'))
        return {
          text: JSON.stringify({
            root_cause: 'The agent never asked about the prescription.',
            suggested_fix: 'Tell it to ask what the caller needs.',
          }),
        };
      if (system.startsWith('You grade phone calls'))
        return { text: JSON.stringify({ score: /polite/i.test(asked) ? 0.9 : 0.2, reason: 'as scripted' }) };
      // The caller played from tester_persona_prompt: answers, asks about a refill, says goodbye.
      if (system.startsWith('You play a person on a phone call')) {
        const said = (asked.match(/^you: /gm) ?? []).length;
        const lines = [
          { say: 'Hello?', hang_up: false },
          { say: 'Hi, I would like to refill my prescription.', hang_up: false },
          { say: 'Thanks, goodbye.', hang_up: true },
        ];
        return { text: JSON.stringify(lines[Math.min(said, 2)]) };
      }
      return { text: 'Hello, this is Ava from Bright Smile Dental. Thank you, goodbye!' };
    };
    t = await createTestApp({ clock: new ScaledClock(25), config: { llm: fakeLlmConfig(fake, 2000) } });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('the configured model scores the call against each rubric; a score under the threshold fails', async () => {
    const created = await t.request('POST', '/v1/agent-testing/scenarios', {
      name: 'judged',
      call: { task: 'Greet the patient.' },
      input_messages: ['Hello?', 'Okay, bye.'],
      assertions: [
        { type: 'LLM_JUDGE', name: 'polite', config: { prompt: 'Was the agent polite?', threshold: 0.7 } },
        { type: 'LLM_JUDGE', name: 'fast', config: { prompt: 'Did the agent book in one turn?' }, is_required: false },
      ],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const started = await t.request('POST', `/v1/agent-testing/scenarios/${String(created.body.id)}/run`, {});
    assert.equal(started.status, 200, JSON.stringify(started.body));
    let run: Json = {};
    for (let i = 0; i < 1200; i++) {
      run = (await t.request('GET', `/v1/agent-testing/runs/${String(started.body.run_id)}`)).body;
      if (run.status !== 'RUNNING') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(run.status, 'PASSED', JSON.stringify(run));
    const [polite, fast] = run.assertion_results as Json[];
    assert.equal(polite!.passed, true);
    assert.match(String(polite!.message), /^score 0\.90 \(pass at 0\.7\)/);
    assert.equal(fast!.passed, false);
    assert.match(String(fast!.message), /^score 0\.20 \(pass at 0\.7\)/);
    assert.equal(run.overall_score, 0.5);
  });

  it('a scenario with only tester_persona_prompt has its caller played by the model', async () => {
    const created = await t.request('POST', '/v1/agent-testing/scenarios', {
      name: 'model caller',
      call: { task: 'Help the patient.' },
      tester_persona_prompt: 'You want to refill your prescription, then you say goodbye.',
      tester_persona_name: 'Pat',
      assertions: [{ type: 'CONTAINS', name: 'asked', config: { value: 'refill my prescription' } }],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const started = await t.request('POST', `/v1/agent-testing/scenarios/${String(created.body.id)}/run`, {});
    assert.equal(started.status, 200, JSON.stringify(started.body));
    let run: Json = {};
    for (let i = 0; i < 1200; i++) {
      run = (await t.request('GET', `/v1/agent-testing/runs/${String(started.body.run_id)}`)).body;
      if (run.status !== 'RUNNING') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(run.status, 'PASSED', JSON.stringify(run));
    assert.match(String(run.transcript), /user: Hi, I would like to refill my prescription\./);
    assert.match(String(run.transcript), /user: Thanks, goodbye\./);
  });
  it('a failed run is analyzed by the model too: its root cause and a fix', async () => {
    const created = await t.request('POST', '/v1/agent-testing/scenarios', {
      name: 'wants a refund',
      call: { task: 'Help the patient.' },
      input_messages: ['Hello?', 'Okay, bye.'],
      assertions: [{ type: 'CONTAINS', name: 'refund', config: { value: 'refund' } }],
    });
    const started = await t.request('POST', `/v1/agent-testing/scenarios/${String(created.body.id)}/run`, {});
    const run = await finished(t, String(started.body.run_id));
    assert.equal(run.status, 'FAILED', JSON.stringify(run));
    const seen = fake.requests.length;
    const r = await t.request('POST', `/v1/agent-testing/runs/${String(started.body.run_id)}/analyze`, {});
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.analyzed_by, 'llm');
    assert.equal(r.body.root_cause, 'The agent never asked about the prescription.');
    assert.equal(r.body.suggested_fix, 'Tell it to ask what the caller needs.');
    const asked = fake.requests.slice(seen).find((q) => String(q.body.messages[0]?.content).startsWith('You find why'));
    assert.match(String(asked?.body.messages[1]?.content), /- refund: /);
    assert.match(String(asked?.body.messages[1]?.content), /user: Hello\?/);
  });
});
