import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testMain } from '../../src/cli/test.js';
import { loadSuite } from '../../src/agent-tests/suite.js';
import { FakeOpenAi, type FakeReply, type RecordedRequest } from '../../src/testing/fake-openai.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const systemOf = (r: RecordedRequest) => r.body.messages.find((m) => m.role === 'system')?.content ?? '';
const lastUser = (r: RecordedRequest) => [...r.body.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
const json = (value: unknown): FakeReply => ({ text: JSON.stringify(value) });

/**
 * One fake model for the three who ask it, each answering from its prompt alone (so every run
 * goes the same way): the judge, the caller driven by a goal, and the agent under test.
 */
function answer(r: RecordedRequest): FakeReply {
  const system = systemOf(r);
  if (system.startsWith('You grade phone calls')) {
    const transcript = lastUser(r).split('Transcript:\n')[1] ?? '';
    return /assistant: .*goodbye/i.test(transcript)
      ? json({ score: 0.9, reason: 'The agent closed the call with a goodbye.' })
      : json({ score: 0.1, reason: 'The agent never said goodbye.' });
  }
  if (system.startsWith('You play a person')) {
    const goal = /^Your goal: (.*)$/m.exec(system)?.[1] ?? '';
    const sofar = lastUser(r);
    const said = (sofar.match(/^you: /gm) ?? []).length;
    const agent = sofar.match(/^agent: .*$/gm) ?? [];
    if (said === 0) return json({ say: 'Hello?', hang_up: false });
    if (/goodbye/i.test(agent.at(-1) ?? '')) return json({ say: 'Bye!', hang_up: true });
    if (said === 1) return json({ say: `I would like to ${goal}.`, hang_up: false });
    return json({ say: 'That is all, thanks. Bye.', hang_up: false });
  }
  if (system.startsWith('You summarize')) return { text: 'A call about a cleaning.' };
  if (system.startsWith('You extract structured data'))
    return json({ day: /friday/i.test(lastUser(r)) ? 'Friday' : null, booked: /booked/i.test(lastUser(r)) });
  // The agent under test.
  const heard = lastUser(r);
  if (/\bbye\b/i.test(heard)) return { text: 'Thank you, goodbye!', toolCalls: [{ name: 'end_call' }] };
  if (/friday/i.test(heard)) return { text: 'You are booked for Friday at 10 am.' };
  return { text: 'How can I help you today?' };
}

const AGENT = {
  call: {
    task: 'You are Ava of Bright Smile Dental. Book cleanings.',
    first_sentence: 'Hi, this is Ava from Bright Smile Dental.',
    wait_for_greeting: true,
  },
};

describe('openline test with a language model: judges and callers with a goal', () => {
  let fake: FakeOpenAi;
  let dir: string;
  let env: Record<string, string | undefined>;
  before(async () => {
    fake = await FakeOpenAi.start();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-model-'));
    // The fake answers at once: a faster clock keeps the calls short.
    env = {
      PATH: process.env.PATH,
      OPENLINE_LLM_BASE_URL: fake.url,
      OPENAI_API_KEY: 'sk-test',
      OPENLINE_TIME_SCALE: '5',
    };
  });
  after(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('analysis: the post-call analysis is waited for after the call, and its fields checked', async () => {
    fake.handler = answer;
    const agent = { call: { ...AGENT.call, analysis_schema: { day: 'string', booked: 'boolean' } } };
    const lines = ['Hello?', 'A cleaning on Friday, please.', 'Thanks, bye.'];
    fs.writeFileSync(
      `${dir}/analysis.json`,
      JSON.stringify({
        agent,
        cases: [
          { name: 'the booking is analysed', caller: { lines }, expect: { analysis: { day: 'friday', booked: true } } },
          { name: 'a wrong day', caller: { lines }, expect: { analysis: { day: 'Monday' } } },
        ],
      }),
    );
    const { io, out } = capture();
    const code = await testMain([`${dir}/analysis.json`], io, env);
    const report = out.join('\n');
    assert.equal(code, 1, report);
    assert.match(report, /PASS {2}analysis › the booking is analysed/);
    assert.match(report, /✗ analysis\.day: wanted "Monday", got "Friday"/);
  });

  it('a caller with a goal talks with the agent; the judge scores the call against each rubric', async () => {
    fake.handler = answer;
    const goodbye = { rubric: 'The agent ends the call politely, with a goodbye.', pass_score: 0.8 };
    fs.writeFileSync(
      `${dir}/model.json`,
      JSON.stringify({
        agent: AGENT,
        cases: [
          {
            name: 'a patient books a cleaning',
            caller: { goal: 'book a cleaning on Friday', personality: 'brief and friendly' },
            expect: {
              transcript_contains: ['user: I would like to book a cleaning on Friday.', 'booked for Friday'],
              ended_by: 'ASSISTANT',
              judge: goodbye,
            },
          },
          {
            name: 'a strict judge',
            caller: { goal: 'book a cleaning on Friday' },
            expect: { judge: [goodbye, { ...goodbye, pass_score: 0.95 }] },
          },
          {
            name: 'a caller who says one line',
            caller: { goal: 'book a cleaning on Friday', max_turns: 1 },
            expect: { ended_by: 'USER', transcript_not_contains: ['I would like to'] },
          },
        ],
      }),
    );
    const { io, out } = capture();
    const code = await testMain([`${dir}/model.json`, '--json', `${dir}/r.json`, '--junit', `${dir}/j.xml`], io, env);
    const report = out.join('\n');
    assert.equal(code, 1, report);
    assert.match(report, /PASS {2}model › a patient books a cleaning/);
    assert.match(report, /PASS {2}model › a caller who says one line/);
    assert.match(report, /FAIL {2}model › a strict judge/);
    assert.match(
      report,
      /✗ judge: "The agent ends the call politely, with a goodbye\." scored 0\.9, under the pass score 0\.95: The agent closed the call with a goodbye\./,
    );
    assert.doesNotMatch(report, /pass score 0\.8:/, 'the rubric at 0.8 passed');
    // Passing or not, each rubric's score is shown, under its case.
    assert.match(
      report,
      /PASS {2}model › a patient books a cleaning\n {6}judge 0\.90 \(pass 0\.8\): "The agent ends the call politely, with a goodbye\."/,
    );
    assert.match(report, /judge 0\.90 \(pass 0\.95\): "The agent ends/);
    assert.match(
      fs.readFileSync(`${dir}/j.xml`, 'utf8'),
      /<system-out>judge 0\.90 \(pass 0\.8\): &quot;The agent ends the call politely, with a goodbye\.&quot;<\/system-out>/,
    );
    assert.match(report, /2 of 3 cases passed, 1 failed\./);

    const results = JSON.parse(fs.readFileSync(`${dir}/r.json`, 'utf8')) as {
      runs: { transcript: string; judged?: unknown[] }[];
    }[];
    assert.deepEqual(results[0]!.runs[0]!.judged, [
      {
        rubric: 'The agent ends the call politely, with a goodbye.',
        score: 0.9,
        pass_score: 0.8,
        reason: 'The agent closed the call with a goodbye.',
      },
    ]);
    assert.equal(results[2]!.runs[0]!.judged, undefined, 'no judge, no scores');
    const booked = results[0]!.runs[0]!.transcript;
    assert.match(booked, /^user: Hello\?\nassistant: Hi, this is Ava from Bright Smile Dental\./, booked);
    assert.match(booked, /assistant: Thank you, goodbye!/);
    // The caller was asked with its goal and personality, and saw the conversation so far.
    const callerAsked = fake.requests.filter((r) => systemOf(r).startsWith('You play a person'));
    assert.ok(callerAsked.some((r) => /Your personality: brief and friendly/.test(systemOf(r))));
    assert.ok(
      callerAsked.some((r) => /you: Hello\?\nagent: Hi, this is Ava from Bright Smile Dental\./.test(lastUser(r))),
    );
    // The judge read the rubric and the transcript.
    const judged = fake.requests.filter((r) => systemOf(r).startsWith('You grade phone calls'));
    assert.equal(judged.length, 3, 'a request per rubric');
    assert.match(
      lastUser(judged[0]!),
      /^Rubric: The agent ends the call politely, with a goodbye\.\n\nTranscript:\nuser: Hello\?/,
    );
    const one = results[2]!.runs[0]!.transcript;
    assert.equal(one.split('\n').filter((l) => l.startsWith('user:')).length, 1, one);
  });

  it('a model that fails the caller or the judge fails the case, saying so', async () => {
    fake.handler = (r) => {
      const system = systemOf(r);
      if (system.startsWith('You play a person')) return { status: 400, message: 'model not found' };
      if (system.startsWith('You grade phone calls')) return { text: 'It went fine, I think.' };
      return answer(r);
    };
    fs.writeFileSync(
      `${dir}/broken.yaml`,
      [
        'agent:',
        '  call: { task: Book cleanings., first_sentence: Hi there., wait_for_greeting: true }',
        'cases:',
        '  - name: the caller cannot speak',
        '    caller: { goal: book a cleaning }',
        '    expect: {}',
        '  - name: the judge does not score',
        '    caller: { lines: ["Hello?", "Thanks, bye."] }',
        '    expect: { judge: { rubric: The agent is polite., pass_score: 0.5 } }',
      ].join('\n'),
    );
    const { io, out } = capture();
    const code = await testMain([`${dir}/broken.yaml`], io, env);
    const report = out.join('\n');
    assert.equal(code, 1, report);
    assert.match(report, /✗ caller: the language model failed \(.*model not found.*\); the caller hung up/);
    assert.match(
      report,
      /✗ judge: "The agent is polite\.": the model's reply is not a score from 0 to 1 \(no JSON object\)/,
    );
    assert.match(report, /0 of 2 cases passed, 2 failed\./);
  });
});

describe('openline test without a language model', () => {
  const env = { PATH: process.env.PATH };
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-nomodel-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a caller with a goal is a load-time error naming the field, exit 2', async () => {
    fs.writeFileSync(
      `${dir}/goal.yaml`,
      'agent: { call: { task: hi } }\ncases:\n  - name: a\n    caller: { lines: [hi] }\n    expect: {}\n  - name: b\n    caller: { goal: book a cleaning }\n    expect: {}\n',
    );
    const { io, err } = capture();
    assert.equal(await testMain([`${dir}/goal.yaml`], io, env), 2);
    assert.match(
      err.join('\n'),
      /goal\.yaml: \/cases\/1\/caller\/goal: a caller driven by a language model needs one: set OPENAI_API_KEY/,
    );
  });

  it('the example that needs a model is a valid file, refused without one', async () => {
    const file = 'examples/tests/with-a-model/front-desk.yaml';
    const cases = loadSuite(file);
    assert.deepEqual(
      cases.map((c) => [c.caller.goal !== undefined, c.expect.judge !== undefined]),
      [
        [true, true],
        [true, true],
      ],
    );
    const { io, err } = capture();
    assert.equal(await testMain([file], io, env), 2);
    assert.match(
      err.join('\n'),
      /front-desk\.yaml: \/cases\/0\/caller\/goal: a caller driven by a language model needs one/,
    );
  });

  it('personality or max_turns without a goal is a mistake in the file', async () => {
    fs.writeFileSync(
      `${dir}/stray.yaml`,
      'agent: { call: { task: hi } }\ncases:\n  - name: a\n    caller: { lines: [hi], max_turns: 3 }\n    expect: {}\n',
    );
    const { io, err } = capture();
    assert.equal(await testMain([`${dir}/stray.yaml`], io, env), 2);
    assert.match(err.join('\n'), /\/cases\/0\/caller\/max_turns goes with goal/);
  });

  it('a judge fails its case, saying it needs a language model: never a silent pass', async () => {
    fs.writeFileSync(
      `${dir}/judge.yaml`,
      [
        'agent: { call: { task: Confirm the cleaning., first_sentence: Hi there., wait_for_greeting: true } }',
        'cases:',
        '  - name: judged',
        '    caller: { lines: ["Hello?", "Thanks, bye."] }',
        '    expect: { status: completed, judge: { rubric: The agent is polite., pass_score: 0.5 } }',
      ].join('\n'),
    );
    const { io, out } = capture();
    assert.equal(await testMain([`${dir}/judge.yaml`], io, env), 1);
    assert.match(
      out.join('\n'),
      /✗ judge: "The agent is polite\." needs a language model: set OPENAI_API_KEY \(and OPENLINE_LLM_MODEL\), or OPENLINE_LLM_BASE_URL/,
    );
  });
});
