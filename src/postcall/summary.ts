import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Call, CallStore, TranscriptRow } from '../store/calls.js';
import type { CallRequest } from '../schemas/call-request.js';
import { complete, LlmError, type ChatMessage, type LlmProvider } from '../providers/llm/types.js';
import { coerce, schemaForType, schemaFromHints, type JsonSchema } from './schema.js';

export interface PostCallLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface PostCallDeps {
  calls: CallStore;
  /** Absent without an LLM: summaries are extractive and labelled, analysis stays null. */
  llm?: { provider: LlmProvider; models: Record<CallRequest['model'], string> } | undefined;
  log?: PostCallLogger | undefined;
  /** The citation schemas a call names (citation_schema_ids); absent: none are read. */
  citationSchemas?: { get(accountId: string, id: string): Promise<{ schema: Record<string, unknown> } | undefined> };
}

/** How an offline summary starts, so no reader takes it for a model's work (CONTRACT.md section 7). */
export const OFFLINE_SUMMARY_LABEL = 'Offline summary (no language model configured):';

/** Thrown by analyze when the model's answer cannot be used. */
export class AnalysisError extends Error {
  override name = 'AnalysisError';
}

const ajv = new Ajv({ allErrors: true, strict: false, removeAdditional: true, coerceTypes: false });
addFormats.default(ajv, ['date', 'date-time', 'email']);

/** Transcript lines as spoken (agent actions such as transfers are facts, listed separately). */
function spoken(transcripts: TranscriptRow[]): TranscriptRow[] {
  return transcripts.filter((t) => t.user === 'user' || t.user === 'assistant');
}

function transcriptText(transcripts: TranscriptRow[]): string {
  return transcripts.map((t) => `${t.user}: ${t.text}`).join('\n');
}

function duration(row: Call): string {
  const seconds = row.corrected_duration ?? (row.call_length === null ? null : row.call_length * 60);
  return seconds === null ? 'unknown' : `${Math.round(seconds)} s`;
}

/** Who hung up, from the call's side: the person called, or the caller of an inbound call. */
function endedBy(row: Call): string {
  return row.call_ended_by === 'USER' ? (row.inbound ? 'the caller' : 'the person called') : 'the agent';
}

/** The call's kind and its other party: a web call's caller is a browser, with no number. */
function calledParty(row: Call): string {
  if (row.carrier === 'web') return 'Web call from the browser';
  return row.inbound ? `Inbound call from ${row.from_number ?? 'unknown'}` : `Outbound call to ${row.to_number}`;
}

/** What the record says about the call, given to the model and used by the offline summary. */
function facts(row: Call): string[] {
  const out = [
    `Direction: ${row.inbound ? 'inbound' : 'outbound'} (from ${row.from_number ?? 'unknown'} to ${row.to_number})`,
    `Duration: ${duration(row)}`,
  ];
  if (row.call_ended_by) out.push(`Ended by: ${endedBy(row)}`);
  if (row.answered_by) out.push(`Answered by: ${row.answered_by}`);
  if (row.transferred_to) out.push(`Transferred to: ${row.transferred_to}`);
  if (row.error_message) out.push(`Error: ${row.error_message}`);
  return out;
}

