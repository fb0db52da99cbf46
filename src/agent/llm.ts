import { renderSpoken, renderTemplate } from '../domain/template.js';
import type { CallRequest } from '../schemas/call-request.js';
import {
  complete,
  LlmError,
  type ChatMessage,
  type LlmProvider,
  type LlmTool,
  type LlmToolCall,
} from '../providers/llm/types.js';
import { findTool, functionName, looseSchema } from './tools.js';
import { parseMenu, type Menu, type MenuOption } from '../domain/ivr-menu.js';
import { entryReply, menuReply, NO_OPTION, optionReply } from './offline.js';
import type { Agent, AgentAction, AgentContext, AgentInput, AgentReply, AnswerReading, Turn } from './types.js';
import { knownLines } from './knowledge.js';

/** What the caller hears when the model fails or is too slow: short, and it keeps the turn alive. */
export const FALLBACK_LINE = "Sorry, I'm having trouble right now. Could you say that again?";
/** After this many failed turns in a row the call ends politely instead of looping on apologies. */
const MAX_FAILURES = 3;
const GIVE_UP_LINE = "Sorry, I'm having technical difficulties. I'll have to end the call now. Goodbye!";
/** Silences after which the call ends even if the model keeps waiting: a call never hangs. */
const MAX_SILENCES = 3;

export interface AgentLog {
  warn(object: object, message: string): void;
}

export interface LlmAgentOptions {
  provider: LlmProvider;
  /** The model id sent to the endpoint (and the agent's label in call records). */
  model: string;
  /** Current time, for the prompt (the service clock, so scaled test clocks agree). */
  now: () => Date;
  log?: AgentLog;
  /** A request that failed (the metrics' provider errors): timeout, retryable or not. */
  onFailure?(error: LlmError): void;
}

