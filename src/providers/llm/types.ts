import { inSpan } from '../../observability/tracing.js';
import { ProviderError, withRetries } from '../base.js';

/**
 * The language-model port (ARCHITECTURE.md rule 5): chat messages in, a stream of text deltas and
 * whole tool calls out. Vendor files stay thin; whatever they throw becomes an LlmError that says
 * whether trying again could help.
 */

/** A tool call as the model made it: `arguments` is the JSON text the model wrote. */
export interface LlmToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A function the model may call; `parameters` is a JSON Schema object. */
export interface LlmTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: LlmTool[];
  temperature?: number;
  /** Ask for a JSON object as the reply (post-call analysis). */
  json?: boolean;
  /** Cancels the request (the call ended, or a newer turn replaced this one). */
  signal?: AbortSignal;
}

/**
 * What a stream yields. Tool calls come whole, once their streamed pieces are assembled, so a
 * consumer never sees half of a call's arguments.
 */
export type LlmEvent =
  | { type: 'text'; delta: string }
  | { type: 'tool_call'; call: LlmToolCall }
  | { type: 'done'; finishReason: string | null };

/** A whole reply, for callers that do not stream (summaries, analysis). */
export interface LlmReply {
  text: string;
  toolCalls: LlmToolCall[];
  finishReason: string | null;
}

export interface LlmProvider {
  /** Shown in logs, e.g. "openai-compatible". */
  readonly name: string;
  stream(request: ChatRequest): AsyncIterable<LlmEvent>;
}

/** Every failure of the language model: `retryable` says whether the same request may succeed later. */
export class LlmError extends ProviderError {}

export interface CompleteOptions {
  /** Called when the first token (text or tool call) arrives. */
  onFirst?: () => void;
  /** Each piece of text as it is written. */
  onText?: (delta: string) => void;
  /** Told before a failed request is sent again. */
  onRetry?: (error: ProviderError, attempt: number) => void;
}

/** Collects a stream into one reply; `onFirst` is called when its first token (text or tool call) arrives. */
export async function complete(
  provider: LlmProvider,
  request: ChatRequest,
  options: CompleteOptions = {},
): Promise<LlmReply> {
  // A span per model request, named and described by OpenTelemetry's GenAI conventions.
  return inSpan(
    `chat ${request.model}`,
    {
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': provider.name,
      'gen_ai.request.model': request.model,
      ...(request.temperature !== undefined && { 'gen_ai.request.temperature': request.temperature }),
    },
    async (span) => {
      const reply = await collect(provider, request, options);
      if (reply.finishReason) span.setAttribute('gen_ai.response.finish_reasons', [reply.finishReason]);
      return reply;
    },
  );
}

async function collect(provider: LlmProvider, request: ChatRequest, options: CompleteOptions): Promise<LlmReply> {
  let text = '';
  const toolCalls: LlmToolCall[] = [];
  let finishReason: string | null = null;
  let first = options.onFirst;
  // A request that failed retryably before its first token is sent again, once, if that can start
  // within 3 s (a caller may be waiting): nothing of it was spoken yet.
  const events = withRetries(() => provider.stream(request), {
    retries: 1,
    backoffMs: 250,
    withinMs: 3000,
    signal: request.signal,
    onRetry: options.onRetry,
  });
  for await (const event of events) {
    if (first && event.type !== 'done') {
      first();
      first = undefined;
    }
    if (event.type === 'text') {
      text += event.delta;
      options.onText?.(event.delta);
    } else if (event.type === 'tool_call') toolCalls.push(event.call);
    else finishReason = event.finishReason;
  }
  return { text, toolCalls, finishReason };
}
