import type { Passage } from '../knowledge/search.js';
import type { KnowledgeLookup } from '../knowledge/library.js';
import { complete, type LlmProvider } from '../providers/llm/types.js';
import { answerFrom } from '../pathways/offline.js';
import type { AgentContext } from './types.js';

/** The caller's latest words: what they said since the agent last spoke. */
export function latestWords(ctx: AgentContext): string {
  const words: string[] = [];
  for (let i = ctx.transcript.length - 1; i >= 0; i--) {
    const turn = ctx.transcript[i]!;
    if (turn.role === 'assistant') break;
    if (turn.role === 'user') words.unshift(turn.text);
  }
  return words.join(' ');
}

/** What the call's knowledge bases say about `question` (by default the caller's latest words). */
export function relevantKnowledge(ctx: AgentContext, question = latestWords(ctx), limit = 3): Passage[] {
  if (!ctx.lookup || question.trim() === '') return [];
  return ctx.lookup(question, limit);
}

/**
 * What the agent knows beyond its instructions, as lines of its system prompt: dynamic_data's
 * live facts, and the knowledge bases' passages on what the caller just said.
 */
export function knownLines(ctx: AgentContext): string[] {
  const lines: string[] = [];
  if (ctx.knowledge && ctx.knowledge.length > 0) lines.push('', 'What you know (live data):', ...ctx.knowledge);
  const passages = relevantKnowledge(ctx);
  if (passages.length > 0)
    lines.push(
      '',
      "From your knowledge bases, on what the caller just said (answer from these; do not make up what they don't say):",
      ...passages.map((p) => `- [${p.source}] ${p.text}`),
    );
  return lines;
}

/** One earlier message of a conversation with a knowledge base (POST /v1/knowledge/chat). */
export interface KnowledgeChatTurn {
  role: 'user' | 'assistant';
  content: string;
}

/** A question answered from a knowledge base, with the passages the answer came from. */
export interface KnowledgeAnswer {
  answer: string;
  /** False when no passage of the knowledge base is about the question. */
  found: boolean;
  sources: Passage[];
}

/** The answer when the knowledge base says nothing about the question. */
export const NOT_IN_KNOWLEDGE = 'The knowledge base does not say.';

/**
 * Answers a question from a knowledge base as an agent on a call does: the best passages for it
 * (with the last question asked before it, for a follow-up such as "and on Sundays?"), read by the
 * language model when one is configured, else the sentences that share the most words with it.
 */
export async function answerFromKnowledge(input: {
  lookup: KnowledgeLookup;
  question: string;
  history: readonly KnowledgeChatTurn[];
  llm?: { provider: LlmProvider; model: string };
  signal?: AbortSignal;
}): Promise<KnowledgeAnswer> {
  const { lookup, question, history, llm } = input;
  const previous = [...history].reverse().find((t) => t.role === 'user')?.content;
  let sources = lookup(question, 3);
  if (sources.length === 0 && previous) sources = lookup(`${previous} ${question}`, 3);
  if (sources.length === 0) return { answer: NOT_IN_KNOWLEDGE, found: false, sources };
  if (!llm) {
    const answer = answerFrom(sources.map((p) => p.text).join('\n\n'), question);
    return { answer: answer ?? NOT_IN_KNOWLEDGE, found: answer !== undefined, sources };
  }
  const system = [
    'Answer the question from these passages of a knowledge base only, briefly. If they do not answer it, say that the knowledge base does not say.',
    ...sources.map((p) => `- [${p.source}] ${p.text}`),
  ].join('\n');
  const reply = await complete(llm.provider, {
    model: llm.model,
    messages: [
      { role: 'system', content: system },
      ...history.map((t) => ({ role: t.role, content: t.content })),
      { role: 'user', content: question },
    ],
    ...(input.signal && { signal: input.signal }),
  });
  return { answer: reply.text.trim() || NOT_IN_KNOWLEDGE, found: true, sources };
}
