import { normalizePhone } from '../domain/phone.js';
import { resolveVoice } from '../domain/voices.js';
import { parseStartTime } from '../domain/start-time.js';
import { isRecord } from '../domain/records.js';
import type { VoicemailAction } from '../domain/voicemail-rules.js';
import { normalizeTool, type CustomTool, type StoredTool } from './tool.js';
import { normalizeDynamicData, type CallSettings, type StoredDynamicDataItem } from './call.js';

export type Model = 'base' | 'enhanced' | 'turbo';

/** A tool as a call uses it: the definition, and its id when it came from POST /v1/tools. */
export type CallTool = ReturnType<typeof normalizeTool> & { tool_id?: string };

/** A pathway a persona hands the call to once the caller's words are about what it is for. */
export interface PersonaRoute {
  name: string;
  prompt: string;
  pathway_id: string;
  /** null: the pathway's production version. */
  pathway_version: number | null;
  start_node_id: string | null;
}

/**
 * The normalized parameters of a call: defaults filled, numbers in E.164, voice resolved, tool ids
 * replaced by their definitions. Stored with the call and shown as the record's request_data.
 */
export interface CallRequest {
  phone_number: string;
  task: string | null;
  pathway_id: string | null;
  pathway_version: number | null;
  start_node_id: string | null;
  model: Model;
  voice: string;
  reduce_latency: boolean;
  high_fidelity: boolean;
  background_track: string | null;
  first_sentence: string | null;
  wait_for_greeting: boolean;
  block_interruptions: boolean;
  interruption_threshold: number;
  temperature: number;
  keywords: string[];
  pronunciation_guide: { word: string; pronunciation: string; case_sensitive: boolean; spaced: boolean }[];
  transfer_phone_number: string | null;
  transfer_list: Record<string, string> | null;
  language: string;
  timezone: string;
  request_data: Record<string, unknown>;
  tools: CallTool[];
  /** The persona whose production version set the call's defaults; absent on older calls. */
  persona_id?: string | null;
  /** The persona's pathway conditions, with a pathway each (src/pathways/persona-router.ts). */
  persona_routes?: PersonaRoute[];
  /** Knowledge bases the agent looks things up in: ids given among `tools`; absent on older calls. */
  knowledge_bases?: string[];
  dynamic_data: StoredDynamicDataItem[];
  start_time: string | null;
  voicemail_message: string | null;
  voicemail_action: VoicemailAction;
  /**
   * The text sent when the call reaches a voicemail (the hosted `voicemail.sms`): `to` defaults
   * to the number called, `from` to the call's own number or else the account's first. Absent on
   * older calls.
   */
  voicemail_sms?: VoicemailSms | null;
  retry: { wait: number; voicemail_action: VoicemailAction; voicemail_message: string | null } | null;
  max_duration: number;
  record: boolean;
  from: string | null;
  webhook: string | null;
  webhook_events: string[];
  metadata: Record<string, unknown> | null;
  summary_prompt: string | null;
  analysis_prompt: string | null;
  analysis_schema: Record<string, unknown> | null;
  /**
   * Citation schemas of the account whose fields are filled after the call, with analysis_schema's
   * own (read when the call is analysed); absent on older calls.
   */
  citation_schema_ids?: string[];
  /** answered_by_enabled, or its legacy name amd. */
  answered_by_enabled: boolean;
  /** What the server did differently from what was asked (a voice it does not have); may be absent on old calls. */
  warnings?: string[];
}

export interface VoicemailSms {
  to: string | null;
  from: string | null;
  message: string;
}

/** The hosted `voicemail.sms` object; `{}` and null mean none. Problems go to `errors`. */
function voicemailSmsOf(value: unknown, errors: string[]): VoicemailSms | null {
  if (!isRecord(value) || Object.keys(value).length === 0) return null;
  const number = (field: 'to' | 'from'): string | null => {
    const raw = value[field];
    if (raw === undefined || raw === null || raw === '') return null;
    const r = normalizePhone(raw);
    if (!r.ok) errors.push(`voicemail.sms.${field} ${r.reason}`);
    return r.ok ? r.e164 : null;
  };
  const sms = { to: number('to'), from: number('from') };
  const message = value.message;
  if (typeof message !== 'string' || message.trim() === '') {
    errors.push('voicemail.sms.message is required: the text to send when the call reaches a voicemail');
    return null;
  }
  return { ...sms, message };
}

export const CALL_DEFAULTS = {
  model: 'enhanced',
  interruption_threshold: 100,
  temperature: 0.7,
  language: 'en-US',
  timezone: 'America/Los_Angeles',
  voicemail_action: 'hangup',
  max_duration: 30,
} as const;

/** The object items of a list that may not have passed validation (the result is then discarded). */
function records<T>(list: T[] | undefined): T[] {
  return Array.isArray(list) ? list.filter((item) => isRecord(item)) : [];
}

