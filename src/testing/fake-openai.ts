import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A tool call the fake model makes; `arguments` objects are sent as JSON text, like the API. */
export interface FakeToolCall {
  name: string;
  arguments?: Record<string, unknown> | string;
  id?: string;
}

/** One scripted answer of the fake model. */
export type FakeReply =
  | {
      text?: string;
      /**
       * The model's reasoning before its answer, streamed as reasoning models' servers do: in
       * `reasoning_content` deltas (DeepSeek, vLLM; `reasoning` on OpenRouter and Ollama), or
       * inside the content between `<think>` and `</think>` (llama.cpp, LM Studio and Ollama
       * without a reasoning parser).
       */
      reasoning?: { text: string; as: 'reasoning_content' | 'reasoning' | 'think-tags' };
      toolCalls?: FakeToolCall[];
      /** Characters per streamed delta (text and arguments); small values split everything. */
      chunkSize?: number;
      /**
       * The streamed deltas after the first are spread over this many milliseconds: a model whose
       * first token comes at once and whose whole reply takes a while. Default 0 (all at once).
       */
      streamMs?: number;
    }
  /**
   * An HTTP error with OpenAI's error body. Like the API, it says when to try again only when
   * told: `retryAfterMs` sets OpenAI's retry-after-ms, `retryAfterS` the standard Retry-After.
   */
  | { status: number; message?: string; retryAfterMs?: number; retryAfterS?: number; param?: string; code?: string }
  /** Never answers ('mid-stream': sends the stream's headers and first chunk, with `text` if given, then stalls). */
  | { hang: 'before-headers' | 'mid-stream'; text?: string }
  /**
   * Sends the stream's headers and opening chunk (with `text` if given), then breaks the connection
   * without `[DONE]`, as a restarting server or a proxy cutting an idle stream does.
   */
  | { drop: 'mid-stream'; text?: string }
  /** Sends the opening chunk (with `text` if given), then a `data:` line that is not JSON, then `[DONE]`. */
  | { malformed: true; text?: string };

/** A request as the fake received it, for assertions on prompt, tools, temperature and model. */
export interface RecordedRequest {
  path: string;
  authorization: string | undefined;
  body: {
    model: string;
    stream?: boolean;
    temperature?: number;
    messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
    tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
    response_format?: { type: string };
    [key: string]: unknown;
  };
}

/**
 * A local OpenAI-compatible server speaking the real wire protocol: POST /v1/chat/completions,
 * streamed as Server-Sent Events (`data: {chunk}` lines, then `data: [DONE]`) with text deltas and
 * tool-call deltas as the API sends them (index, id and function.name in a call's first delta,
 * arguments split over later deltas, parallel calls interleaved), or as one JSON object when
 * stream is false. Replies come from a queue (`script`), else from `handler`.
 */
