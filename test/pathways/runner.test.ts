import { describe, it } from 'node:test';
import { TRANSFER_FAILED_LINE } from '../../src/agent/offline.js';
import assert from 'node:assert/strict';
import { PathwayAgent, type PathwayAgentDeps } from '../../src/pathways/runner.js';
import { answerFrom, bestMatch, extractValue, findNumber, lineFromPrompt } from '../../src/pathways/offline.js';
import type { PathwayEdge, PathwayNode } from '../../src/domain/pathway-graph.js';
import type { ResolvedPathway } from '../../src/store/pathways.js';
import type { AgentContext, AgentInput, Turn } from '../../src/agent/types.js';
import { LlmError, type ChatRequest, type LlmEvent, type LlmProvider } from '../../src/providers/llm/types.js';
import { callRequest } from '../../src/testing/call-request.js';

describe('the offline model for pathways', () => {
  it('extracts typed values by pattern', () => {
    const x = (name: string, type: 'string' | 'integer' | 'number' | 'boolean', heard: string, description = '') =>
      extractValue(name, type, description, heard);
    assert.equal(x('ok', 'boolean', 'Yeah, sure.'), true);
    assert.equal(x('ok', 'boolean', "No, I don't."), false);
    assert.equal(x('ok', 'boolean', 'Maybe later.'), undefined);
    assert.equal(x('bill', 'integer', 'About $1,200 a month'), 1200);
    assert.equal(x('bill', 'integer', 'two hundred and fifty'), 250);
    assert.equal(x('people', 'integer', 'forty five of us'), 45);
    assert.equal(x('rate', 'number', 'it is 4.5 percent'), 4.5);
    assert.equal(x('count', 'integer', 'none at all'), undefined);
    assert.equal(x('email', 'string', 'Write to Lee.Smith+1@example.co.uk please'), 'Lee.Smith+1@example.co.uk');
    assert.equal(x('callback', 'string', 'call me on (415) 555-0142.'), '(415) 555-0142');
    assert.equal(x('appointment_day', 'string', 'Maybe Thursday at noon'), 'thursday');
    assert.equal(x('visit_date', 'string', 'on March 3rd'), 'march 3rd');
    assert.equal(x('slot', 'string', 'Thursday at 10:30 am', 'The day and time of the visit'), 'thursday at 10:30 am');
    assert.equal(x('appointment_time', 'string', 'Thursday at 10:30 a.m.', 'time of day'), '10:30 am');
    assert.equal(x('caller_name', 'string', 'Hi, my name is Robin Lee.'), 'Robin Lee');
    assert.equal(x('caller_name', 'string', 'My name is Robin Lee.'), 'Robin Lee');
    assert.equal(x('caller_name', 'string', "I'm Robin."), 'Robin');
    assert.equal(x('caller_name', 'string', 'This is Robin Lee'), 'Robin Lee');
    assert.equal(x('issue', 'string', 'My router keeps blinking red.'), 'My router keeps blinking red');
    assert.equal(findNumber('nothing here'), undefined);
  });

  it('matches words (stems, yes/no variants) and lets the best edge win', () => {
    const edges = [
      { id: 'yes', text: 'yes, owns the home' },
      { id: 'no', text: 'no, rents the home' },
    ];
    assert.deepEqual(bestMatch('Yep, I own it.', edges), { id: 'yes', matched: ['own', 'yes'] });
    assert.equal(bestMatch("Nope, we're renting.", edges)?.id, 'no');
    assert.equal(bestMatch('What a lovely day.', edges), undefined);
  });

  it('turns instructions into speech and answers from knowledge', () => {
    assert.equal(lineFromPrompt('Ask the caller for their email address.'), 'Could you tell me your email address?');
    assert.equal(
      lineFromPrompt('Ask them whether they are home owners.'),
      'Could you tell me whether you are home owners?',
    );
    assert.equal(lineFromPrompt('Thank the caller and say goodbye.'), 'Thank you for your time. Goodbye!');
    assert.equal(lineFromPrompt('Tell the caller that the office opens at 9.'), 'The office opens at 9.');
    assert.equal(lineFromPrompt('Say "We are closed today."'), 'We are closed today.');
    const kb = 'Parking is free. The lease is 89 dollars a month. We install in one day.';
    assert.equal(answerFrom(kb, 'How much is the lease?'), 'The lease is 89 dollars a month.');
    assert.equal(answerFrom(kb, 'Do you sell cars?'), undefined);
  });
});