const boolLike = (v: unknown, fallback: boolean): boolean => (v === undefined ? fallback : v === true || v === 'true');

/** The routes a persona's settings carry (set by src/schemas/persona.ts), each with its pathway. */
function personaRoutesOf(value: unknown): PersonaRoute[] {
  return records(Array.isArray(value) ? (value as Record<string, unknown>[]) : []).flatMap((r) =>
    typeof r.pathway_id === 'string' && r.pathway_id.trim() !== ''
      ? [
          {
            name: typeof r.name === 'string' ? r.name : '',
            prompt: typeof r.prompt === 'string' ? r.prompt : '',
            pathway_id: r.pathway_id.trim(),
            pathway_version: typeof r.pathway_version === 'number' ? r.pathway_version : null,
            start_node_id: typeof r.start_node_id === 'string' && r.start_node_id !== '' ? r.start_node_id : null,
          },
        ]
      : [],
  );
}

/** What the ids of a call's `tools` name in the caller's account: custom tools and knowledge bases. */
export interface ResolvedTools {
  tools: StoredTool[];
  /** The ids that are knowledge bases. */
  knowledgeBases: string[];
}

/** Looks the ids of a call's `tools` up in the caller's account. */
export type ToolResolver = (ids: string[]) => Promise<ResolvedTools>;

/** A stored custom tool as a call runs it. */
export function callToolOf(stored: StoredTool): CallTool {
  const { tool_id, created_at: _c, updated_at: _u, ...definition } = stored;
  return { ...normalizeTool(definition as CustomTool), tool_id };
}

/** For settings that name no tools (a pathway chat, a text conversation): nothing to look up. */
export const NO_TOOLS: ToolResolver = async () => ({ tools: [], knowledgeBases: [] });

/** Where tool ids are looked up: the custom tools and the knowledge bases of an account. */
export interface ToolSources {
  tools: { getMany(accountId: string, ids: string[]): Promise<StoredTool[]> };
  knowledge: { existing(accountId: string, ids: readonly string[]): Promise<string[]> };
}

/** The ToolResolver of one account: every place a call's settings are checked uses it. */
export function toolResolver(sources: ToolSources, accountId: string): ToolResolver {
  return async (ids) => {
    const tools = await sources.tools.getMany(accountId, ids);
    const found = new Set(tools.map((t) => t.tool_id));
    const rest = ids.filter((id) => !found.has(id));
    return { tools, knowledgeBases: rest.length ? await sources.knowledge.existing(accountId, rest) : [] };
  };
}

/**
 * Checks what the schema cannot (task or pathway, tool ids, legacy voices) and builds the
 * normalized request. Problems are appended to `errors`; the result is undefined when any.
 * Call it only after the body passed schema validation or with errors already collected: it
 * reads fields defensively either way.
 */
