import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { testMain } from '../../src/cli/test.js';

type Json = Record<string, unknown>;

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const env = { PATH: process.env.PATH };

describe('openline test --server: the cases run on a running Openline server through its API', () => {
  let t: TestApp;
  let server: string;
  let dir: string;
  let agentId: string;
  let pathwayId: string;
  let inbound: string;

  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(20) });
    await t.services.startWorkers();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    server = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tests-server-'));
    const agent = await t.request('POST', '/v1/agents', {
      prompt: 'You are Ava of Bright Smile Dental. Confirm the cleaning tomorrow at 3 pm.',
      first_sentence: 'Hi, this is Ava from Bright Smile Dental about your cleaning tomorrow at 3 pm.',
    });
    assert.equal(agent.status, 200, JSON.stringify(agent.body));
    agentId = String((agent.body.agent as Json | undefined)?.agent_id ?? agent.body.agent_id);
    const spec = JSON.parse(fs.readFileSync('examples/pathways/lead-qualification.json', 'utf8')) as Json;
    const pathway = await t.request('POST', '/v1/pathway/create', {
      name: 'Lead qualification',
      nodes: spec.nodes,
      edges: spec.edges,
    });
    assert.equal(pathway.status, 200, JSON.stringify(pathway.body));
    pathwayId = String(pathway.body.pathway_id);
    const version = await t.request('POST', `/v1/pathway/${pathwayId}/version`, {
      name: 'v1',
      nodes: spec.nodes,
      edges: spec.edges,
    });
    assert.equal(version.body.data && (version.body.data as Json).version_number, 1, JSON.stringify(version.body));
    const number = await t.request('POST', '/v1/inbound/purchase', {
      prompt: 'You answer for Corner Bakery. Take cake orders.',
      first_sentence: 'Corner Bakery, how can I help with your order?',
    });
    assert.equal(number.status, 200, JSON.stringify(number.body));
    inbound = String(number.body.phone_number);
  });
  after(async () => {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('tests an agent id, a pathway id, an inbound number and a pathway file, and cleans up after itself', async () => {
    fs.writeFileSync(
      `${dir}/remote.yaml`,
      [
        'cases:',
        '  - name: the agent confirms the cleaning',
        `    agent: { agent_id: '${agentId}' }`,
        "    caller: { lines: ['Hello?', 'Yes, that works. Bye.'] }",
        "    expect: { status: completed, transcript_contains: ['tomorrow at 3 pm'] }",
        '  - name: the pathway tells a renter he is not a fit',
        `    agent: { pathway_id: '${pathwayId}', pathway_version: 1 }`,
        "    caller: { lines: ['Hello?', 'No, I rent my apartment.', 'Okay, bye.'] }",
        "    expect: { pathway_nodes: ['Greeting', 'Not a fit'], variables: { owns_home: false } }",
        '  - name: a sandbox person calls the bakery line',
        `    agent: { inbound_number: '${inbound}' }`,
        "    caller: { persona: '0100' }",
        "    expect: { status: completed, transcript_contains: ['Corner Bakery', 'pizza'] }",
        '  - name: the bakery line calls a scripted person',
        `    agent: { inbound_number: '${inbound}' }`,
        "    caller: { lines: ['Hello?', 'Bye.'] }",
        "    expect: { transcript_contains: ['Corner Bakery'] }",
        '  - name: a slow caller is asked whether they are still there before their line',
        '    agent:',
        '      call:',
        '        task: Confirm the cleaning tomorrow at 3 pm.',
        '        first_sentence: Hi, this is Ava from Bright Smile Dental about your cleaning tomorrow at 3 pm.',
        '        wait_for_greeting: true',
        "    caller: { lines: ['Hello?', { say: 'Yes, that works.', after_ms: 9000 }, 'Thanks, bye.'] }",
        "    expect: { transcript_contains: ['/still there\\?[\\s\\S]*user: Yes, that works/'] }",
      ].join('\n'),
    );
    const before = await t.request('GET', '/v1/pathway');
    assert.equal(JSON.stringify(before.body).match(/"Lead qualification"/g)?.length, 1);
    const { io, out, err } = capture();
    const code = await testMain(
      [`${dir}/remote.yaml`, 'examples/tests/lead-qualification.yaml', '--server', server, '--json', `${dir}/r.json`],
      io,
      { ...env, OPENLINE_API_KEY: t.key },
    );
    const report = out.join('\n');
    assert.equal(code, 0, `${report}\n${err.join('\n')}`);
    assert.match(report, /7 of 7 cases passed\./);
    assert.ok(!report.includes(t.key) && !err.join('\n').includes(t.key), 'the key is never printed');
    // Every call is one of the account's, on the server.
    const results = JSON.parse(fs.readFileSync(`${dir}/r.json`, 'utf8')) as { runs: { callId: string }[] }[];
    for (const r of results) {
      const call = await t.request('GET', `/v1/calls/${r.runs[0]!.callId}`);
      assert.equal(call.status, 200);
    }
    const inboundCall = await t.request('GET', `/v1/calls/${results[2]!.runs[0]!.callId}`);
    assert.equal(inboundCall.body.inbound, true, 'the persona called the inbound number');
    // The scenarios and the pathway of the file made for the run are gone.
    const scenarios = await t.request('GET', '/v1/agent-testing/scenarios');
    assert.deepEqual(scenarios.body.scenarios, []);
    const pathways = await t.request('GET', '/v1/pathway');
    assert.equal(JSON.stringify(pathways.body).match(/"Lead qualification"/g)?.length, 1, "only the test's own");
  });

  it('a failing case on the server says what failed, and a refused call says why', async () => {
    fs.writeFileSync(
      `${dir}/failing.yaml`,
      [
        'cases:',
        '  - name: a renter wrongly expected to qualify',
        `    agent: { pathway_id: '${pathwayId}' }`,
        "    caller: { lines: ['Hello?', 'No, I rent my apartment.', 'Okay, bye.'] }",
        "    expect: { pathway_nodes: ['Greeting', 'Monthly bill'] }",
        '  - name: a version that does not exist',
        `    agent: { pathway_id: '${pathwayId}', pathway_version: 99 }`,
        "    caller: { persona: '0100' }",
        '    expect: { status: completed }',
        '  - name: an agent of no one',
        '    agent: { agent_id: nope }',
        "    caller: { lines: ['Hello?'] }",
        '    expect: { status: completed }',
      ].join('\n'),
    );
    const { io, out } = capture();
    const code = await testMain([`${dir}/failing.yaml`, '--server', server, '--api-key', t.key], io, env);
    const report = out.join('\n');
    assert.equal(code, 1, report);
    assert.match(report, /✗ pathway_nodes: "Monthly bill" was not reached after "Greeting"/);
    assert.match(report, /✗ the call was refused: .*pathway_version 99 is not a version of this pathway/);
    assert.match(report, /✗ the call was refused: .*agent_id is not an agent of this account/);
    assert.match(report, /0 of 3 cases passed, 3 failed\./);
  });

  it('refuses what cannot run, naming the field or the flag (exit 2)', async () => {
    fs.writeFileSync(
      `${dir}/agent.yaml`,
      `cases:\n  - name: x\n    agent: { agent_id: '${agentId}' }\n    caller: { lines: [Hello?] }\n    expect: {}\n`,
    );
    fs.writeFileSync(`${dir}/p.json`, '{}');
    fs.writeFileSync(
      `${dir}/file.yaml`,
      `cases:\n  - name: x\n    agent: { agent_id: '${agentId}' }\n    caller: { persona_file: p.json }\n    expect: {}\n`,
    );
    const cases: [string[], Record<string, string | undefined>, RegExp][] = [
      [
        [`${dir}/agent.yaml`],
        env,
        /agent\.yaml: \/cases\/0\/agent\/agent_id: names an agent under test on an Openline server: run with --server URL/,
      ],
      [[`${dir}/file.yaml`, '--server', server], { ...env, OPENLINE_API_KEY: t.key }, /\/caller\/persona_file: /],
      [[`${dir}/agent.yaml`, '--server', server], env, /--server needs an API key/],
      [[`${dir}/agent.yaml`, '--server', 'ftp://x'], { ...env, OPENLINE_API_KEY: t.key }, /--server must be an http/],
      [[`${dir}/agent.yaml`, '--server', server, '--api-key', 'wrong'], env, /The server refused the API key/],
      [[`${dir}/agent.yaml`, '--server', 'http://127.0.0.1:9'], { ...env, OPENLINE_API_KEY: 'k' }, /Cannot reach/],
    ];
    for (const [argv, e, message] of cases) {
      const { io, err } = capture();
      assert.equal(await testMain(argv, io, e), 2, argv.join(' '));
      assert.match(err.join('\n'), message);
      assert.ok(!err.join('\n').includes('wrong'), 'the key is never printed');
    }
  });
});