const END_CALL: LlmTool = {
  name: 'end_call',
  description:
    'Hang up. Call it when the conversation is over, after saying goodbye in the same reply, or when you reached voicemail or the wrong person.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};
const WAIT: LlmTool = {
  name: 'wait',
  description: 'Stay silent and keep listening, e.g. when asked to hold on or while on hold.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};
const PRESS_BUTTONS: LlmTool = {
  name: 'press_buttons',
  description:
    'Press telephone keys (DTMF) to navigate an automated phone menu. Digits 0-9, * and #; "w" waits half a second.',
  parameters: {
    type: 'object',
    properties: { digits: { type: 'string', description: 'Keys to press, e.g. "2" or "1234#"' } },
    required: ['digits'],
    additionalProperties: false,
  },
};

function transferTool(request: CallRequest): LlmTool | undefined {
  const labels = Object.keys(request.transfer_list ?? {});
  // Offered only when there is somewhere to transfer to: otherwise the model could only fail.
  if (labels.length === 0 && !request.transfer_phone_number) return undefined;
  const choices = labels.filter((l) => l !== 'default');
  return {
    name: 'transfer',
    description:
      'Transfer the call to a person, after telling the other side you are transferring them. If the transfer does not go through, its result says why and the call goes on with you.' +
      (choices.length ? ` Destinations: ${choices.join(', ')}; omit label for the default one.` : ''),
    parameters: {
      type: 'object',
      properties: choices.length ? { label: { type: 'string', enum: choices, description: 'Where to transfer' } } : {},
      additionalProperties: false,
    },
  };
}

/**
 * The seed's built-in actions as functions. `turbo` has no transferring and no IVR navigation
 * (seed 2.1 and 2.4), so those two are not offered to it at all.
 */
export function toolsFor(request: CallRequest): LlmTool[] {
  const tools = [END_CALL, WAIT];
  if (request.model === 'turbo') return tools;
  const transfer = transferTool(request);
  return [...tools, PRESS_BUTTONS, ...(transfer ? [transfer] : []), ...customTools(request)];
}

const BUILT_IN = new Set(['end_call', 'wait', 'press_buttons', 'transfer']);

/**
 * The call's custom tools (seed 2.5) as functions: the name made valid for function calling, the
 * parameters from input_schema (its loose forms made standard, as a model endpoint validates
 * them) or any object. turbo gets none, like the other actions beyond speaking and hanging up.
 */
function customTools(request: CallRequest): LlmTool[] {
  return request.tools
    .filter((t) => !BUILT_IN.has(functionName(t.name)))
    .map((t) => {
      const schema = t.input_schema ? looseSchema(t.input_schema) : undefined;
      const parameters =
        schema && schema.type === 'object' ? schema : { type: 'object', properties: {}, additionalProperties: true };
      return { name: functionName(t.name), description: t.description, parameters };
    });
}

function localTime(now: Date, timezone: string): string {
  try {
    return now.toLocaleString('en-US', { timeZone: timezone, dateStyle: 'full', timeStyle: 'long' });
  } catch {
    return now.toUTCString();
  }
}

/** The system prompt: who the agent is on this call, its task, and what it knows. */
export function systemPrompt(ctx: AgentContext, now: Date): string {
  const r = ctx.request;
  const task = r.task ? renderTemplate(r.task, ctx.variables).trim() : '';
  const lines = [
    ctx.inbound
      ? 'You are a voice agent answering an incoming phone call.'
      : 'You are a voice agent on a phone call you placed.',
    'Everything you write is spoken aloud by text-to-speech: answer in one to three short, natural sentences; no lists, markdown, emojis or stage directions.',
    `Speak the language ${r.language} (BCP 47 tag) unless the other person clearly uses another one.`,
    `Timezone: ${r.timezone}. Current time there: ${localTime(now, r.timezone)}.`,
    'Use the functions to act: end_call to hang up once the conversation is done (say goodbye first, in the same reply).',
    '',
    'Your task:',
    task || (ctx.inbound ? 'Help the caller and note what they need.' : 'Follow up with the person you called.'),
  ];
  if (Object.keys(r.request_data).length > 0) {
    lines.push('', 'Call data (request_data), facts you may use:', JSON.stringify(r.request_data));
  }
  // System variables (phone numbers, call id, local time, place) without what request_data repeats.
  const system = Object.fromEntries(Object.entries(ctx.variables).filter(([k]) => !(k in r.request_data)));
  lines.push('', 'Call variables:', JSON.stringify(system));
  lines.push(...knownLines(ctx));
  return lines.join('\n');
}

/** The transcript as chat turns: robots are voices too, agent actions become short notes. */
export function historyOf(transcript: readonly Turn[]): ChatMessage[] {
  return transcript.map((turn): ChatMessage => {
    switch (turn.role) {
      case 'user':
        return { role: 'user', content: turn.text };
      case 'assistant':
        return { role: 'assistant', content: turn.text };
      case 'robot':
        return { role: 'user', content: `[automated voice] ${turn.text}` };
      case 'agent-action':
        return { role: 'system', content: `Note: ${turn.text}` };
    }
  });
}

/**
 * Whether the transcript already ends with these words of the caller: the user lines since the
 * agent last spoke, one line or several heard in a row and answered together.
 */
export function endsWithWords(transcript: readonly Turn[], text: string): boolean {
  const lines: string[] = [];
  for (let i = transcript.length - 1; i >= 0 && transcript[i]!.role !== 'assistant'; i--)
    if (transcript[i]!.role === 'user') lines.unshift(transcript[i]!.text);
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
  const said = norm(text);
  return lines.some((_, i) => norm(lines.slice(i).join(' ')) === said);
}

/** The instruction for this turn, when the transcript alone does not say what to do. */
function instruction(input: AgentInput, ctx: AgentContext): string | undefined {
  switch (input.kind) {
    case 'start':
      return ctx.inbound
        ? 'The call just connected. Greet the caller and ask how you can help.'
        : 'The call just connected and a person answered. Say your opening line: who you are and why you call.';
    case 'ivr_menu':
      // Answered by LlmAgent.navigate, with the menu's parsed options.
      return undefined;
    case 'silence':
      return `The other side has said nothing for ${Math.round(input.silentMs / 1000)} seconds (silence number ${input.times}). Check briefly whether they are still there; if this keeps happening, say goodbye and call end_call.`;
    case 'heard':
    case 'tool_result':
      return undefined;
  }
}

/** A function call's arguments as an object, or why they are not one (none given reads as {}). */
function readArguments(call: LlmToolCall): { args: Record<string, unknown> } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(call.arguments.trim() || '{}');
  } catch (error) {
    return { problem: `its arguments were not valid JSON (${(error as Error).message})` };
  }
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
    ? { args: parsed as Record<string, unknown> }
    : { problem: 'its arguments were not a JSON object' };
}

/** Lenient reading for the built-in functions: unreadable arguments are none. */
function parseArguments(call: LlmToolCall): Record<string, unknown> {
  const read = readArguments(call);
  return 'args' in read ? read.args : {};
}

/**
 * How often a turn asks the model again after it called a custom tool with arguments that are not
 * a JSON object (truncated or malformed output): the tool is never run on a guess such as {}.
 */