export async function normalizeCallSettings(
  body: CallSettings & { phone_number?: unknown },
  resolveTools: ToolResolver,
  errors: string[],
  options: { requirePhone: boolean; requireTask: boolean },
): Promise<Omit<CallRequest, 'phone_number'> & { phone_number: string | null }> {
  let phone: string | null = null;
  if (body.phone_number === undefined || body.phone_number === null) {
    if (options.requirePhone) errors.push('phone_number is required');
  } else {
    const r = normalizePhone(body.phone_number);
    if (r.ok) phone = r.e164;
  }
  const pathwayId = typeof body.pathway_id === 'string' && body.pathway_id !== '' ? body.pathway_id : null;
  const task = typeof body.task === 'string' ? body.task : null;
  if (options.requireTask && !pathwayId && (task === null || task.trim() === '') && typeof body.task !== 'number') {
    if (body.task === undefined || body.task === null) errors.push('task is required (or give a pathway_id)');
    else if (typeof body.task === 'string') errors.push('task must not be empty');
  }

  const voice = resolveVoice(body);
  // voice and voice_preset_id are checked by the schema; the legacy fields only here.
  if (!voice.ok && voice.field !== 'voice' && voice.field !== 'voice_preset_id')
    errors.push(`${voice.field} ${voice.reason}`);

  const tools: CallTool[] = [];
  const knowledgeBases: string[] = [];
  if (Array.isArray(body.tools)) {
    const ids = body.tools.filter((t): t is string => typeof t === 'string');
    const resolved = await resolveTools(ids);
    const found = new Map(resolved.tools.map((t) => [t.tool_id, t]));
    const knowledge = new Set(resolved.knowledgeBases);
    body.tools.forEach((item, i) => {
      if (typeof item === 'string') {
        if (knowledge.has(item)) {
          if (!knowledgeBases.includes(item)) knowledgeBases.push(item);
          return;
        }
        const stored = found.get(item);
        if (!stored) {
          errors.push(`tools[${i}] "${item}" is not a tool or knowledge base of this account`);
          return;
        }
        tools.push(callToolOf(stored));
      } else if (isRecord(item)) {
        tools.push(normalizeTool(item as CustomTool));
      }
    });
  }

  const transferList: Record<string, string> = {};
  if (isRecord(body.transfer_list)) {
    for (const [label, value] of Object.entries(body.transfer_list)) {
      const r = normalizePhone(value);
      if (r.ok) transferList[label] = r.e164;
    }
  }
  const transferPhone =
    body.transfer_phone_number === undefined ? undefined : normalizePhone(body.transfer_phone_number);
  const startTime = typeof body.start_time === 'string' ? parseStartTime(body.start_time) : undefined;
  const retry = isRecord(body.retry) ? body.retry : undefined;
  // The hosted API's `voicemail` object is the newer spelling of the two flat fields.
  const voicemail = isRecord(body.voicemail) ? body.voicemail : {};
  const voicemailMessage =
    body.voicemail_message ?? (typeof voicemail.message === 'string' ? voicemail.message : undefined);
  const objectAction = voicemail.action === 'leave_message_and_sms' ? 'leave_message' : voicemail.action;
  const voicemailAction = (body.voicemail_action ?? objectAction ?? CALL_DEFAULTS.voicemail_action) as VoicemailAction;

  return {
    phone_number: phone,
    task,
    pathway_id: pathwayId,
    pathway_version: typeof body.pathway_version === 'number' ? body.pathway_version : null,
    start_node_id: body.start_node_id ?? null,
    model: body.model ?? CALL_DEFAULTS.model,
    voice: voice.ok ? voice.value.voice : 'mason',
    reduce_latency: voice.ok ? voice.value.reduce_latency : false,
    high_fidelity: voice.ok ? voice.value.high_fidelity : false,
    background_track: body.background_track ?? null,
    first_sentence: body.first_sentence ?? null,
    wait_for_greeting: body.wait_for_greeting ?? false,
    block_interruptions: body.block_interruptions ?? false,
    interruption_threshold: body.interruption_threshold ?? CALL_DEFAULTS.interruption_threshold,
    temperature: body.temperature ?? CALL_DEFAULTS.temperature,
    keywords: body.keywords ?? [],
    pronunciation_guide: records(body.pronunciation_guide).map((p) => ({
      word: p.word,
      pronunciation: p.pronunciation,
      case_sensitive: boolLike(p.case_sensitive, false),
      spaced: boolLike(p.spaced, true),
    })),
    transfer_phone_number: transferPhone?.ok ? transferPhone.e164 : null,
    transfer_list: isRecord(body.transfer_list) ? transferList : null,
    language: body.language ?? CALL_DEFAULTS.language,
    timezone: body.timezone ?? CALL_DEFAULTS.timezone,
    request_data: body.request_data ?? {},
    tools,
    knowledge_bases: knowledgeBases,
    persona_id: body.persona_id ?? null,
    persona_routes: body.persona_id ? personaRoutesOf((body as { persona_routes?: unknown }).persona_routes) : [],
    dynamic_data: normalizeDynamicData(records(body.dynamic_data).filter((d) => Array.isArray(d.response_data))),
    start_time: startTime ? startTime.toISOString() : null,
    voicemail_message: voicemailMessage ?? null,
    voicemail_action: voicemailAction,
    voicemail_sms: voicemailSmsOf(voicemail.sms, errors),
    retry: retry
      ? {
          wait: typeof retry.wait === 'number' ? retry.wait : 0,
          voicemail_action: (retry.voicemail_action as VoicemailAction | undefined) ?? voicemailAction,
          voicemail_message: typeof retry.voicemail_message === 'string' ? retry.voicemail_message : null,
        }
      : null,
    max_duration: body.max_duration ?? CALL_DEFAULTS.max_duration,
    record: body.record ?? false,
    from: body.from ?? null,
    webhook: body.webhook ?? null,
    webhook_events: body.webhook_events ?? [],
    metadata: body.metadata ?? null,
    summary_prompt: body.summary_prompt ?? null,
    analysis_prompt: body.analysis_prompt ?? null,
    analysis_schema: body.analysis_schema ?? null,
    // Wrong types are the schema's errors (the request is refused); only strings are kept here.
    citation_schema_ids: [
      ...new Set(
        [...(Array.isArray(body.citation_schema_ids) ? body.citation_schema_ids : []), body.citation_schema_id].filter(
          (id): id is string => typeof id === 'string' && id !== '',
        ),
      ),
    ],
    answered_by_enabled: body.answered_by_enabled === true || body.amd === true,
    warnings: voice.ok && voice.warning ? [voice.warning] : [],
  };
}
