/**
 * Built-in scenario templates (GET /v1/agent-testing/templates): callers every agent meets, ready
 * to clone onto a pathway or a persona. Their callers are scripted, so they run without a language
 * model; each checks that the agent never reads out an unfilled variable or a programming value,
 * and has a judge's rubric for its behaviour that scores when a language model is configured
 * (not required: without a model the run still passes or fails on the rest).
 */
export interface ScenarioTemplate {
  id: string;
  name: string;
  category: string;
  description: string;
  input_messages: (string | { role: 'user'; content: string; interrupt?: boolean; after_ms?: number })[];
  assertions: Record<string, unknown>[];
}

/** Words an agent says only when a template variable or a value went unfilled. */
const NOTHING_UNFILLED = {
  type: 'NOT_CONTAINS',
  name: 'no unfilled variables',
  config: { value: ['{{', '}}', 'undefined', '[object Object]', 'NaN'] },
};

const judged = (rubric: string) => ({
  type: 'LLM_JUDGE',
  name: 'behaviour',
  config: { prompt: rubric, threshold: 0.7 },
  is_required: false,
});

export const SCENARIO_TEMPLATES: readonly ScenarioTemplate[] = [
  {
    id: 'who-is-calling',
    name: 'Asks who is calling',
    category: 'identity',
    description: 'The person asks who is calling and why before going on.',
    input_messages: ['Hello?', 'Sorry, who is this? What is this about?', 'Okay, thanks. Goodbye.'],
    assertions: [NOTHING_UNFILLED, judged('The agent says who it is, for whom it calls, and why.')],
  },
  {
    id: 'asks-for-a-person',
    name: 'Asks for a person',
    category: 'escalation',
    description: 'The person asks to talk to a human.',
    input_messages: ['Hi.', 'Can I speak to a real person, please?', 'Fine. Goodbye.'],
    assertions: [
      NOTHING_UNFILLED,
      judged('The agent handles the request for a person: it transfers, says how to reach one, or says it cannot.'),
    ],
  },
  {
    id: 'wrong-number',
    name: 'Wrong number',
    category: 'edge case',
    description: 'The person says the call has reached the wrong number.',
    input_messages: ['Hello?', "I think you have the wrong number. There's nobody here by that name.", 'Bye.'],
    assertions: [NOTHING_UNFILLED, judged('The agent apologises and ends politely, without pressing on.')],
  },
  {
    id: 'busy-call-back',
    name: 'Busy, asks for a call back',
    category: 'edge case',
    description: 'The person cannot talk now and asks to be called later.',
    input_messages: ["Hello, I'm driving right now, can you call me back later?", 'Thanks, bye.'],
    assertions: [NOTHING_UNFILLED, judged('The agent keeps it short and agrees to call back or ends the call.')],
  },
  {
    id: 'talks-over-the-agent',
    name: 'Talks over the agent',
    category: 'turn-taking',
    description: 'The person cuts in while the agent speaks, then asks it to repeat.',
    input_messages: [
      'Hello?',
      { role: 'user', content: 'Sorry, sorry, what did you say?', interrupt: true },
      'Okay. Goodbye.',
    ],
    assertions: [
      NOTHING_UNFILLED,
      judged('After being cut off, the agent stops and says again, briefly, what it said.'),
    ],
  },
  {
    id: 'not-interested',
    name: 'Not interested',
    category: 'objection',
    description: 'The person says no and asks not to be called again.',
    input_messages: ['Yes?', "No thanks, I'm not interested. Please don't call me again.", 'Goodbye.'],
    assertions: [NOTHING_UNFILLED, judged('The agent accepts the no at once, politely, and does not insist.')],
  },
];
