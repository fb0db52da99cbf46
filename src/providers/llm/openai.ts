import OpenAI from 'openai';
import { Watchdog, withoutSecret } from '../base.js';
import { fromOpenAiSdk } from '../openai-errors.js';
import { errorMessage } from '../../domain/records.js';
import type {
  ChatCompletionChunk,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import {
  LlmError,
  type ChatMessage,
  type ChatRequest,
  type LlmEvent,
  type LlmProvider,
  type LlmToolCall,
} from './types.js';

export interface OpenAiOptions {
  /** Local servers (Ollama, llama.cpp, LM Studio) accept any key; the SDK insists on one. */
  apiKey: string | undefined;
  /** Any OpenAI-compatible endpoint; undefined = api.openai.com. */
  baseUrl: string | undefined;
  /** Longest wait for a whole reply, stream included. */
  timeoutMs: number;
  /** Longest wait for the next piece of a reply once it streams (a stall). Default 5 s, at most timeoutMs. */
  stallMs?: number;
  /**
   * Retries by the SDK itself. Default 0: `complete()` retries what failed before its first token
   * (src/providers/base.ts), Retry-After included, so a call never waits on two layers of retries.
   */
  maxRetries?: number;
}

function toSdkMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls?.length
          ? {
              tool_calls: message.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      };
  }
}

/**
 * Puts streamed tool-call pieces back together. The API sends, per call, an `index`, then the id
 * and function name in the call's first delta, and the arguments split over many deltas; parallel
 * calls interleave by index. Some compatible servers repeat the id or name in later deltas, or
 * send a whole call in one delta: the first non-empty id and name win, arguments concatenate.
 * Others number every parallel call 0: a different id at an index starts a new call there.
 */
export class ToolCallAssembler {
  /** Calls in the order they began. */
  private readonly calls: { id: string; name: string; arguments: string }[] = [];
  /** The call each index of the stream writes to now. */
  private readonly byIndex = new Map<number, { id: string; name: string; arguments: string }>();

  add(deltas: ChatCompletionChunk.Choice.Delta.ToolCall[]): void {
    deltas.forEach((delta, position) => {
      // `index` is required by the spec; a server that omits it sends one call per position.
      const index = typeof delta.index === 'number' ? delta.index : position;
      let call = this.byIndex.get(index);
      if (!call || (delta.id && call.id && delta.id !== call.id)) {
        call = { id: '', name: '', arguments: '' };
        this.calls.push(call);
        this.byIndex.set(index, call);
      }
      if (delta.id && !call.id) call.id = delta.id;
      if (delta.function?.name && !call.name) call.name = delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
    });
  }

  /** The calls in the order they began; a call without an id gets one, as the reply must echo it. */
  finish(): LlmToolCall[] {
    return this.calls
      .map((c, i) => ({ id: c.id || `call_${i}`, name: c.name, arguments: c.arguments }))
      .filter((c) => c.name !== '');
  }
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';

/**
 * Drops the reasoning that some servers stream at the start of the content, between <think> and
 * </think> (llama.cpp, LM Studio, Ollama without a reasoning parser): a caller must not hear the
 * model think aloud. Tags may be split over deltas; a reply that does not open with the tag passes
 * as it comes, and so does everything after the block.
 */
export class ThinkingFilter {
  private state: 'start' | 'thinking' | 'after' | 'speaking' = 'start';
  private held = '';

  /** What of `delta` can be said now. */
  push(delta: string): string {
    if (this.state === 'speaking') return delta;
    this.held += delta;
    if (this.state === 'start') {
      const lead = this.held.trimStart();
      if (THINK_OPEN.startsWith(lead)) return ''; // blank, or perhaps the tag's first characters
      if (!lead.startsWith(THINK_OPEN)) return this.speak();
      this.state = 'thinking';
      this.held = lead.slice(THINK_OPEN.length);
    }
    if (this.state === 'thinking') {
      const end = this.held.indexOf(THINK_CLOSE);
      if (end < 0) {
        // Only what could be the start of the closing tag is worth keeping.
        this.held = this.held.slice(-(THINK_CLOSE.length - 1));
        return '';
      }
      this.state = 'after';
      this.held = this.held.slice(end + THINK_CLOSE.length);
    }
    // The blank lines between the block and the answer are not part of it.
    this.held = this.held.trimStart();
    return this.held === '' ? '' : this.speak();
  }

  /** At the end of the reply: what was held back as a possible tag, when it was none. */
  end(): string {
    return this.state === 'start' ? this.speak() : '';
  }

