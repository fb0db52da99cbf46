/**
 * The language model's side of agent tests: the judge (an expectation scored against a rubric)
 * and the caller driven by a goal. Both use the model the server's calls use (OPENAI_API_KEY,
 * OPENLINE_LLM_BASE_URL, OPENLINE_LLM_MODEL), through the project's model client.
 */
import type { Config } from '../config.js';
import { OpenAiProvider } from '../providers/llm/openai.js';
import { complete, LlmError, type ChatMessage, type LlmProvider } from '../providers/llm/types.js';
import { parseJsonObject } from '../postcall/summary.js';
import { transcriptText, type CallView } from './expect.js';
import { MODEL_HINT, type Judge } from './suite.js';

/** The language model a test run asks: a provider and the model id. */
export interface TestModel {
  provider: LlmProvider;
  model: string;
}

/** The configured model (the one of `enhanced`, the calls' default), or undefined without one. */
export function testModel(config: Pick<Config, 'llm'>): TestModel | undefined {
  const llm = config.llm;
  if (!llm) return undefined;
  // A judge or a caller is not latency-bound like a turn of the agent: it may wait longer.
  const provider = new OpenAiProvider({
    apiKey: llm.apiKey,
    baseUrl: llm.baseUrl,
    timeoutMs: Math.max(llm.timeoutMs, 30_000),
  });
  return { provider, model: llm.models.enhanced };
}

/**
 * Asks for a JSON object: in JSON mode, or, when the server refuses response_format (a 400 or
 * 422 of some compatible servers), as text the object is read from.
 */
export async function askJson(
  model: TestModel,
  messages: ChatMessage[],
  signal?: AbortSignal,
): Promise<Record<string, unknown> | undefined> {
  const request = { model: model.model, messages, temperature: 0, ...(signal && { signal }) };
  let text: string;
  try {
    text = (await complete(model.provider, { ...request, json: true })).text;
  } catch (error) {
    if (!(error instanceof LlmError) || (error.status !== 400 && error.status !== 422)) throw error;
    text = (await complete(model.provider, request)).text;
  }
  return parseJsonObject(text);
}

const JUDGE_SYSTEM = [
  'You grade phone calls made or answered by an AI voice agent, for the team that builds the agent.',
  'Read the transcript ("assistant" is the agent, "user" the other person, "agent-action" what the agent did) and score how well the call meets the rubric, from 0 (not at all) to 1 (fully).',
  'Judge only by what the transcript shows.',
  'Reply with a JSON object only: {"score": <number from 0 to 1>, "reason": "<one sentence>"}.',
].join('\n');

/** The judges of a case, as a list. */
export const judgesOf = (judge: Judge | Judge[] | undefined): Judge[] =>
  judge === undefined ? [] : Array.isArray(judge) ? judge : [judge];

/** A rubric's score for one call, as the model gave it. */
export interface JudgeScore {
  rubric: string;
  score: number;
  pass_score: number;
  reason: string;
}

/**
 * The model's score of one call against one rubric (0 to 1) and its reason. Throws an error that
 * says what went wrong when the model fails or its reply is not a score.
 */
export async function scoreRubric(
  call: CallView,
  rubric: string,
  model: TestModel,
): Promise<{ score: number; reason: string }> {
  const transcript = transcriptText(call) || '(nothing was said)';
  let reply: Record<string, unknown> | undefined;
  try {
    reply = await askJson(model, [
      { role: 'system', content: JUDGE_SYSTEM },
      { role: 'user', content: `Rubric: ${rubric}\n\nTranscript:\n${transcript}` },
    ]);
  } catch (error) {
    throw new Error(`the language model failed (${(error as Error).message})`);
  }
  const score = typeof reply?.score === 'string' ? Number(reply.score) : reply?.score;
  if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 1) {
    const got = reply ? JSON.stringify(reply) : 'no JSON object';
    throw new Error(`the model's reply is not a score from 0 to 1 (${got})`);
  }
  return { score, reason: typeof reply?.reason === 'string' ? reply.reason : 'no reason given' };
}

/**
 * Scores a call against each rubric: a failure per rubric scored under its pass score (with the
 * score, the threshold and the model's reason), per reply that is not a score, and per model
 * error; and the scores given. Without a model every rubric fails: a judge never passes silently.
 */
