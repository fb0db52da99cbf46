import { renderSpoken, renderTemplate } from '../domain/template.js';
import {
  chooseOption,
  companyWords,
  entryDigits,
  isMenu,
  parseMenu,
  PERSON_AFTER_MENU,
  PERSON_AFTER_SCREENER,
  type EntryPrompt,
  type MenuOption,
} from '../domain/ivr-menu.js';
import { isScreeningPrompt } from '../domain/screening.js';
import type { CallTool } from '../schemas/call-request.js';
import { summarize } from './tools.js';
import { relevantKnowledge } from './knowledge.js';
import { isQuestion } from '../domain/words.js';
import { answerFrom } from '../pathways/offline.js';
import type { Agent, AgentContext, AgentInput, AgentReply } from './types.js';

/** What the agent says when a transfer did not go through and the caller is back on the line. */
export const TRANSFER_FAILED_LINE =
  "I'm sorry, I couldn't transfer your call. Is there anything else I can help you with?";

const GOODBYE = /\b(good ?bye|bye|farewell|have a (?:good|great|nice) (?:day|one|evening))\b/i;
const AGREE =
  /\b(yes|yeah|yep|sure|okay|ok|works|sounds good|fine|great|agreed?|correct|absolutely|of course|perfect)\b/i;
const DECLINE = /\b(no|nope|not interested|don't|do not|stop calling|remove me)\b/i;
const WHO = /\b(who is (?:this|calling)|who are you|what(?:'s| is) this about|what do you want)\b/i;
const ACTION_VERBS =
  /^(ask|tell|confirm|remind|schedule|book|check|let|inform|follow|offer|verify|collect|notify|invite|reschedule|cancel|update|qualify|survey|thank|find|get|see|make|help|discuss|introduce|request|arrange)\b/i;
/** The task's first instruction, read as what the call is for ("confirm the appointment ..."). */
export function purposeOf(task: string | null): string {
  if (!task || task.trim() === '') return 'follow up with you';
  const sentences = task
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
  const useful = sentences.find((s) => !/^(you are|you're|your name is|act as|be )/i.test(s));
  // A task that only describes the agent ("You are a helpful assistant.") says nothing of the call.
  if (!useful) return 'follow up with you';
  const clean = useful.replace(/[.!?]+$/, '');
  if (ACTION_VERBS.test(clean)) return clean.charAt(0).toLowerCase() + clean.slice(1);
  return `talk with you about the following: ${clean}`;
}

/**
 * What a menu is for this call: the task, the transfer_list labels and request_data's short
 * texts (a `department` or `reason` field points the way as much as the task does).
 */
export function menuGoal(task: string | null, ctx: AgentContext): string {
  const data = Object.values(ctx.request.request_data).filter(
    (v): v is string => typeof v === 'string' && v.length <= 80,
  );
  return [task ?? '', ...Object.keys(ctx.request.transfer_list ?? {}), ...data].join(' ').trim();
}

/** What the far end said on this call that is no menu: its greetings and announcements. */
function recordings(ctx: AgentContext): string {
  return ctx.transcript
    .filter((t) => (t.role === 'robot' || t.role === 'user') && !isMenu(t.text))
    .map((t) => t.text)
    .join(' ');
}

/** The reply to an entry prompt: the digits from the call's data and the terminator, or a polite "I don't have it". */
export function entryReply(entry: EntryPrompt, ctx: AgentContext): AgentReply {
  const digits = entryDigits(entry, { ...ctx.variables, ...ctx.request.request_data });
  if (digits) return { say: null, action: { type: 'press_buttons', digits: `${digits}${entry.terminator}` } };
  return {
    say: `I'm sorry, I don't have the ${entry.field}.`,
    action: null,
    note: `IVR asked for the ${entry.field}: not in the call's data`,
  };
}

/** The reply for a chosen option: say a speech menu's words, or press the key. */
export function optionReply(option: MenuOption): AgentReply {
  return option.spoken
    ? { say: option.key, action: null }
    : { say: null, action: { type: 'press_buttons', digits: option.key } };
}

/** Nothing on the menu serves the task and it offers no operator: press nothing, wait for the repeat or a person. */
export const NO_OPTION: AgentReply = {
  say: null,
  action: null,
  note: 'IVR menu: no option fits the task and none reaches a person; waiting',
};

/**
 * The offline choice on a complete menu: the digits an entry prompt asks for, else the option
 * that serves the task, else the operator or "all other questions", else nothing (chooseOption).
 */
export function menuReply(text: string, task: string | null, ctx: AgentContext): AgentReply {
  const menu = parseMenu(text);
  const choice = chooseOption(menu, menuGoal(task, ctx), {
    language: ctx.request.language,
    ignore: companyWords(recordings(ctx)),
  });
  if (menu.entry) {
    const entered = entryReply(menu.entry, ctx);
    if (entered.action || !choice) return entered;
  }
  return choice ? optionReply(choice.option) : NO_OPTION;
}

/**
 * The offline model (CONTRACT.md section 7): a deterministic, rule-based stand-in that lets calls
 * run end to end with no network. It is not AI and never claims to be: it states the purpose of
 * the call from the task, reacts to agreement, refusal, questions and goodbyes, picks IVR keys by
 * matching the task's words to the menu, and transfers when the task asks for it.
 */
export class OfflineAgent implements Agent {
  readonly label = 'offline';
  /** Stateless: a reply depends only on its input and the call so far. */
  readonly restartable = true;

  async respond(input: AgentInput, ctx: AgentContext): Promise<AgentReply> {
    const task = ctx.request.task ? renderTemplate(ctx.request.task, ctx.variables) : null;
    const purpose = purposeOf(task);
    switch (input.kind) {
      case 'start': {
        if (ctx.request.first_sentence)
          return { say: renderSpoken(ctx.request.first_sentence, ctx.variables), action: null };
        if (ctx.inbound) return { say: 'Hello, thanks for calling! How can I help you today?', action: null };
        return { say: `Hello! This is an automated call. I'm calling to ${purpose}.`, action: null };
      }
      case 'ivr_menu':
        return menuReply(input.text, task, ctx);
      case 'silence':
        if (input.times < 2) return { say: 'Hello? Are you still there?', action: null };
        return {
          say: "It seems I can't reach you right now. I'll try again another time. Goodbye!",
          action: { type: 'finish' },
        };
      case 'heard': {
        // A person picked up after a phone menu or a call screener: they hear the opening, as if
        // the call had just connected.
        const last = ctx.transcript.at(-1);
        if (last?.role === 'agent-action' && (last.text === PERSON_AFTER_MENU || last.text === PERSON_AFTER_SCREENER))
          return this.respond({ kind: 'start' }, ctx);
        return this.reply(input.text, task, purpose, ctx);
      }
      case 'tool_result': {
        if (!input.ok && input.name === 'transfer') return { say: TRANSFER_FAILED_LINE, action: null };
        if (!input.ok)
          return { say: "I'm sorry, I couldn't get that done right now. Is that all right?", action: null };
        const got = summarize(input.result);
        return {
          say: got
            ? `All done. ${got.replace(/[.!?]*$/, '.')} Does that work for you?`
            : 'All done. Does that work for you?',
          action: null,
        };
      }
    }
  }

  private reply(heard: string, task: string | null, purpose: string, ctx: AgentContext): AgentReply {
    const spoken = ctx.transcript.filter((t) => t.role === 'assistant').length;
    if (GOODBYE.test(heard)) return { say: 'Thank you for your time. Goodbye!', action: { type: 'finish' } };
    if (isScreeningPrompt(heard))
      return { say: `This is an automated assistant, calling to ${purpose}.`, action: null };
    const transfer = this.transferTarget(heard, task, ctx);
    if (transfer !== undefined && spoken >= 1) {
      return {
        say: 'Please hold while I transfer your call.',
        action: { type: 'transfer', ...(transfer ? { target: transfer } : {}) },
      };
    }
    if (WHO.test(heard)) return { say: `This is an automated assistant. I'm calling to ${purpose}.`, action: null };
    const answer = isQuestion(heard) ? this.fromKnowledge(heard, ctx) : undefined;
    if (answer)
      return { say: ctx.inbound ? `${answer} Is there anything else I can help you with?` : answer, action: null };
    if (DECLINE.test(heard) && !AGREE.test(heard)) {
      return {
        say: 'I understand. Thank you for your time, and have a good day. Goodbye!',
        action: { type: 'finish' },
      };
    }
    // A custom tool the task names is used once, after the first exchange, with request_data.
    const tool = spoken >= 1 ? this.namedTool(task, ctx) : undefined;
    if (tool) return { say: null, action: { type: 'tool', name: tool.name, input: ctx.request.request_data } };
    if (ctx.inbound) return this.inboundReply(heard, spoken);
    const saidPurpose = ctx.transcript.some((t) => t.role === 'assistant' && t.text.includes(purpose));
    if (AGREE.test(heard) && (spoken >= 2 || saidPurpose)) {
      return {
        say: 'Wonderful, thank you! That is all I needed. Have a great day. Goodbye!',
        action: { type: 'finish' },
      };
    }
    if (spoken >= 5) return { say: 'Thank you for your time. Goodbye!', action: { type: 'finish' } };
    if (spoken <= 1) {
      return {
        say: saidPurpose ? 'Would that work for you?' : `I'm calling to ${purpose}. Would that work for you?`,
        action: null,
      };
    }
    return { say: 'I see. Could you tell me if that works for you?', action: null };
  }

  /** The sentences of the call's knowledge bases that answer a question (answerFrom over the best passages). */
  private fromKnowledge(question: string, ctx: AgentContext): string | undefined {
    const passages = relevantKnowledge(ctx, question);
    return passages.length ? answerFrom(passages.map((p) => p.text).join('\n\n'), question) : undefined;
  }

  /** The first of the call's tools whose name the task mentions and that has not run yet. */
  private namedTool(task: string | null, ctx: AgentContext): CallTool | undefined {
    if (!task) return undefined;
    const lower = task.toLowerCase();
    return ctx.request.tools.find(
      (t) =>
        t.name.trim() !== '' &&
        lower.includes(t.name.trim().toLowerCase()) &&
        !ctx.transcript.some((turn) => turn.role === 'agent-action' && turn.text.startsWith(`Tool ${t.name} `)),
    );
  }

  /** Answering a call: the caller has the purpose, the agent listens and notes it. */
  private inboundReply(heard: string, spoken: number): AgentReply {
    if (spoken >= 4)
      return { say: "Thank you, I've noted everything. Have a good day. Goodbye!", action: { type: 'finish' } };
    if (DECLINE.test(heard) && spoken >= 2)
      return { say: 'All right. Thank you for calling. Goodbye!', action: { type: 'finish' } };
    if (spoken <= 1) return { say: 'Sure, I can help with that. Could you tell me a little more?', action: null };
    return { say: 'Thank you. Is there anything else I can note for you?', action: null };
  }

  /**
   * undefined: no transfer. '' : the default transfer number. Otherwise a transfer_list label.
   * A transfer happens only when the task asks for one and a number is configured.
   */
  private transferTarget(heard: string, task: string | null, ctx: AgentContext): string | undefined {
    const { transfer_list: list, transfer_phone_number: phone } = ctx.request;
    if (!task || !/\btransfer(?:ring|red)?\b/i.test(task)) return undefined;
    if (!phone && !(list && Object.keys(list).length > 0)) return undefined;
    if (list) {
      // What the caller asks for wins over what the task mentions.
      const labels = Object.keys(list).filter((l) => l !== 'default');
      for (const text of [heard, task]) {
        const label = labels.find((l) => text.toLowerCase().includes(l.toLowerCase()));
        if (label) return label;
      }
    }
    return '';
  }
}