  private speak(): string {
    this.state = 'speaking';
    const out = this.held;
    this.held = '';
    return out;
  }
}

/** Maps what the SDK throws to LlmError, keeping whether a retry could help; `apiKey` is never quoted. */
export function toLlmError(error: unknown, timedOut: boolean, apiKey?: string): LlmError {
  return fromOpenAiSdk(error, LlmError, {
    vendor: 'the language model',
    keyHint: 'check OPENAI_API_KEY',
    timedOut,
    apiKey,
  });
}

/** A 400 that names temperature as the parameter it cannot take. */
function refusesTemperature(error: unknown): boolean {
  return (
    error instanceof OpenAI.BadRequestError && (error.param === 'temperature' || /'temperature'/.test(error.message))
  );
}

/** Any OpenAI-compatible chat completions endpoint, through the official SDK. */
export class OpenAiProvider implements LlmProvider {
  readonly name = 'openai-compatible';
  private readonly client: OpenAI;
  /** Models that refused a temperature (400 naming it): asked without one from then on. */
  private readonly noTemperature = new Set<string>();

  constructor(private readonly options: OpenAiOptions) {
    this.client = new OpenAI({
      apiKey: options.apiKey ?? 'unused',
      ...(options.baseUrl ? { baseURL: options.baseUrl } : {}),
      timeout: options.timeoutMs,
      maxRetries: options.maxRetries ?? 0,
    });
  }

  async *stream(request: ChatRequest): AsyncIterable<LlmEvent> {
    // The SDK's timeout stops at the response headers; a stream that stalls afterwards must still
    // end. The deadline of our own (joined with the caller's signal) runs until the model's first
    // word or tool call: from then on the caller hears the reply as it comes, and only a stall
    // (nothing for stallMs) ends it, however long the whole reply takes a slow model.
    const deadline = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      deadline.abort(new Error('timeout'));
    }, this.options.timeoutMs);
    const stall = new Watchdog(Math.min(this.options.stallMs ?? 5000, this.options.timeoutMs));
    stall.pause();
    const signal = AbortSignal.any([deadline.signal, stall.signal, ...(request.signal ? [request.signal] : [])]);
    const tools: ChatCompletionFunctionTool[] | undefined = request.tools?.length
      ? request.tools.map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.parameters },
        }))
      : undefined;
    const assembler = new ToolCallAssembler();
    const thinking = new ThinkingFilter();
    let finishReason: string | null = null;
    let streaming = false;
    try {
      const create = (withTemperature: boolean) =>
        this.client.chat.completions.create(
          {
            model: request.model,
            messages: request.messages.map(toSdkMessage),
            stream: true,
            ...(tools ? { tools } : {}),
            ...(withTemperature && request.temperature !== undefined ? { temperature: request.temperature } : {}),
            ...(request.json ? { response_format: { type: 'json_object' as const } } : {}),
          },
          { signal },
        );
      const withTemperature = !this.noTemperature.has(request.model);
      const stream = await create(withTemperature).catch((error: unknown) => {
        // Reasoning models (OpenAI's o-series, gpt-5) take no temperature but their default: the
        // call goes on without it, and so does every later request to that model.
        if (!withTemperature || request.temperature === undefined || !refusesTemperature(error)) throw error;
        this.noTemperature.add(request.model);
        return create(false);
      });
      streaming = true;
      // Time to the first piece is the model thinking (the whole deadline covers it); after that,
      // the watchdog runs while we wait for the next piece, never while the consumer holds one.
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        const said = choice?.delta?.content ? thinking.push(choice.delta.content) : '';
        if (said || choice?.delta?.tool_calls) clearTimeout(timer);
        if (said) {
          stall.pause();
          yield { type: 'text', delta: said };
        }
        stall.resume();
        if (!choice) continue;
        if (choice.delta?.tool_calls) assembler.add(choice.delta.tool_calls);
        if (choice.finish_reason) finishReason = choice.finish_reason;
      }
      // The SDK ends an aborted stream quietly, as if it were complete: a cut reply is a failure.
      if (signal.aborted) throw new LlmError('aborted', false);
      const rest = thinking.end();
      if (rest) yield { type: 'text', delta: rest };
    } catch (error) {
      if (stall.fired && !timedOut && !request.signal?.aborted)
        throw new LlmError(`The language model sent nothing for ${stall.ms} ms`, true, undefined, { cause: error });
      // A chunk that is not JSON (cut by a proxy, or a server's slip): the same request may well
      // succeed, and it is retried when nothing of it was used yet.
      if (streaming && !signal.aborted && error instanceof SyntaxError)
        throw new LlmError(`The language model sent a chunk that is not JSON: ${error.message}`, true, undefined, {
          cause: error,
        });
      // The body broke off (a reset connection, a restarting server): likewise. An error the server
      // put in the stream says what it is through the SDK instead.
      if (streaming && !signal.aborted && !(error instanceof OpenAI.APIError))
        throw new LlmError(
          `The language model's reply broke off: ${withoutSecret(errorMessage(error), this.options.apiKey)}`,
          true,
          undefined,
          {
            cause: error,
          },
        );
      throw toLlmError(error, timedOut, this.options.apiKey);
    } finally {
      clearTimeout(timer);
      stall.pause();
    }
    for (const call of assembler.finish()) yield { type: 'tool_call', call };
    yield { type: 'done', finishReason };
  }
}
