import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testMain } from '../../src/cli/test.js';
import { check, edgesFollowed, toolCalls, voicemailMessage, type CallView } from '../../src/agent-tests/expect.js';
import { scriptedCallerFromTranscript } from '../../src/agent-tests/caller.js';
import { scriptedPersona } from '../../src/agent-tests/runner.js';
import { parsePersona } from '../../src/carriers/sandbox/persona-format.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const env = { PATH: process.env.PATH };

describe('openline test', () => {
  it('runs every example suite offline: every case passes, with JUnit and JSON reports', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tests-'));
    const { io, out } = capture();
    // Every suite of examples/tests, so that a new one is run too (and changes the counts below).
    const suites = fs
      .readdirSync('examples/tests')
      .filter((f) => /\.ya?ml$/.test(f))
      .sort()
      .map((f) => `examples/tests/${f}`);
    assert.deepEqual(suites, [
      'examples/tests/front-desk.yaml',
      'examples/tests/lead-qualification.yaml',
      'examples/tests/tools.yaml',
    ]);
    const code = await testMain([...suites, '--junit', `${dir}/junit.xml`, '--json', `${dir}/r.json`], io, env);
    assert.equal(code, 0, out.join('\n'));
    assert.match(out.join('\n'), /7 of 7 cases passed\./);
    const junit = fs.readFileSync(`${dir}/junit.xml`, 'utf8');
    assert.match(junit, /<testsuites name="openline test" tests="7" failures="0">/);
    assert.match(
      junit,
      /<testcase classname="lead-qualification" name="a renter is not a fit and is told so politely"/,
    );
    const json = JSON.parse(fs.readFileSync(`${dir}/r.json`, 'utf8')) as {
      passed: boolean;
      runs: { transcript: string }[];
    }[];
    assert.ok(json.every((r) => r.passed));
    assert.match(json[3]!.runs[0]!.transcript, /Do you own your home\?/);
    assert.match(json[5]!.runs[0]!.transcript, /agent-action: Tool Book Appointment called with \{"day":"Friday"/);
    fs.rmSync(dir, { recursive: true });
  });

  it('a broken pathway edit makes the case that covers it fail, saying what and showing the call', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tests-'));
    const pathway = JSON.parse(fs.readFileSync('examples/pathways/lead-qualification.json', 'utf8')) as {
      edges: { target: string; source: string }[];
      nodes: { id: string; data: { name: string } }[];
    };
    // The edit: the way to "Not a fit" is deleted, so a renter is asked for the bill instead.
    const notAFit = pathway.nodes.find((n) => n.data.name === 'Not a fit')!.id;
    pathway.edges = pathway.edges.filter((e) => e.target !== notAFit);
    fs.writeFileSync(`${dir}/pathway.json`, JSON.stringify(pathway));
    const suite = fs
      .readFileSync('examples/tests/lead-qualification.yaml', 'utf8')
      .replace('../pathways/lead-qualification.json', 'pathway.json');
    fs.writeFileSync(`${dir}/lead.yaml`, suite);
    const { io, out } = capture();
    const code = await testMain([`${dir}/lead.yaml`, '--junit', `${dir}/junit.xml`], io, env);
    const report = out.join('\n');
    assert.equal(code, 1, report);
    assert.match(report, /PASS {2}lead › the solar lead/);
    assert.match(report, /FAIL {2}lead › a renter is not a fit and is told so politely/);
    assert.match(report, /✗ pathway_nodes: "Not a fit" was not reached after "Greeting"/);
    assert.match(report, /✗ pathway_edges: "no, rents the home" was not followed \(edges: Greeting -> Monthly bill/);
    assert.match(report, /user: No, I rent my apartment\./, 'the transcript excerpt');
    assert.match(report, /1 of 2 cases passed, 1 failed\./);
    assert.match(
      fs.readFileSync(`${dir}/junit.xml`, 'utf8'),
      /<failure message="pathway_nodes: &quot;Not a fit&quot; was not reached/,
    );
    fs.rmSync(dir, { recursive: true });
  });

  it('is deterministic with the offline model: --repeat reports every run passing', async () => {
    const { io, out } = capture();
    const code = await testMain(['examples/tests/lead-qualification.yaml', '--repeat', '3'], io, env);
    assert.equal(code, 0, out.join('\n'));
    assert.match(out.join('\n'), /\(3\/3 runs passed\)/);
  });

  it('voicemail_left: a message left after the greeting passes, a hang-up after it fails, saying so', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tests-'));
    const agent = (more: string) =>
      `    agent: { call: { task: Confirm the cleaning., first_sentence: Hi this is Ava., answered_by_enabled: true${more} } }`;
    fs.writeFileSync(
      `${dir}/vm.yaml`,
      [
        'cases:',
        '  - name: a message is left',
        agent(", voicemail_message: 'Hi Sam, Ava of Bright Smile Dental here. Please call us back.'"),
        "    caller: { persona: '0101' }",
        '    expect: { answered_by: voicemail, voicemail_left: true }',
        '  - name: no message to leave',
        agent(''),
        "    caller: { persona: '0101' }",
        '    expect: { voicemail_left: true }',
      ].join('\n'),
    );
    const { io, out } = capture();
    assert.equal(await testMain([`${dir}/vm.yaml`], io, env), 1);
    const report = out.join('\n');
    assert.match(report, /PASS {2}vm › a message is left/);
    assert.match(
      report,
      /✗ voicemail_left: a voicemail answered, but the agent left no message \(it hung up after the greeting: the call has no voicemail_message\)/,
    );
    fs.rmSync(dir, { recursive: true });
  });

  it('times scripted lines: a slow line is said after its pause (the silence prompt first), an interrupting one over the agent', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tests-'));
    fs.writeFileSync(
      `${dir}/timing.yaml`,
      [
        'agent:',
        '  call:',
        '    task: You are Ava of Bright Smile Dental. Confirm the cleaning tomorrow at 3 pm.',
        '    first_sentence: Hi, this is Ava from Bright Smile Dental, calling about your cleaning tomorrow at 3 pm.',
        '    wait_for_greeting: true',
        'cases:',
        '  - name: a quick patient',
        "    caller: { lines: ['Hello?', 'Yes, that works for me.', 'Thanks, bye.'] }",
        "    expect: { transcript_not_contains: ['Are you still there'] }",
        '  - name: a slow patient',
        '    caller:',
        '      lines:',
        '        - Hello?',
        "        - { say: 'Yes, that works for me.', after_ms: 9000 }",
        '        - Thanks, bye.',
        '    expect:',
        "      transcript_contains: ['/still there\\?[\\s\\S]*user: Yes, that works for me[\\s\\S]*assistant: /']",
        '  - name: a patient who talks over the greeting',
        '    caller:',
        '      lines:',
        '        - Hello?',
        "        - { say: 'Sorry, who is this?', interrupt: true }",
        '        - Thanks, bye.',
        "    expect: { transcript_contains: ['Sorry, who is this?'] }",
      ].join('\n'),
    );
    const { io, out } = capture();
    const code = await testMain([`${dir}/timing.yaml`, '--json', `${dir}/r.json`], io, env);
    assert.equal(code, 0, out.join('\n'));
    const runs = (JSON.parse(fs.readFileSync(`${dir}/r.json`, 'utf8')) as { runs: { transcript: string }[] }[]).map(
      (r) => r.runs[0]!.transcript.split('\n'),
    );
    const [quick, slow, over] = runs as [string[], string[], string[]];
    // The pause is heard: the agent asks whether anyone is there, then the line comes, and the call goes on.
    const asked = slow.findIndex((l) => /^assistant: .*Are you still there\?/.test(l));
    const answered = slow.indexOf('user: Yes, that works for me.');
    assert.ok(asked > 0 && answered > asked, slow.join('\n'));
    assert.ok(
      slow.slice(answered + 1).some((l) => l.startsWith('assistant: ')),
      slow.join('\n'),
    );
    assert.ok(!quick.some((l) => /still there/.test(l)), quick.join('\n'));
    // Talked over: the agent's greeting is cut short, before its end.
    const greeting = over.findIndex((l) => l.startsWith('assistant: Hi, this is Ava'));
    assert.ok(greeting >= 0, over.join('\n'));
    assert.ok(!over[greeting]!.includes('tomorrow at 3 pm.'), over.join('\n'));
    assert.ok(
      quick.some((l) => l.includes('tomorrow at 3 pm.')),
      quick.join('\n'),
    );
    fs.rmSync(dir, { recursive: true });
  });

  it('names the file and the field of a mistake, and exits 2', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tests-'));
    const cases: [string, RegExp][] = [
      ['cases: []', /\/cases/],
      ['cases:\n  - name: x\n    caller: { lines: [hi] }\n    expect: { colour: red }', /\/cases\/0\/expect/],
      [
        'cases:\n  - name: x\n    caller: { persona: "0100", lines: [hi] }\n    expect: {}',
        /exactly one of persona, persona_file, lines/,
      ],
      [
        'cases:\n  - name: x\n    caller: { persona: "0100" }\n    expect: {}',
        /\/cases\/0\/agent needs call\.task, pathway_file, agent_id, pathway_id or inbound_number/,
      ],
      [
        'agent: { pathway_file: p.json }\ncases:\n  - name: x\n    agent: { pathway_file: q.json, agent_id: a1 }\n    caller: { lines: [hi] }\n    expect: {}',
        /\/cases\/0\/agent names pathway_file and agent_id: give one agent under test/,
      ],
      [
        'agent: { pathway_file: p.json, pathway_version: 2 }\ncases:\n  - name: x\n    caller: { lines: [hi] }\n    expect: {}',
        /lead\.yaml: \/agent\/pathway_version goes with pathway_id/,
      ],
      [
        'agent: { call: { task: t } }\ncases:\n  - name: x\n    agent: { inbound_number: "+14155550000" }\n    caller: { lines: [hi] }\n    expect: {}',
        /\/cases\/0\/agent\/inbound_number: names an agent under test on an Openline server: run with --server URL/,
      ],
      ['cases: [ {', /lead\.yaml/],
      [
        'cases:\n  - name: x\n    agent: { call: { task: t } }\n    caller: { lines: [hi, { say: ok, after: 100 }] }\n    expect: {}',
        /lead\.yaml: \/cases\/0\/caller\/lines\/1\/after Unexpected property/,
      ],
      [
        'cases:\n  - name: x\n    agent: { call: { task: t } }\n    caller: { lines: [{ say: ok, after_ms: -5 }] }\n    expect: {}',
        /\/cases\/0\/caller\/lines\/0\/after_ms Expected integer to be greater or equal to 0/,
      ],
      [
        'cases:\n  - name: x\n    agent: { call: { task: t } }\n    caller: { lines: [hi, { say: ok, after_ms: 90000 }] }\n    expect: {}',
        /\/cases\/0\/caller\/lines\/1\/after_ms Expected integer to be less or equal to 60000/,
      ],
      [
        'cases:\n  - name: x\n    agent: { call: { task: t } }\n    caller: { lines: [{ after_ms: 100 }] }\n    expect: {}',
        /\/cases\/0\/caller\/lines\/0\/say Expected required property/,
      ],
      [
        'cases:\n  - name: x\n    agent: { call: { task: t } }\n    caller: { lines: [hi, { say: ok, interrupt: often }] }\n    expect: {}',
        /\/cases\/0\/caller\/lines\/1\/interrupt Expected boolean/,
      ],
      [
        'cases:\n  - name: x\n    agent: { call: { task: t } }\n    caller: { lines: [hi] }\n    expect: { pathway_edges: [] }',
        /\/cases\/0\/expect\/pathway_edges /,
      ],
    ];
    for (const [text, message] of cases) {
      fs.writeFileSync(`${dir}/lead.yaml`, text);
      const { io, err } = capture();
      assert.equal(await testMain([`${dir}/lead.yaml`], io, env), 2, text);
      assert.match(err.join('\n'), message);
      assert.match(err.join('\n'), /lead\.yaml/);
    }
    const { io } = capture();
    assert.equal(await testMain([], io, env), 2);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('expectations', () => {
  const call: CallView = {
    status: 'completed',
    answered_by: 'human',
    call_ended_by: 'USER',
    call_length: 0.5,
    transferred_to: null,
    variables: { day: 'Thursday', count: '3', ok: 'true' },
    pathway_logs: JSON.stringify([
      { event: 'entered', node_name: 'Greeting' },
      { event: 'decided', node_name: 'Greeting' },
      { event: 'entered', node_name: 'Book' },
    ]),
    transcripts: [
      { user: 'assistant', text: 'Hi, shall we book your cleaning?' },
      { user: 'user', text: 'Yes, Thursday please.' },
    ],
    latency: { turns: [{ total_ms: 700 }, { total_ms: 1300 }] },
  };

  it('passes what holds, and says what failed for what does not', () => {
    assert.deepEqual(
      check(call, {
        status: 'completed',
        answered_by: 'human',
        ended_by: 'USER',
        transcript_contains: ['book your cleaning', '/thurs(day)?/'],
        transcript_not_contains: ['goodbye'],
        variables: { day: 'thursday', count: 3, ok: true },
        pathway_nodes: ['Greeting', 'Book'],
        max_duration_s: 31,
      }),
      [],
    );
    assert.deepEqual(
      check(call, {
        status: 'failed',
        ended_by: 'ASSISTANT',
        transcript_contains: ['Friday'],
        transcript_not_contains: ['/thursday/'],
        variables: { day: 'Friday', email: '*' },
        pathway_nodes: ['Book', 'Greeting'],
        transferred_to: '+14155550110',
        max_duration_s: 10,
        max_turn_latency_ms: 1000,
      }),
      [
        'status: wanted failed, the call ended completed',
        'ended_by: wanted ASSISTANT, got USER',
        'transcript_contains: "Friday" was not said',
        'transcript_not_contains: "/thursday/" was said (user: "Yes, Thursday please.")',
        'variables.day: wanted "Friday", got "Thursday"',
        'variables.email: wanted "*", got nothing',
        'pathway_nodes: "Greeting" was not reached after "Book" (nodes: Greeting > Book)',
        'transferred_to: wanted +14155550110, got no transfer',
        'max_duration_s: the call took 30.0 s, over 10 s',
        'max_turn_latency_ms: a turn took 1300 ms, over 1000 ms',
      ],
    );
  });

  it('checks the post-call analysis fields, and says when the call has no analysis', () => {
    const analysed = { ...call, analysis: { day: 'Thursday', booked: true, price: 120, notes: null } };
    assert.deepEqual(check(analysed, { analysis: { day: 'thursday', booked: true, price: 120 } }), []);
    assert.deepEqual(check(analysed, { analysis: { day: 'Friday', booked: '*', notes: '*', reason: '*' } }), [
      'analysis.day: wanted "Friday", got "Thursday"',
      'analysis.notes: wanted "*", got null',
      'analysis.reason: wanted "*", got nothing',
    ]);
    assert.deepEqual(check({ ...call, analysis: null }, { analysis: { day: 'Thursday' } }), [
      'analysis.day: wanted "Thursday", got nothing (the call has no analysis: it needs an analysis_schema and a language model)',
    ]);
  });

  it('tells a message left on a voicemail from a hang-up after its greeting', () => {
    const greeting = { user: 'robot', text: "Hi, you've reached Sam. Please leave a message after the tone." };
    const left: CallView = {
      ...call,
      answered_by: 'voicemail',
      transcripts: [
        greeting,
        { user: 'agent-action', text: 'Voicemail detected: leaving a message' },
        { user: 'assistant', text: 'Hi Sam, this is Ava from Bright Smile Dental. Please call us back.' },
      ],
    };
    // The agent's first words were cut by the greeting: that is not a message.
    const hungUp: CallView = {
      ...call,
      answered_by: 'voicemail',
      transcripts: [
        greeting,
        { user: 'assistant', text: 'Hi,...' },
        { user: 'agent-action', text: 'Voicemail detected: hanging up' },
      ],
    };
    assert.equal(voicemailMessage(left), 'Hi Sam, this is Ava from Bright Smile Dental. Please call us back.');
    assert.equal(voicemailMessage(hungUp), undefined);
    assert.deepEqual(check(left, { voicemail_left: true }), []);
    assert.deepEqual(check(hungUp, { voicemail_left: false }), []);
    assert.deepEqual(check(call, { voicemail_left: false }), []);
    assert.deepEqual(check(hungUp, { voicemail_left: true }), [
      'voicemail_left: a voicemail answered, but the agent left no message (it hung up after the greeting: the call has no voicemail_message)',
    ]);
    assert.deepEqual(check(call, { voicemail_left: true }), [
      'voicemail_left: no voicemail answered (answered_by human), so no message was left',
    ]);
    assert.deepEqual(check(left, { voicemail_left: false }), [
      'voicemail_left: the agent left a message on a voicemail ("Hi Sam, this is Ava from Bright Smile Dental. Please call us back.")',
    ]);
  });

  it('reads the tools a call used from its record, with their inputs, and checks them', () => {
    const withTools: CallView = {
      ...call,
      transcripts: [
        { user: 'assistant', text: 'Let me book that.' },
        {
          user: 'agent-action',
          text: 'Tool Book Appointment called with {"day":"Friday","slots":[1,2],"who":{"name":"Sam"}}',
        },
        { user: 'agent-action', text: 'Tool Book Appointment returned: booked' },
        { user: 'agent-action', text: 'Tool Look Up called' },
        { user: 'user', text: 'Tool Fake called with {"said":"by the caller"}' },
      ],
    };
    assert.deepEqual(toolCalls(withTools), [
      { name: 'Book Appointment', input: { day: 'Friday', slots: [1, 2], who: { name: 'Sam' } } },
      { name: 'Look Up', input: undefined },
    ]);
    assert.deepEqual(
      check(withTools, {
        tools_called: [
          'look up',
          { name: 'Book_Appointment' },
          { name: 'Book Appointment', input: { day: 'friday', slots: [1, 2], who: { name: '*' } } },
        ],
        tools_not_called: ['Fake', 'Transfer'],
      }),
      [],
    );
    assert.deepEqual(
      check(withTools, {
        tools_called: [
          { name: 'Book Appointment', input: { day: 'Monday' } },
          { name: 'Book Appointment', input: { slots: [1] } },
          { name: 'Look Up', input: { id: '*' } },
          { name: 'Fake' },
        ],
        tools_not_called: ['book appointment'],
      }),
      [
        'tools_called: Book Appointment was called, but not with {"day":"Monday"} (it got {"day":"Friday","slots":[1,2],"who":{"name":"Sam"}})',
        'tools_called: Book Appointment was called, but not with {"slots":[1]} (it got {"day":"Friday","slots":[1,2],"who":{"name":"Sam"}})',
        'tools_called: Look Up was called, but not with {"id":"*"} (it got no recorded input)',
        'tools_called: Fake was not called (tools called: Book Appointment, Look Up)',
        'tools_not_called: book appointment was called (with {"day":"Friday","slots":[1,2],"who":{"name":"Sam"}})',
      ],
    );
  });
});

describe('scriptedPersona: timed lines as persona steps', () => {
  it('pauses before a slow line, then listens fresh; talks over on speechStart; plain lines as before', () => {
    const persona = scriptedPersona('p', '5000', [
      { say: 'Hello?', after_ms: 1500 },
      'Yes.',
      { say: 'Wait, which day?', interrupt: true, after_ms: 300 },
      { say: 'Okay.', after_ms: 2000 },
    ]) as { states: Record<string, unknown[]> };
    // A valid persona of the sandbox format.
    parsePersona(persona, 'test');
    assert.deepEqual(persona.states.s0, [{ pause: 1500 }, { say: 'Hello?' }, { goto: 's1' }]);
    assert.deepEqual(persona.states.s1, [
      {
        listen: {
          on: [{ any: true, do: [{ say: 'Yes.' }, { goto: 's2' }] }],
          timeoutMs: 30_000,
          timeout: [{ hangup: true }],
          fresh: true,
        },
      },
    ]);
    assert.deepEqual(persona.states.s2, [
      {
        listen: {
          on: [{ speechStart: true, do: [{ pause: 300 }, { say: 'Wait, which day?' }, { goto: 's3' }] }],
          timeoutMs: 30_000,
          timeout: [{ hangup: true }],
        },
      },
    ]);
    assert.deepEqual((persona.states.s3![0] as { listen: { on: unknown[] } }).listen.on, [
      { any: true, do: [{ pause: 2000 }, { say: 'Okay.' }, { goto: 'end-fresh' }] },
    ]);
    assert.equal((persona.states['end-fresh']![0] as { listen: { fresh?: true } }).listen.fresh, true);
    const plain = scriptedPersona('q', '5001', ['Hi.', 'Bye.']) as { states: Record<string, unknown[]> };
    assert.deepEqual(plain.states.s0, [{ say: 'Hi.' }, { goto: 's1' }]);
    assert.deepEqual(Object.keys(plain.states), ['s0', 's1', 'end']);
  });
});

describe('pathway_edges', () => {
  const step = (event: string, node: string, edge?: { label: string; target: string }) => ({
    event,
    node_id: node.toLowerCase(),
    node_name: node,
    chosen_edge: edge ?? null,
  });
  const call: CallView = {
    status: 'completed',
    answered_by: 'human',
    call_ended_by: 'USER',
    call_length: 0.5,
    transferred_to: null,
    variables: {},
    pathway_logs: JSON.stringify([
      step('entered', 'Greeting'),
      step('stayed', 'Greeting'),
      step('decided', 'Greeting', { label: 'yes, owns the home', target: 'bill' }),
      step('entered', 'Bill'),
      step('decided', 'Bill', { label: 'asks about pricing', target: 'pricing' }),
      step('entered', 'Pricing'),
      step('returned', 'Bill'),
      step('decided', 'Bill', { label: 'a bill over 100', target: 'webhook' }),
      step('entered', 'Webhook'),
      // Taken without the caller: the log names no edge.
      step('entered', 'Goodbye'),
    ]),
    transcripts: [],
    latency: null,
  };

  it('reads the edges followed from the pathway logs, the way back from a global node left out', () => {
    assert.deepEqual(edgesFollowed(call), [
      { from: 'Greeting', to: 'Bill', label: 'yes, owns the home' },
      { from: 'Bill', to: 'Pricing', label: 'asks about pricing' },
      { from: 'Bill', to: 'Webhook', label: 'a bill over 100' },
      { from: 'Webhook', to: 'Goodbye', label: null },
    ]);
    assert.deepEqual(edgesFollowed({ ...call, pathway_logs: null }), []);
    assert.deepEqual(edgesFollowed({ ...call, pathway_logs: 'not json' }), []);
  });

  it('passes edges followed in order, by nodes or by label, and says which was not', () => {
    assert.deepEqual(check(call, { pathway_edges: ['Greeting -> Bill', 'a bill over 100', 'Webhook->Goodbye'] }), []);
    const followed =
      'edges: Greeting -> Bill [yes, owns the home]; Bill -> Pricing [asks about pricing]; Bill -> Webhook [a bill over 100]; Webhook -> Goodbye';
    assert.deepEqual(check(call, { pathway_edges: ['a bill over 100', 'Greeting -> Bill'] }), [
      `pathway_edges: "Greeting -> Bill" was not followed after "Bill -> Webhook [a bill over 100]" (${followed})`,
    ]);
    assert.deepEqual(check(call, { pathway_edges: ['Greeting -> Goodbye'] }), [
      `pathway_edges: "Greeting -> Goodbye" was not followed (${followed})`,
    ]);
    assert.deepEqual(check(call, { pathway_edges: ['no, rents the home'] }), [
      `pathway_edges: "no, rents the home" was not followed (${followed})`,
    ]);
    assert.deepEqual(check({ ...call, pathway_logs: null }, { pathway_edges: ['Greeting -> Bill'] }), [
      'pathway_edges: "Greeting -> Bill" was not followed (edges: none)',
    ]);
  });
});

describe('scriptedCallerFromTranscript', () => {
  it("gives the person's lines in order, lines said in a row joined, everything else left out", () => {
    assert.deepEqual(
      scriptedCallerFromTranscript([
        { user: 'assistant', text: 'Hi, this is Ava.' },
        { user: 'user', text: 'Hello?' },
        { user: 'assistant', text: 'Can you come on Friday?' },
        { user: 'user', text: 'Friday...' },
        { user: 'agent-action', text: 'Caller pressed 1' },
        { user: 'user', text: ' yes, Friday works. ' },
        { user: 'robot', text: 'Please hold.' },
        { user: 'user', text: '' },
        { user: 'assistant', text: 'Great, goodbye!' },
        { user: 'user', text: 'Bye.' },
      ]),
      ['Hello?', 'Friday... yes, Friday works.', 'Bye.'],
    );
    assert.deepEqual(scriptedCallerFromTranscript([{ user: 'assistant', text: 'Hello?' }]), []);
  });
});