export class FakeOpenAi {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: FakeReply[] = [];
  /** Answers when the queue is empty. Default: a short text. */
  handler: (request: RecordedRequest) => FakeReply = () => ({ text: 'OK.' });
  private readonly sockets = new Set<Socket>();
  private sequence = 0;
  private apiKey: string | undefined;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  /**
   * `apiKey`: the key clients must send as `Authorization: Bearer`; any other is refused with 401
   * and OpenAI's `invalid_api_key` body, which quotes the key it got, masked but for its ends.
   * Default: any key (local servers ask for none).
   */
  static async start(options: { apiKey?: string } = {}): Promise<FakeOpenAi> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const fake = new FakeOpenAi(server, `http://127.0.0.1:${port}/v1`);
    fake.apiKey = options.apiKey;
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void fake.handle(req, res));
    server.on('connection', (socket: Socket) => {
      fake.sockets.add(socket);
      socket.on('close', () => fake.sockets.delete(socket));
    });
    return fake;
  }

  /** Queues replies, answered in order before `handler` takes over. */
  script(...replies: FakeReply[]): void {
    this.queue.push(...replies);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      return this.error(res, 404, `Unknown path ${req.method} ${req.url}`);
    }
    let body: RecordedRequest['body'];
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest['body'];
    } catch {
      return this.error(res, 400, 'Invalid JSON body');
    }
    const recorded: RecordedRequest = { path: req.url, authorization: req.headers.authorization, body };
    this.requests.push(recorded);
    if (this.apiKey !== undefined && recorded.authorization !== `Bearer ${this.apiKey}`) {
      const sent = /^Bearer (.*)$/.exec(recorded.authorization ?? '')?.[1] ?? '';
      const masked = sent.length > 8 ? `${sent.slice(0, 3)}${'*'.repeat(sent.length - 7)}${sent.slice(-4)}` : sent;
      return this.error(
        res,
        401,
        `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        {},
        'invalid_api_key',
      );
    }
    const reply = this.queue.shift() ?? this.handler(recorded);
    if ('status' in reply) return this.error(res, reply.status, reply.message ?? 'Scripted failure', reply);
    if ('malformed' in reply) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const opening = this.chunk(body.model, { role: 'assistant', content: reply.text ?? '' }, null);
      res.end(`data: ${JSON.stringify(opening)}\n\ndata: {"id":"chatcmpl-cut","choi\n\ndata: [DONE]\n\n`);
      return;
    }
    if ('drop' in reply) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const opening = this.chunk(body.model, { role: 'assistant', content: reply.text ?? '' }, null);
      res.write(`data: ${JSON.stringify(opening)}\n\n`, () => res.socket?.destroy());
      return;
    }
    if ('hang' in reply) {
      if (reply.hang === 'mid-stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          `data: ${JSON.stringify(this.chunk(body.model, { role: 'assistant', content: reply.text ?? '' }, null))}\n\n`,
        );
      }
      return; // the socket stays open until the client gives up or close() destroys it
    }
    const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${++this.sequence}_${i}`,
      name: c.name,
      arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
    }));
    const finish = toolCalls.length ? 'tool_calls' : 'stop';
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${this.sequence}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: reply.text ?? null,
                ...(toolCalls.length
                  ? {
                      tool_calls: toolCalls.map((c) => ({
                        id: c.id,
                        type: 'function',
                        function: { name: c.name, arguments: c.arguments },
                      })),
                    }
                  : {}),
              },
              finish_reason: finish,
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
      return;
    }
    const size = Math.max(1, reply.chunkSize ?? 4);
    const split = (text: string): string[] => {
      const parts: string[] = [];
      for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
      return parts;
    };
    const deltas: Record<string, unknown>[] = [{ role: 'assistant', content: '' }];
    const reasoning = reply.reasoning;
    let text = reply.text ?? '';
    if (reasoning?.as === 'think-tags') text = `<think>\n${reasoning.text}\n</think>\n\n${text}`;
    else if (reasoning) for (const part of split(reasoning.text)) deltas.push({ content: null, [reasoning.as]: part });
    for (const part of split(text)) deltas.push({ content: part });
    // Each call opens with index, id, type and name (empty arguments); then the calls' argument
    // pieces interleave, as the API streams parallel calls.
    toolCalls.forEach((c, index) =>
      deltas.push({
        tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }],
      }),
    );
    const pieces = toolCalls.map((c) => split(c.arguments));
    for (let step = 0; pieces.some((p) => step < p.length); step++) {
      pieces.forEach((p, index) => {
        if (step < p.length) deltas.push({ tool_calls: [{ index, function: { arguments: p[step] } }] });
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // deltas[0] is the empty opening one: the first token is deltas[1].
    const gapMs = reply.streamMs && deltas.length > 2 ? reply.streamMs / (deltas.length - 2) : 0;
    for (const [i, delta] of deltas.entries()) {
      if (gapMs > 0 && i >= 2) await new Promise((resolve) => setTimeout(resolve, gapMs));
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(this.chunk(body.model, delta, null))}\n\n`);
    }
    res.write(`data: ${JSON.stringify(this.chunk(body.model, {}, finish))}\n\n`);
    res.end('data: [DONE]\n\n');
  }

  private chunk(model: string, delta: Record<string, unknown>, finish: string | null): Record<string, unknown> {
    return {
      id: `chatcmpl-${this.sequence}`,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model,
      system_fingerprint: 'fp_fake',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
  }

  private error(
    res: http.ServerResponse,
    status: number,
    message: string,
    retry: { retryAfterMs?: number; retryAfterS?: number } = {},
    code: string | null = status === 429 ? 'rate_limit_exceeded' : null,
    param: string | null = null,
  ): void {
    res.writeHead(status, {
      'content-type': 'application/json',
      ...(retry.retryAfterMs !== undefined && { 'retry-after-ms': String(retry.retryAfterMs) }),
      ...(retry.retryAfterS !== undefined && { 'retry-after': String(retry.retryAfterS) }),
    });
    res.end(
      JSON.stringify({
        error: {
          message,
          type: status === 429 ? 'requests' : status >= 500 ? 'server_error' : 'invalid_request_error',
          param,
          code,
        },
      }),
    );
  }
}

/** The `llm` setting of a test app whose language model is this fake server. */
export function fakeLlmConfig(fake: { url: string }, timeoutMs = 2000) {
  return {
    apiKey: 'sk-test',
    baseUrl: fake.url,
    models: { base: 'm-base', enhanced: 'm-enhanced', turbo: 'm-turbo' },
    timeoutMs,
  };
}