/** A language model port that answers from a function and records what it was asked. */
class ScriptedModel implements LlmProvider {
  readonly name = 'scripted';
  readonly requests: ChatRequest[] = [];
  constructor(private readonly answer: (r: ChatRequest) => LlmEvent[] | Error) {}
  async *stream(request: ChatRequest): AsyncIterable<LlmEvent> {
    this.requests.push(request);
    const events = this.answer(request);
    if (events instanceof Error) throw events;
    yield* events;
  }
}

const n = (id: string, type: PathwayNode['type'], data: Record<string, unknown>): PathwayNode => ({
  id,
  type,
  data: { name: id, ...data },
});
const e = (id: string, source: string, target: string, label: string): PathwayEdge => ({ id, source, target, label });

function harness(
  graphs: Record<string, { nodes: PathwayNode[]; edges: PathwayEdge[] }>,
  extra: Partial<PathwayAgentDeps> = {},
) {
  const saved: string[] = [];
  const deps: PathwayAgentDeps = {
    resolve: async (_account, id) => {
      const g = graphs[id];
      return g ? ({ pathway_id: id, name: id, version_number: 1, ...g } satisfies ResolvedPathway) : undefined;
    },
    accountOf: async () => 'acct',
    saveLogs: async (_call, logs) => {
      saved.push(logs);
    },
    now: () => new Date('2026-01-01T00:00:00Z'),
    ...extra,
  };
  const agent = new PathwayAgent(deps);
  const transcript: Turn[] = [];
  const ctx: AgentContext = {
    callId: 'call-1',
    request: callRequest({ pathway_id: 'main', task: null }),
    inbound: true,
    variables: { phone_number: '+14155550100' },
    transcript,
  };
  const say = async (input: AgentInput) => {
    if (input.kind === 'heard') transcript.push({ role: 'user', text: input.text });
    const reply = await agent.respond(input, ctx);
    if (reply.say) transcript.push({ role: 'assistant', text: reply.say });
    return reply;
  };
  return { agent, ctx, say, saved };
}