const ARGUMENT_RETRIES = 1;

/** One tool call as an action of the seed; null for a function this agent does not know. */
function actionOf(call: LlmToolCall, request: CallRequest): AgentAction | null {
  const args = parseArguments(call);
  switch (call.name) {
    case 'end_call':
      return { type: 'finish' };
    case 'wait':
      return { type: 'wait' };
    case 'press_buttons': {
      const digits = typeof args.digits === 'string' ? args.digits.replace(/[^0-9*#w]/gi, '') : '';
      return digits ? { type: 'press_buttons', digits } : null;
    }
    case 'transfer': {
      const label = typeof args.label === 'string' ? args.label : undefined;
      const known = label && (label in (request.transfer_list ?? {}) || /^\+\d+$/.test(label));
      return known ? { type: 'transfer', target: label } : { type: 'transfer' };
    }
    default: {
      const tool = request.model === 'turbo' ? undefined : findTool(request.tools, call.name);
      return tool ? { type: 'tool', name: tool.name, input: args } : null;
    }
  }
}

/**
 * The first function call of a reply that is an action, with the action; a custom tool whose
 * arguments cannot be read comes with the problem instead, for the model to be told.
 */
function firstAction(
  calls: readonly LlmToolCall[],
  request: CallRequest,
): { call: LlmToolCall; action: AgentAction } | { call: LlmToolCall; problem: string; tool: string } | undefined {
  for (const call of calls) {
    const action = actionOf(call, request);
    if (action === null) continue;
    if (action.type !== 'tool') return { call, action };
    const read = readArguments(call);
    return 'args' in read
      ? { call, action: { ...action, input: read.args } }
      : { call, problem: read.problem, tool: action.name };
  }
  return undefined;
}

/** The one function a menu's choice is asked through: its options are the menu's, and "none". */
export function menuTool(options: MenuOption[]): LlmTool {
  return {
    name: 'choose_menu_option',
    description:
      'Choose the option of the automated phone menu that serves your task. "none" when no option fits: nothing is pressed, and the menu repeats or a person answers.',
    parameters: {
      type: 'object',
      properties: {
        option: {
          type: 'string',
          enum: [...options.map((o) => o.key), 'none'],
          description: 'The key of the option (or the words of a spoken option), or "none"',
        },
      },
      required: ['option'],
      additionalProperties: false,
    },
  };
}

/** The menu as the model reads it: one line per option. */
export function menuInstruction(menu: Menu, options: MenuOption[]): string {
  const lines = options.map((o) => `- ${o.spoken ? `say "${o.key}"` : `key ${o.key}`}: ${o.label}`);
  return [
    'An automated phone menu has finished playing. Its options:',
    ...lines,
    'Call choose_menu_option once with the option that serves your task. Choose the operator, a representative or "all other questions" only when no other option fits; "none" when nothing fits at all. Do not talk to the menu.',
    ...(menu.entry ? [`It also asks for your ${menu.entry.field}, which the call data does not hold.`] : []),
  ].join('\n');
}

/** The longest the answer detector waits for the model's reading of the first words. */
export const CLASSIFY_TIMEOUT_MS = 1500;

const CLASSIFY_TOOL: LlmTool = {
  name: 'classify_answerer',
  description: 'Say who answered the outbound phone call, from its first words.',
  parameters: {
    type: 'object',
    properties: { answerer: { type: 'string', enum: ['person', 'voicemail', 'ivr_menu', 'call_screener', 'unsure'] } },
    required: ['answerer'],
    additionalProperties: false,
  },
};

const CLASSIFY_PROMPT =
  "You classify who answered an outbound phone call from the first words heard (a speech recogniser's transcript, " +
  'which may have errors). person: a live person, including a receptionist or shop clerk giving a business name. ' +
  'voicemail: a recorded greeting of an answering machine or voicemail. ivr_menu: an automated phone menu. ' +
  'call_screener: an assistant asking who is calling and why. unsure: anything else. ' +
  'Call classify_answerer once; say nothing else.';

const READINGS: Record<string, AnswerReading> = {
  person: 'human',
  voicemail: 'voicemail',
  ivr_menu: 'ivr',
  call_screener: 'screener',
};

/**
 * The agent's mind on any OpenAI-compatible model. Each turn sends the system prompt, the call's
 * transcript so far and the built-in actions as functions; the reply's text is said and its
 * first known function call becomes the action. A failing or slow model never hangs the call:
 * the caller hears FALLBACK_LINE, the failure is logged, and after MAX_FAILURES in a row the
 * call ends politely. One instance serves one call (agentFor builds it per call).
 */
export class LlmAgent implements Agent {
  readonly label: string;
  /** A turn's only effects (failures counted, a pending tool call) happen once the model has answered. */
  readonly restartable = true;
  private failures = 0;
  /** The model's last custom-tool call, answered with a tool message once the result is in. */
  private pendingTool: { call: LlmToolCall; text: string | null } | undefined;

  constructor(private readonly o: LlmAgentOptions) {
    this.label = o.model;
  }

  /**
   * One short request with the far end's first words and one function to call, answered within
   * CLASSIFY_TIMEOUT_MS or not at all: a slow, failing or unsure model leaves the audio and the
   * words to decide.
   */
  async classifyAnswer(words: string, signal: AbortSignal): Promise<AnswerReading | undefined> {
    try {
      const answer = await complete(this.o.provider, {
        model: this.o.model,
        messages: [
          { role: 'system', content: CLASSIFY_PROMPT },
          { role: 'user', content: words },
        ],
        tools: [CLASSIFY_TOOL],
        temperature: 0,
        signal: AbortSignal.any([signal, AbortSignal.timeout(CLASSIFY_TIMEOUT_MS)]),
      });
      const call = answer.toolCalls.find((c) => c.name === CLASSIFY_TOOL.name);
      const said = call ? parseArguments(call).answerer : undefined;
      return typeof said === 'string' && Object.hasOwn(READINGS, said) ? READINGS[said] : undefined;
    } catch (error) {
      if (!signal.aborted) {
        const failure = error instanceof LlmError ? error : new LlmError(String(error), false);
        this.o.log?.warn({ model: this.o.model, err: failure }, 'language model failed to classify who answered');
      }
      return undefined;
    }
  }

  async respond(input: AgentInput, ctx: AgentContext): Promise<AgentReply> {
    if (input.kind === 'ivr_menu') return this.navigate(input.text, ctx);
    // first_sentence is said verbatim (seed 2.1), with no round trip to the model.
    if (input.kind === 'start' && ctx.request.first_sentence)
      return { say: renderSpoken(ctx.request.first_sentence, ctx.variables), action: null };
    const messages: ChatMessage[] = [
      { role: 'system', content: systemPrompt(ctx, this.o.now()) },
      ...historyOf(ctx.transcript),
    ];
    // The session records what was heard before asking; add it only if it is not there yet.
    if (input.kind === 'heard' && !endsWithWords(ctx.transcript, input.text))
      messages.push({ role: 'user', content: input.text });
    const note = instruction(input, ctx);
    if (note) messages.push({ role: 'system', content: note });
    if (input.kind === 'tool_result') {
      const pending = this.pendingTool;
      this.pendingTool = undefined;
      const content = JSON.stringify(input.ok ? input.result : { error: input.error ?? 'failed' });
      if (pending) {
        // The function call and its answer, as the chat protocol pairs them.
        messages.push({ role: 'assistant', content: pending.text, toolCalls: [pending.call] });
        messages.push({ role: 'tool', toolCallId: pending.call.id, content });
      } else {
        messages.push({ role: 'system', content: `Result of the tool ${input.name}: ${content}` });
      }
    }
    let reply: AgentReply;
    try {
      const said: string[] = [];
      const notes: string[] = [];
      let first: ReturnType<typeof firstAction>;
      for (let attempt = 0; ; attempt++) {
        const answer = await complete(
          this.o.provider,
          {
            model: this.o.model,
            messages,
            tools: toolsFor(ctx.request),
            temperature: ctx.request.temperature,
            ...(ctx.signal && { signal: ctx.signal }),
          },
          {
            ...(ctx.onFirstToken && attempt === 0 && { onFirst: ctx.onFirstToken }),
            ...(ctx.onText && { onText: ctx.onText }),
          },
        );
        const unknown = answer.toolCalls.filter((c) => actionOf(c, ctx.request) === null);
        if (unknown.length)
          this.o.log?.warn(
            { call_id: ctx.callId, tools: unknown.map((c) => c.name) },
            'model called unknown functions',
          );
        if (answer.text.trim() !== '') said.push(answer.text.trim());
        first = firstAction(answer.toolCalls, ctx.request);
        if (!first || !('problem' in first)) break;
        notes.push(`Tool ${first.tool} not called: ${first.problem}`);
        if (attempt >= ARGUMENT_RETRIES) break;
        // Told as a note, not as a paired tool message: servers that parse the arguments of earlier
        // function calls (chat templates) would reject the request for the same bad JSON.
        if (answer.text.trim() !== '') messages.push({ role: 'assistant', content: answer.text.trim() });
        messages.push({
          role: 'system',
          content: `Your call of the function ${first.call.name} was not run: ${first.problem}. Its arguments were: ${first.call.arguments.slice(0, 500)}. Call it again with one JSON object that matches its parameters, or go on without it.`,
        });
      }
      this.failures = 0;
      const action = first && 'action' in first ? first.action : null;
      const say = said.length ? said.join(' ') : null;
      // A transfer too: when it fails the caller is back, and its result answers the call.
      if ((action?.type === 'tool' || action?.type === 'transfer') && first)
        this.pendingTool = { call: first.call, text: say };
      reply = { say, action, ...(notes.length && { note: notes.join('; ') }) };
    } catch (error) {
      // Abandoned by the session (the call ended or the turn restarts): not a failure of the model.
      if (ctx.signal?.aborted) return { say: null, action: null };
      const failure = error instanceof LlmError ? error : new LlmError(String(error), false);
      this.failures++;
      this.o.onFailure?.(failure);
      this.o.log?.warn(
        {
          call_id: ctx.callId,
          model: this.o.model,
          err: failure,
          retryable: failure.retryable,
          failures: this.failures,
        },
        'language model failed: the caller hears the fallback line',
      );
      const note = `Language model failed (${failure.message}): ${this.failures >= MAX_FAILURES ? 'gave up' : 'fallback line said'}`;
      reply =
        this.failures >= MAX_FAILURES
          ? { say: GIVE_UP_LINE, action: { type: 'finish', force: true }, note }
          : { say: FALLBACK_LINE, action: null, note };
    }
    if (input.kind === 'silence' && input.times >= MAX_SILENCES && reply.action?.type !== 'finish')
      return { say: "I can't hear you, so I'll end the call now. Goodbye!", action: { type: 'finish' } };
    return reply;
  }

  /**
   * A complete phone menu: an entry prompt is answered from the call's data; otherwise the model
   * chooses once among the parsed options (one tool call with the task and the conversation).
   * A key the menu did not offer is never pressed; a failing model leaves the choice to the
   * offline rules, so a menu never goes unanswered for the model's sake.
   */
  private async navigate(text: string, ctx: AgentContext): Promise<AgentReply> {
    const menu = parseMenu(text);
    if (menu.entry) {
      const entered = entryReply(menu.entry, ctx);
      if (entered.action) return entered;
    }
    const options = menu.options.filter((o) => !o.navigation);
    if (options.length === 0) return menu.entry ? entryReply(menu.entry, ctx) : NO_OPTION;
    const tool = menuTool(options);
    const messages: ChatMessage[] = [
      { role: 'system', content: systemPrompt(ctx, this.o.now()) },
      ...historyOf(ctx.transcript),
      { role: 'system', content: menuInstruction(menu, options) },
    ];
    let picked: string | undefined;
    try {
      const answer = await complete(this.o.provider, {
        model: this.o.model,
        messages,
        tools: [tool],
        temperature: ctx.request.temperature,
        ...(ctx.signal && { signal: ctx.signal }),
      });
      // A model that presses keys its own way is read the same: its digits must be an offered option.
      const call = answer.toolCalls.find((c) => c.name === tool.name || c.name === PRESS_BUTTONS.name);
      const args = call ? parseArguments(call) : {};
      const value = typeof args.option === 'string' ? args.option : typeof args.digits === 'string' ? args.digits : '';
      picked = value.trim();
    } catch (error) {
      if (ctx.signal?.aborted) return { say: null, action: null };
      const failure = error instanceof LlmError ? error : new LlmError(String(error), false);
      this.o.onFailure?.(failure);
      this.o.log?.warn(
        { call_id: ctx.callId, model: this.o.model, err: failure },
        'language model failed on a phone menu',
      );
      const task = ctx.request.task ? renderTemplate(ctx.request.task, ctx.variables) : null;
      const reply = menuReply(text, task, ctx);
      return { ...reply, note: `Language model failed (${failure.message}): the menu was chosen by the offline rules` };
    }
    const option = options.find((o) => o.key.toLowerCase() === picked?.toLowerCase());
    if (option) return optionReply(option);
    if (picked === 'none') return menu.entry ? entryReply(menu.entry, ctx) : NO_OPTION;
    return {
      ...NO_OPTION,
      note: `IVR menu: the model chose "${picked ?? ''}", which the menu did not offer; nothing pressed`,
    };
  }
}