function clip(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * The summary without a model: extractive (the first lines of each side and the record's facts),
 * labelled so that nobody mistakes it for a model's summary.
 */
export function offlineSummary(row: Call, transcripts: TranscriptRow[]): string {
  const lines = spoken(transcripts);
  const firstAssistant = lines.find((t) => t.user === 'assistant');
  const firstUser = lines.find((t) => t.user === 'user');
  const parts = [OFFLINE_SUMMARY_LABEL];
  parts.push(`${calledParty(row)}, ${duration(row)}, ${lines.length} spoken line${lines.length === 1 ? '' : 's'}.`);
  if (firstAssistant) parts.push(`The agent opened: "${clip(firstAssistant.text)}"`);
  if (firstUser) parts.push(`The person said: "${clip(firstUser.text)}"`);
  if (row.answered_by) parts.push(`Answered by: ${row.answered_by}.`);
  if (row.transferred_to) parts.push(`Transferred to ${row.transferred_to}.`);
  if (row.call_ended_by) parts.push(`Ended by ${endedBy(row)}.`);
  if (row.error_message) parts.push(`Error: ${row.error_message}.`);
  return parts.join(' ');
}

/** The first JSON object in a reply: models without a JSON mode wrap it in prose or code fences. */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  const candidates = [text.trim()];
  const fenced = /```(?:json)?\s*([^]*?)```/i.exec(text);
  if (fenced?.[1]) candidates.push(fenced[1].trim());
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start >= 0 && end > start) candidates.push(text.slice(start, end + 1));
  for (const candidate of candidates) {
    try {
      const value: unknown = JSON.parse(candidate);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`).join('; ');
}

/**
 * Post-call work (seed 2.1 summary_prompt, analysis_prompt, analysis_schema; 2.3 summary,
 * analysis): runs in the `postcall` job (src/postcall/after-call.ts) once the call's final state
 * is written, before its webhook is built, so that the webhook body carries both.
 */
export class PostCallService {
  /** Aborts model requests under way at shutdown: a summary is not worth holding the process. */
  private readonly shutdown = new AbortController();
  /** Set once the endpoint refused response_format: later requests parse JSON from text instead. */
  private jsonModeRefused = false;

  constructor(private readonly d: PostCallDeps) {}

  get hasModel(): boolean {
    return this.d.llm !== undefined;
  }

  close(): void {
    this.shutdown.abort(new Error('shutdown'));
  }

  /** The post-call step. Never throws: the call is over and its webhook must still go out. */
  async callEnded(callId: string): Promise<void> {
    try {
      const row = await this.d.calls.byId(callId);
      // Only calls that connected have a conversation to summarise; a job run again after a
      // crash does not summarise twice.
      if (!row || row.started_at === null || row.summary !== null || row.analysis !== null) return;
      const transcripts = await this.d.calls.transcripts(callId);
      const request = row.request;
      let summary: string | null;
      let analysis: Record<string, unknown> | null = null;
      if (!this.d.llm) {
        summary = offlineSummary(row, transcripts);
      } else {
        summary = await this.summarize(row, transcripts, request).catch((error: unknown) => {
          this.d.log?.warn({ err: error, call_id: callId }, 'post-call summary failed; summary left empty');
          return null;
        });
        const hints = await this.fieldsOf(row);
        if (Object.keys(hints).length > 0) {
          analysis = await this.analyzeSchema(row, transcripts, request, hints).catch((error: unknown) => {
            this.d.log?.warn({ err: error, call_id: callId }, 'post-call analysis failed; analysis left null');
            return null;
          });
        }
      }
      await this.d.calls.setPostCall(callId, {
        summary,
        analysis,
      });
    } catch (error) {
      this.d.log?.error({ err: error, call_id: callId }, 'post-call work failed');
    }
  }

  /**
   * The fields the call is analysed for: those of the citation schemas it names (as they are now;
   * a schema deleted since is skipped), then its own analysis_schema, whose hint wins for a name
   * both have.
   */
  private async fieldsOf(row: Call): Promise<Record<string, unknown>> {
    const fields: Record<string, unknown> = {};
    for (const id of row.request.citation_schema_ids ?? []) {
      Object.assign(fields, (await this.d.citationSchemas?.get(row.account_id, id))?.schema);
    }
    return Object.assign(fields, row.analysis_schema);
  }

  private model(request: Partial<CallRequest>): string {
    const models = this.d.llm!.models;
    return models[request.model ?? 'enhanced'] ?? models.enhanced;
  }

  private async ask(messages: ChatMessage[], model: string, json: boolean): Promise<string> {
    const provider = this.d.llm!.provider;
    const base = { model, messages, temperature: 0, signal: this.shutdown.signal };
    if (json && !this.jsonModeRefused) {
      try {
        return (await complete(provider, { ...base, json: true })).text;
      } catch (error) {
        // Some compatible servers reject response_format with a 400/422: ask again without it
        // and parse the JSON from the text (the prompt asks for JSON either way).
        if (!(error instanceof LlmError) || (error.status !== 400 && error.status !== 422)) throw error;
        this.jsonModeRefused = true;
        this.d.log?.info({ err: error }, 'the language model refused JSON mode; parsing JSON from text');
      }
    }
    return (await complete(provider, base)).text;
  }

  private transcriptMessage(row: Call, transcripts: TranscriptRow[]): ChatMessage {
    const text = spoken(transcripts).length ? transcriptText(transcripts) : '(nothing was said)';
    return { role: 'user', content: `Call facts:\n${facts(row).join('\n')}\n\nTranscript:\n${text}` };
  }

  private async summarize(
    row: Call,
    transcripts: TranscriptRow[],
    request: Partial<CallRequest>,
  ): Promise<string | null> {
    const system = [
      'You summarize phone calls made by an AI voice agent for the business that placed them.',
      'Write a concise plain-text summary (two to four sentences): who was reached, what was said and agreed, and how the call ended.',
      'Do not invent details that are not in the transcript.',
    ];
    if (request.summary_prompt) system.push(`Instructions from the business: ${request.summary_prompt}`);
    const text = await this.ask(
      [{ role: 'system', content: system.join('\n') }, this.transcriptMessage(row, transcripts)],
      this.model(request),
      false,
    );
    return text.trim() || null;
  }

  /** Fills analysis_schema from a call's transcript; null when the model's answers never fit. */
  private analyzeSchema(
    row: Call,
    transcripts: TranscriptRow[],
    request: Partial<CallRequest>,
    hints: Record<string, unknown>,
  ): Promise<Record<string, unknown> | null> {
    return this.fillFields(
      {
        subject: 'a phone call made by an AI voice agent',
        conversation: this.transcriptMessage(row, transcripts),
        model: this.model(request),
        unit: 'call',
        guidance: request.analysis_prompt ?? undefined,
        log: { call_id: row.id },
      },
      hints,
    );
  }

  /**
   * Fills fields (name to type hint) from a conversation: asks for JSON, validates it against the
   * schema derived from the hints, and asks once more (with the validation errors) when it does
   * not fit. Null if it still fails.
   */
  private async fillFields(
    about: {
      subject: string;
      /** What the conversation is called in the instructions: "call" or "conversation". */
      unit: string;
      conversation: ChatMessage;
      model: string;
      guidance?: string | undefined;
      log: Record<string, string>;
    },
    hints: Record<string, unknown>,
  ): Promise<Record<string, unknown> | null> {
    const schema = schemaFromHints(hints);
    const validate: ValidateFunction = ajv.compile(schema);
    const system = [
      `You extract structured data from ${about.subject}.`,
      'Reply with one JSON object only, no prose, that matches this JSON Schema:',
      JSON.stringify(schema),
      `Use null for a field the ${about.unit} does not tell.`,
    ];
    if (about.guidance) system.push(`Guidance from the business: ${about.guidance}`);
    const messages: ChatMessage[] = [{ role: 'system', content: system.join('\n') }, about.conversation];
    let reason = '';
    for (let attempt = 1; attempt <= 2; attempt++) {
      const text = await this.ask(messages, about.model, true);
      const value = parseJsonObject(text);
      if (value && validate(value)) return value;
      reason = value ? `does not match the schema: ${describeErrors(validate.errors)}` : 'is not a JSON object';
      messages.push(
        { role: 'assistant', content: text },
        { role: 'user', content: `That reply ${reason}. Reply again with only the corrected JSON object.` },
      );
    }
    this.d.log?.warn(
      { ...about.log, reason },
      `post-call analysis discarded: the model's answer ${reason} (after one retry); analysis is null`,
    );
    return null;
  }

  /**
   * POST /v1/sms/analyze: fills a schema of fields from an SMS conversation's messages, as
   * extract() does from a call. Null when the model's answers never fit; throws LlmError or
   * AnalysisError when no model answers.
   */
  async extractFromTexts(
    conversationId: string,
    messages: readonly { sender: 'USER' | 'AGENT'; message: string }[],
    hints: Record<string, unknown>,
  ): Promise<Record<string, unknown> | null> {
    if (!this.d.llm) throw new AnalysisError('no language model configured');
    const lines = messages.map((m) => `${m.sender}: ${m.message}`).join('\n') || '(no messages)';
    return this.fillFields(
      {
        subject: 'an SMS conversation between a person (USER) and an AI agent (AGENT)',
        unit: 'conversation',
        conversation: { role: 'user', content: `Messages, oldest first:\n${lines}` },
        model: this.model({}),
        log: { conversation_id: conversationId },
      },
      hints,
    );
  }

  /**
   * POST /v1/calls/analyze: fills a schema of fields (as analysis_schema: field name to type hint)
   * from an ended call. Null when the model's answers never fit the schema; throws LlmError or
   * AnalysisError when no model answers.
   */
  async extract(row: Call, hints: Record<string, unknown>): Promise<Record<string, unknown> | null> {
    if (!this.d.llm) throw new AnalysisError('no language model configured');
    return this.analyzeSchema(row, await this.d.calls.transcripts(row.id), row.request, hints);
  }

  /**
   * POST /v1/calls/{id}/analyze: answers the questions about an ended call, in order, each coerced
   * to the type its question asked for. Throws LlmError or AnalysisError when no answer is usable.
   */
  async analyze(row: Call, goal: string, questions: string[][]): Promise<unknown[]> {
    if (!this.d.llm) throw new AnalysisError('no language model configured');
    const transcripts = await this.d.calls.transcripts(row.id);
    const request = row.request;
    const schemas: JsonSchema[] = questions.map((q) => schemaForType(q[1]));
    const keys = questions.map((_q, i) => `answer_${i + 1}`);
    const list = questions
      .map((q, i) => {
        const hint = schemaForType(q[1]);
        const kind = Array.isArray(hint.type) ? hint.type[0] : hint.type;
        const described = typeof hint.description === 'string' ? ` (${hint.description})` : '';
        return `${keys[i]}: ${q[0]} — answer as ${String(kind)}${described}`;
      })
      .join('\n');
    const system = [
      'You answer questions about a phone call made by an AI voice agent, from its transcript.',
      `Goal of the analysis: ${goal}`,
      `Reply with one JSON object only, no prose, with these keys:\n${list}`,
      'Use null when the call does not tell.',
    ];
    const messages: ChatMessage[] = [
      { role: 'system', content: system.join('\n') },
      this.transcriptMessage(row, transcripts),
    ];
    for (let attempt = 1; attempt <= 2; attempt++) {
      const text = await this.ask(messages, this.model(request), true);
      const value = parseJsonObject(text);
      if (value) return keys.map((key, i) => coerce(value[key], schemas[i]!));
      messages.push(
        { role: 'assistant', content: text },
        { role: 'user', content: 'That reply is not a JSON object. Reply again with only the JSON object.' },
      );
    }
    throw new AnalysisError('the language model did not answer with a JSON object');
  }
}