describe('PathwayAgent', () => {
  it('puts a Knowledge Base node, globalPrompt and modelOptions into the model request', async () => {
    const model = new ScriptedModel(() => [{ type: 'text', delta: 'We are open nine to five.' }]);
    const { say, ctx } = harness(
      {
        main: {
          nodes: [
            n('faq', 'Knowledge Base', {
              isStart: true,
              prompt: 'Answer questions about the shop.',
              kb: 'The shop opens at 9 and closes at 5.',
              globalPrompt: 'You work for {{shop}}.',
              modelOptions: { modelName: 'special-model', temperature: 0.7 },
            }),
          ],
          edges: [],
        },
      },
      { llm: { provider: model, model: 'm-enhanced' } },
    );
    let firstTokens = 0;
    ctx.onFirstToken = () => firstTokens++;
    const reply = await say({ kind: 'start' });
    assert.equal(reply.say, 'We are open nine to five.');
    assert.equal(firstTokens, 1, "the model's first token is reported for the turn's latency");
    const sent = model.requests[0]!;
    assert.equal(sent.model, 'special-model');
    assert.equal(sent.temperature, 0.7);
    const system = String(sent.messages[0]!.content);
    assert.ok(system.startsWith('You work for .'), system);
    assert.match(system, /Knowledge for this step \(answer from it\):\nThe shop opens at 9 and closes at 5\./);
    assert.match(system, /Instructions for this step: Answer questions about the shop\./);
  });

  it("follows the global config entry's globalPrompt when no node has one of its own", async () => {
    const model = new ScriptedModel(() => [{ type: 'text', delta: 'Hello there.' }]);
    const { say } = harness(
      { main: { nodes: [n('hi', 'Default', { isStart: true, prompt: 'Greet the caller.' })], edges: [] } },
      {
        llm: { provider: model, model: 'm-enhanced' },
        resolve: async (_account, id) => ({
          pathway_id: id,
          name: id,
          version_number: 1,
          nodes: [n('hi', 'Default', { isStart: true, prompt: 'Greet the caller.' })],
          edges: [],
          globalPrompt: 'You are the front desk of Elm Street Dental.',
        }),
      },
    );
    await say({ kind: 'start' });
    const system = String(model.requests[0]!.messages[0]!.content);
    assert.ok(system.startsWith('You are the front desk of Elm Street Dental.'), system);
  });

  it('a Knowledge Base node with only text answers from it (offline), and says when it does not know', async () => {
    const { say } = harness({
      main: {
        nodes: [
          n('menu', 'Default', { isStart: true, text: 'Ask me about parking or prices.' }),
          n('faq', 'Knowledge Base', { text: 'Parking is free after 6 pm. A ticket costs 12 dollars.' }),
          n('bye', 'End Call', {}),
        ],
        edges: [e('ask', 'menu', 'faq', 'parking or prices question'), e('done', 'faq', 'bye', 'no more questions')],
      },
    });
    await say({ kind: 'start' });
    const answer = await say({ kind: 'heard', text: 'Where is parking free?' });
    assert.equal(answer.say, 'Parking is free after 6 pm.');
    const price = await say({ kind: 'heard', text: 'What does a ticket cost?' });
    assert.equal(price.say, 'A ticket costs 12 dollars.');
    const done = await say({ kind: 'heard', text: 'No more questions, thanks.' });
    assert.deepEqual(done.action, { type: 'finish' });

    const other = harness({
      main: {
        nodes: [
          n('menu', 'Default', { isStart: true, text: 'What would you like to know?' }),
          n('faq', 'Knowledge Base', { text: 'Parking is free after 6 pm.' }),
        ],
        edges: [e('ask', 'menu', 'faq', 'a question')],
      },
    });
    await other.say({ kind: 'start' });
    assert.equal(
      (await other.say({ kind: 'heard', text: 'Can I bring my dog?' })).say,
      "I'm sorry, I don't have that information.",
    );
  });

  it('a model that fails to speak falls back to the node text, and routes by words', async () => {
    const model = new ScriptedModel(() => new LlmError('down', true));
    const { say, saved } = harness(
      {
        main: {
          nodes: [
            n('a', 'Default', { isStart: true, text: 'Say red or blue.', isStatic: false }),
            n('red', 'End Call', { text: 'Red it is. Bye!' }),
            n('blue', 'End Call', { text: 'Blue it is. Bye!' }),
          ],
          edges: [e('r', 'a', 'red', 'red'), e('b', 'a', 'blue', 'blue')],
        },
      },
      { llm: { provider: model, model: 'm' } },
    );
    const start = await say({ kind: 'start' });
    assert.equal(start.say, 'Say red or blue.');
    assert.match(String(start.note), /Language model failed \(speech\)/);
    const next = await say({ kind: 'heard', text: 'Blue, please.' });
    assert.deepEqual(next.action, { type: 'finish' });
    assert.equal(next.say, 'Blue it is. Bye!');
    const logs = JSON.parse(saved.at(-1)!) as { chosen_edge: { id: string } | null; decided_by: string }[];
    assert.equal(logs[1]!.chosen_edge?.id, 'b');
    assert.equal(logs[1]!.decided_by, 'offline');
  });

  it('re-prompts when nothing matches, and ends after too many tries; a dead end ends the call', async () => {
    const { say } = harness({
      main: {
        nodes: [
          n('a', 'Default', { isStart: true, text: 'Say red or blue.' }),
          n('red', 'Default', { text: 'Red. Anything else?' }),
          n('blue', 'End Call', {}),
        ],
        edges: [e('r', 'a', 'red', 'red'), e('b', 'a', 'blue', 'blue')],
      },
    });
    await say({ kind: 'start' });
    const again = await say({ kind: 'heard', text: 'Green.' });
    assert.equal(again.say, "Sorry, I didn't quite catch that. Say red or blue.");
    assert.equal(again.action, null);
    await say({ kind: 'heard', text: 'Green.' });
    await say({ kind: 'heard', text: 'Green.' });
    const last = await say({ kind: 'heard', text: 'Green.' });
    assert.deepEqual(last.action, { type: 'finish' });

    const dead = harness({
      main: {
        nodes: [n('a', 'Default', { isStart: true, text: 'Say red.' }), n('red', 'Default', { text: 'Red.' })],
        edges: [e('r', 'a', 'red', 'red')],
      },
    });
    await dead.say({ kind: 'start' });
    assert.equal((await dead.say({ kind: 'heard', text: 'red' })).say, 'Red.');
    const end = await dead.say({ kind: 'heard', text: 'thanks' });
    assert.deepEqual(end.action, { type: 'finish' });
  });

  it('silence re-prompts a node, waits at Wait for Response, and ends after three', async () => {
    const { say } = harness({
      main: {
        nodes: [
          n('a', 'Default', { isStart: true, text: 'Ready?' }),
          n('w', 'Wait for Response', { text: 'Take your time.' }),
        ],
        edges: [e('go', 'a', 'w', 'ready')],
      },
    });
    await say({ kind: 'start' });
    assert.equal((await say({ kind: 'silence', silentMs: 7000, times: 1 })).say, 'Are you still there? Ready?');
    const wait = await say({ kind: 'heard', text: 'Ready.' });
    assert.deepEqual(wait.action, { type: 'wait' });
    const still = await say({ kind: 'silence', silentMs: 21000, times: 3 });
    assert.deepEqual(still, { say: null, action: { type: 'wait' } });
  });

  it('Transfer Pathway to a missing pathway, SMS without a carrier and a webhook without a client end or route safely', async () => {
    const missing = harness({
      main: {
        nodes: [n('a', 'Transfer Pathway', { isStart: true, transferPathway: 'nope' })],
        edges: [],
      },
    });
    const r = await missing.say({ kind: 'start' });
    assert.deepEqual(r.action, { type: 'finish' });
    assert.match(String(r.note), /Transfer Pathway: pathway nope not found/);

    const sms = harness({
      main: {
        nodes: [
          n('a', 'SMS', { isStart: true, smsBody: 'Hi {{phone_number}}' }),
          n('ok', 'End Call', { text: 'Sent.' }),
          n('bad', 'End Call', { text: 'Not sent.' }),
        ],
        edges: [e('sent', 'a', 'ok', 'sent'), e('failed', 'a', 'bad', 'failed')],
      },
    });
    assert.equal((await sms.say({ kind: 'start' })).say, 'Not sent.');

    const sent: { to: string; body: string }[] = [];
    const withCarrier = harness(
      {
        main: {
          nodes: [
            n('a', 'SMS', { isStart: true, smsBody: 'Hi {{phone_number}}' }),
            n('ok', 'End Call', { text: 'Sent.' }),
          ],
          edges: [e('sent', 'a', 'ok', 'sent')],
        },
      },
      {
        sendSms: (m) => {
          sent.push(m);
          return { ok: true };
        },
      },
    );
    assert.equal((await withCarrier.say({ kind: 'start' })).say, 'Sent.');
    assert.deepEqual(sent, [{ callId: 'call-1', to: '+14155550100', body: 'Hi +14155550100' }]);

    const hook = harness({
      main: {
        nodes: [
          n('a', 'Webhook', { isStart: true, url: 'https://example.com' }),
          n('ok', 'End Call', { text: 'Worked.' }),
          n('bad', 'Transfer Call', { text: 'Transferring.', transferNumber: '+14155550110' }),
        ],
        edges: [e('s', 'a', 'ok', 'success'), e('f', 'a', 'bad', 'error')],
      },
    });
    const failed = await hook.say({ kind: 'start' });
    assert.deepEqual(failed.action, { type: 'transfer', target: '+14155550110' });
    assert.match(String(failed.note), /Webhook a failed: no outbound client/);
    // The transfer did not go through and the caller is back: they hear so.
    const back = await hook.say({
      kind: 'tool_result',
      name: 'transfer',
      ok: false,
      result: {},
      error: 'The transfer target is busy',
    });
    assert.deepEqual([back.say, back.action], [TRANSFER_FAILED_LINE, null]);
  });
});