export async function judgeCall(
  call: CallView,
  judges: Judge[],
  model: TestModel | undefined,
): Promise<{ failures: string[]; scores: JudgeScore[] }> {
  const scores: JudgeScore[] = [];
  if (judges.length === 0) return { failures: [], scores };
  if (!model)
    return { failures: judges.map((j) => `judge: "${j.rubric}" needs a language model: ${MODEL_HINT}`), scores };
  const failures: string[] = [];
  for (const j of judges) {
    let scored: { score: number; reason: string };
    try {
      scored = await scoreRubric(call, j.rubric, model);
    } catch (error) {
      failures.push(`judge: "${j.rubric}": ${(error as Error).message}`);
      continue;
    }
    const { score, reason } = scored;
    scores.push({ rubric: j.rubric, score, pass_score: j.pass_score, reason });
    if (score < j.pass_score)
      failures.push(`judge: "${j.rubric}" scored ${score}, under the pass score ${j.pass_score}: ${reason}`);
  }
  return { failures, scores };
}

/** A run as its analysis reads it (presentRun's fields). */
export interface AnalyzedRun {
  status: string;
  turn_count: number;
  error_message: string | null;
  assertion_results: { name: string | null; type: string; passed: boolean; message: string; is_required: boolean }[];
  transcript: string;
  nodes_visited: string[];
}

/** Why a run failed: the failed assertions and where the call went, and, with a model, its reading. */
export interface RunAnalysis {
  analyzed_by: 'rules' | 'llm';
  summary: string;
  failed_assertions: { name: string; required: boolean; message: string }[];
  last_node: string | null;
  root_cause: string | null;
  suggested_fix: string | null;
}

const ANALYSIS_SYSTEM = [
  'You find why an automated test of an AI voice agent failed, for the team that builds the agent.',
  'You get the failed checks, the nodes of the conversation pathway the call went through, and the transcript ("assistant" is the agent, "user" the simulated caller).',
  'Reply with a JSON object only: {"root_cause": "<one or two sentences: what the agent did wrong, and where>", "suggested_fix": "<one or two sentences: what to change in its prompt, pathway or settings>"}.',
].join('\n');

/**
 * The analysis of a failed run (POST /v1/agent-testing/runs/{id}/analyze): the failed assertions
 * with their messages and the node the call ended in, always; with a language model, also its
 * reading of the root cause and a fix. A model that fails leaves those null (the rest stands).
 */
export async function analyzeRun(run: AnalyzedRun, model: TestModel | undefined): Promise<RunAnalysis> {
  const failed = run.assertion_results
    .filter((a) => !a.passed)
    .map((a) => ({ name: a.name ?? a.type, required: a.is_required, message: a.message }));
  const lastNode = run.nodes_visited.at(-1) ?? null;
  const where = `${lastNode ? ` The call ended in node "${lastNode}"` : ' The call'} after ${run.turn_count} turns.`;
  const summary =
    run.status === 'ERROR'
      ? `The run could not be made: ${run.error_message ?? 'no reason was recorded'}.`
      : failed.length === 0
        ? `The run ${run.status === 'PASSED' ? 'passed' : 'failed'} with no failed assertion.${where}`
        : `${failed.length} of ${run.assertion_results.length} assertions failed: ${failed
            .map((f) => `${f.name} (${f.message})`)
            .join('; ')}.${where}`;
  const base: RunAnalysis = {
    analyzed_by: 'rules',
    summary,
    failed_assertions: failed,
    last_node: lastNode,
    root_cause: null,
    suggested_fix: null,
  };
  if (!model || run.status !== 'FAILED') return base;
  try {
    const facts = [
      `Failed checks:\n${failed.map((f) => `- ${f.name}: ${f.message}`).join('\n') || '(none)'}`,
      `Pathway nodes, in order: ${run.nodes_visited.join(' > ') || '(no pathway)'}`,
      `Transcript:\n${run.transcript || '(nothing was said)'}`,
    ].join('\n\n');
    const reply = await askJson(model, [
      { role: 'system', content: ANALYSIS_SYSTEM },
      { role: 'user', content: facts },
    ]);
    const text = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim() : null);
    const rootCause = text(reply?.root_cause);
    return rootCause
      ? { ...base, analyzed_by: 'llm', root_cause: rootCause, suggested_fix: text(reply?.suggested_fix) }
      : base;
  } catch (error) {
    if (error instanceof LlmError) return base;
    throw error;
  }
}
