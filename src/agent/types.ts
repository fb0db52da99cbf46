import type { CallRequest } from '../schemas/call-request.js';
import type { KnowledgeLookup } from '../knowledge/library.js';

/** One line of the conversation as the agent sees it. */
export interface Turn {
  role: 'user' | 'assistant' | 'robot' | 'agent-action';
  text: string;
}

/** What the agent is asked to react to. */
export type AgentInput =
  /** The call connected: say the first words (unless waiting for a greeting). */
  | { kind: 'start' }
  /** The other side said something. */
  | { kind: 'heard'; text: string }
  /** An IVR menu is playing and the agent should navigate it. */
  | { kind: 'ivr_menu'; text: string }
  /** The other side has been silent for a while. */
  | { kind: 'silence'; silentMs: number; times: number }
  /**
   * A custom tool the agent asked for has finished: `result` holds the new variables it produced
   * (ok) or why it failed or was skipped (`error`), so the agent can say what came back.
   */
  | { kind: 'tool_result'; name: string; ok: boolean; result: Record<string, unknown>; error?: string };

/** Built-in actions of seed 1.2: transfer, press buttons, wait, finish. */
export type AgentAction =
  /** `target` is a transfer_list label or a phone number; absent = the default transfer number. */
  | { type: 'transfer'; target?: string }
  | { type: 'press_buttons'; digits: string }
  | { type: 'wait' }
  /** `force`: end the call even if the goodbye is talked over (the agent cannot go on). */
  | { type: 'finish'; force?: boolean }
  /** A custom tool of the call (seed 2.5), by its name; `input` is checked against input_schema. */
  | { type: 'tool'; name: string; input: unknown };

export interface AgentReply {
  /** Words to say, or null to stay silent. */
  say: string | null;
  action: AgentAction | null;
  /** Something the record should show about this turn (e.g. why a fallback line was said). */
  note?: string;
}

export interface AgentContext {
  callId: string;
  request: CallRequest;
  inbound: boolean;
  /** System variables, request_data and what tools or dynamic_data added. */
  variables: Record<string, unknown>;
  transcript: readonly Turn[];
  /** dynamic_data `context` lines (seed 2.2): facts the agent knows; refreshed in place. */
  knowledge?: readonly string[];
  /** Searches the knowledge bases the call names in its tools: passages that answer a question, best first. */
  lookup?: KnowledgeLookup;
  /** Called when a language model's first token of this reply arrives (per-turn latency). */
  onFirstToken?(): void;
  /**
   * Called with each piece of the reply's words as a language model writes them: the session
   * speaks them as they come. The reply's `say` is still all of them.
   */
  onText?(piece: string): void;
  /**
   * Aborted when the session no longer wants this reply (the call ended, or the caller went on
   * talking and the turn restarts with all of their words): the model request stops at once.
   */
  signal?: AbortSignal;
}

/** The mind of a call: the offline rule model, an LLM, or a pathway runner. */
export interface Agent {
  /** Shown in call records: request_data.model is "offline" for the offline model, else model_provider is this label. */
  readonly label: string;
  /**
   * A turn may be abandoned before its reply is used and asked again with more of the caller's
   * words: respond() has no effect outside its reply (no webhook, message or state change) until
   * it returns. A pathway runner, whose nodes call webhooks and move on, is not restartable.
   */
  readonly restartable?: boolean;
  respond(input: AgentInput, context: AgentContext): Promise<AgentReply>;
  /**
   * Reads who answered from the far end's first words, for answering-machine detection
   * (src/calls/answer-detector.ts weighs it with the audio and the words). Undefined when unsure,
   * failed or aborted; absent (the offline model): the deterministic rules decide alone.
   */
  classifyAnswer?(words: string, signal: AbortSignal): Promise<AnswerReading | undefined>;
}

/** Who answered, as the agent's language model reads the first words (the detector's Answerer). */
export type AnswerReading = 'human' | 'voicemail' | 'ivr' | 'screener';
