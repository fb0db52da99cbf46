/**
 * Simulated callers beyond scripted lines: one driven by the language model (a goal and a
 * personality), and the scripted caller of a finished call (its person's lines, replayed).
 */
import type { LineWriter } from '../carriers/sandbox/index.js';
import { askJson, type TestModel } from './judge.js';
import type { CallerSpec } from './suite.js';

/** Lines a caller driven by the model says at most when the case does not say. */
export const DEFAULT_MAX_TURNS = 10;

function callerSystem(caller: CallerSpec): string {
  return [
    'You play a person on a phone call with an AI voice agent, so that the team building the agent can test it.',
    `Your goal: ${caller.goal ?? 'talk with the agent'}`,
    `Your personality: ${caller.personality ?? 'an ordinary, polite person'}`,
    'Say one short line at a time, as people talk on the phone: no stage directions, no lists, no quotes.',
    'When your goal is met, or the call cannot get you further, say a short goodbye and hang up.',
    'Reply with a JSON object only: {"say": "<your next line, or empty to stay silent>", "hang_up": <true to hang up after the line, else false>}.',
  ].join('\n');
}

/**
 * The line writer of a caller driven by the model (`caller.goal`): on answering and each time the
 * agent has finished speaking, the model writes the next line from the goal, the personality and
 * the conversation so far, or decides to hang up. After `max_turns` lines the caller hangs up.
 * A model that fails or answers something else than a line is reported to `onError`, and the
 * caller hangs up.
 */
export function modelCaller(caller: CallerSpec, model: TestModel, onError: (message: string) => void): LineWriter {
  const maxTurns = caller.max_turns ?? DEFAULT_MAX_TURNS;
  const system = callerSystem(caller);
  return async ({ conversation, signal }) => {
    if (conversation.filter((line) => line.by === 'persona').length >= maxTurns) return { hangup: true };
    const sofar = conversation.map((line) => `${line.by === 'persona' ? 'you' : 'agent'}: ${line.text}`).join('\n');
    const ask = sofar
      ? `The call so far:\n${sofar}\n\nWhat do you say next?`
      : 'Your phone rang and you answered; nothing has been said yet. What do you say?';
    let reply: Record<string, unknown> | undefined;
    try {
      reply = await askJson(
        model,
        [
          { role: 'system', content: system },
          { role: 'user', content: ask },
        ],
        signal,
      );
    } catch (error) {
      // The call ended while the model was writing: nothing went wrong.
      if (signal.aborted) return { hangup: true };
      onError(`caller: the language model failed (${(error as Error).message}); the caller hung up`);
      return { hangup: true };
    }
    const say = typeof reply?.say === 'string' ? reply.say.trim() : '';
    const hangup = reply?.hang_up === true || reply?.hang_up === 'true';
    if (!say && !hangup) {
      onError(
        `caller: the model's reply is not a line (${reply ? JSON.stringify(reply) : 'no JSON object'}); the caller hung up`,
      );
      return { hangup: true };
    }
    return { ...(say && { say }), hangup };
  };
}

/**
 * A finished call's person as a scripted caller (`caller.lines`): the lines of `user` in the
 * order said, lines said in a row (before the agent spoke again) joined into one.
 */
export function scriptedCallerFromTranscript(transcript: readonly { user: string; text: string }[]): string[] {
  const lines: string[] = [];
  let joining = false;
  for (const line of transcript) {
    if (line.user === 'user') {
      const text = line.text.trim();
      if (!text) continue;
      if (joining) lines[lines.length - 1] = `${lines[lines.length - 1]} ${text}`;
      else lines.push(text);
      joining = true;
    } else if (line.user === 'assistant') {
      joining = false;
    }
  }
  return lines;
}
