import type { Passage } from '../knowledge/search.js';
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
