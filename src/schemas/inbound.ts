import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable, StringEnum, checked } from './common.js';
import { StoredToolItem, ToolItem, normalizeTools } from './agent.js';
import {
  BACKGROUND_TRACKS,
  DEFAULT_LANGUAGE,
  DEFAULT_MAX_DURATION,
  MaxDuration,
  DEFAULT_MODEL,
  DynamicDataItem,
  Language,
  Model,
  StoredDynamicDataItem,
  normalizeDynamicData,
} from './call.js';
import { DEFAULT_VOICE } from '../domain/voices.js';
import { normalizePhone } from '../domain/phone.js';

/**
 * Seed 2.4, every field optional (Update Inbound Details is a partial update). null resets a
 * setting to its default; the seed names it for pathway_id, transfer_phone_number and dynamic_data,
 * and it is accepted everywhere so that any setting can be undone.
 */
export const inboundFields = {
  prompt: Nullable(Type.String({ description: 'Instructions for inbound calls; required unless pathway_id is set' })),
  task: Nullable(
    Type.String({ description: "Send Call's name for prompt, taken as prompt; prompt wins when both are sent" }),
  ),
  persona_id: Nullable(
    Type.String({
      description:
        "A persona (POST /v1/personas) answers: its production version's prompts, call_config and tools " +
        "replace the number's own; null removes it",
    }),
  ),
  pathway_id: Nullable(
    Type.String({
      description:
        'Overrides prompt; setting it resets prompt, first_sentence, model, dynamic_data, tools and transfer_list. ' +
        'null or "" clears it',
    }),
  ),
  voice: Nullable(checked(Type.String({ description: 'A voice of GET /v1/voices; default mason' }), 'voice')),
  background_track: Nullable(
    StringEnum(BACKGROUND_TRACKS, { description: 'null (default) is quiet phone static; none is minimal noise' }),
  ),
  first_sentence: Nullable(Type.String()),
  wait_for_greeting: Nullable(Type.Boolean({ description: 'Default false' })),
  interruption_threshold: Nullable(Type.Number({ minimum: 0, description: 'Default 100; recommended 50-200' })),
  model: Nullable(Model),
  tools: Nullable(Type.Array(ToolItem, { description: 'Inline custom tools or tool ids of the account' })),
  language: Nullable(Language),
  timezone: Nullable(checked(Type.String({ description: 'IANA time zone; default America/Los_Angeles' }), 'timezone')),
  transfer_phone_number: Nullable(checked(Type.String({ description: 'Stored in E.164; null removes it' }), 'phone')),
  transfer_list: Nullable(
    Type.Record(Type.String(), checked(Type.String(), 'phone'), {
      description: 'Label (e.g. default, sales) -> phone number; stored in E.164',
    }),
  ),
  dynamic_data: Type.Union([Type.Array(DynamicDataItem), DynamicDataItem, Type.Literal(''), Type.Null()], {
    description: 'An array of seed 2.2 items (as in Send Call) or a single item; null or "" clears it',
  }),
  keywords: Nullable(Type.Array(checked(Type.String(), 'keyword'), { description: '"word" or "word:<boost>"' })),
  max_duration: Nullable(MaxDuration()),
  webhook: Nullable(checked(Type.String({ description: 'End-of-call webhook URL' }), 'http_url')),
  analysis_schema: Nullable(FreeObject({ description: 'Output field name -> type hint' })),
  metadata: Nullable(FreeObject({ description: 'Returned with every call to this number' })),
  summary_prompt: Nullable(Type.String()),
  analysis_prompt: Nullable(Type.String()),
  record: Nullable(Type.Boolean({ description: 'Default false' })),
  label: Nullable(Type.String({ maxLength: 200, description: 'A name for the number in lists; null or "" clears it' })),
};

/** Body of Update Inbound Details (seed 2.4, 4.4). */
export const InboundUpdate = Type.Partial(Type.Object(inboundFields), { additionalProperties: true, 'x-update': true });
export type InboundUpdate = Static<typeof InboundUpdate>;

/** The stored configuration of a number: every seed 2.4 setting, defaults filled, null where unset. */
/** A number's own settings under its persona: a pathway of its own instead of the persona's. */
export const PersonaNumberSettings = Type.Object(
  {
    pathway_id: Type.Optional(Nullable(Type.String())),
    pathway_version: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    start_node_id: Type.Optional(Nullable(Type.String())),
  },
  { additionalProperties: true },
);
export type PersonaNumberSettings = Static<typeof PersonaNumberSettings>;

export const InboundConfig = Type.Object({
  prompt: Nullable(Type.String()),
  persona_id: Nullable(Type.String()),
  persona_settings: Nullable(PersonaNumberSettings),
  pathway_id: Nullable(Type.String()),
  voice: Type.String(),
  background_track: Nullable(Type.String()),
  first_sentence: Nullable(Type.String()),
  wait_for_greeting: Type.Boolean(),
  interruption_threshold: Type.Number(),
  model: Type.String(),
  tools: Nullable(Type.Array(StoredToolItem)),
  language: Type.String(),
  timezone: Type.String(),
  transfer_phone_number: Nullable(Type.String()),
  transfer_list: Nullable(Type.Record(Type.String(), Type.String())),
  dynamic_data: Nullable(Type.Array(StoredDynamicDataItem)),
  keywords: Type.Array(Type.String()),
  max_duration: Type.Number(),
  webhook: Nullable(Type.String()),
  analysis_schema: Nullable(FreeObject()),
  metadata: Nullable(FreeObject()),
  summary_prompt: Nullable(Type.String()),
  analysis_prompt: Nullable(Type.String()),
  record: Type.Boolean(),
  label: Nullable(Type.String()),
});
export type InboundConfig = Static<typeof InboundConfig>;
export type InboundKey = keyof InboundConfig;

export const DEFAULT_INBOUND_CONFIG: InboundConfig = {
  prompt: null,
  persona_id: null,
  persona_settings: null,
  pathway_id: null,
  voice: DEFAULT_VOICE,
  background_track: null,
  first_sentence: null,
  wait_for_greeting: false,
  interruption_threshold: 100,
  model: DEFAULT_MODEL,
  tools: null,
  language: DEFAULT_LANGUAGE,
  timezone: 'America/Los_Angeles',
  transfer_phone_number: null,
  transfer_list: null,
  dynamic_data: null,
  keywords: [],
  max_duration: DEFAULT_MAX_DURATION,
  webhook: null,
  analysis_schema: null,
  metadata: null,
  summary_prompt: null,
  analysis_prompt: null,
  record: false,
  label: null,
};

/** The settings an update sets (a persona's per-number settings have their own endpoint). */
const INBOUND_KEYS = (Object.keys(DEFAULT_INBOUND_CONFIG) as InboundKey[]).filter(
  (k): k is Exclude<InboundKey, 'persona_settings'> => k !== 'persona_settings',
);

/** What a pathway replaces (seed 2.4): setting pathway_id puts these back to null or their default. */
export const PATHWAY_RESETS = [
  'prompt',
  'first_sentence',
  'model',
  'dynamic_data',
  'tools',
  'transfer_list',
] as const satisfies readonly InboundKey[];

/** A number and its configuration, as GET /v1/inbound and /v1/inbound/{phone_number} return it. */
export const InboundNumber = Type.Object({
  phone_number: Type.String({ description: 'E.164' }),
  created_at: Type.String(),
  updated_at: Type.String(),
  carrier: Type.String({ description: 'sandbox, or the provider of the encrypted_key the number belongs to' }),
  ...InboundConfig.properties,
});
export type InboundNumber = Static<typeof InboundNumber>;

/** Body of POST /v1/inbound/purchase: where the number should be, plus any initial 2.4 setting. */
export const InboundPurchase = Type.Object(
  {
    area_code: Type.Optional(
      Type.String({
        pattern: '^[2-9][0-9]{2}$',
        'x-message': 'must be 3 digits, a North American area code such as 415',
      }),
    ),
    country_code: Type.Optional(StringEnum(['US', 'CA'] as const, { description: 'Default US' })),
    phone_number: Type.Optional(
      checked(Type.String({ description: 'A specific number wanted, instead of any free one' }), 'phone'),
    ),
    ...Type.Partial(Type.Object(inboundFields)).properties,
  },
  { additionalProperties: true },
);
export type InboundPurchase = Static<typeof InboundPurchase>;

/** The 2.4 settings of a validated body, keyed by field, ignoring every other field. */
function settingsOf(input: InboundUpdate): Partial<Record<InboundKey, unknown>> {
  const out: Partial<Record<InboundKey, unknown>> = {};
  for (const key of INBOUND_KEYS) if (input[key] !== undefined) out[key] = input[key];
  if (out.prompt === undefined && input.task !== undefined) out.prompt = input.task;
  return out;
}

function normalizeSetting<K extends InboundKey>(key: K, value: unknown): InboundConfig[K] {
  if (value === null) return DEFAULT_INBOUND_CONFIG[key];
  let out: unknown = value;
  switch (key) {
    case 'prompt':
      out = typeof value === 'string' && value.trim() !== '' ? value : null;
      break;
    case 'label':
      out = typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
      break;
    case 'pathway_id':
    case 'persona_id':
      out = typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
      break;
    case 'dynamic_data': {
      const items = value === '' ? [] : Array.isArray(value) ? value : [value];
      out = items.length > 0 ? normalizeDynamicData(items as DynamicDataItem[]) : null;
      break;
    }
    case 'tools':
      out = normalizeTools(value as ToolItem[]);
      break;
    case 'transfer_phone_number':
      out = e164(value);
      break;
    case 'transfer_list': {
      const entries = Object.entries(value as Record<string, string>).map(([label, phone]) => [label, e164(phone)]);
      out = entries.length > 0 ? Object.fromEntries(entries) : null;
      break;
    }
  }
  return out as InboundConfig[K];
}

/** Schema validation has already accepted the number; this only changes its form. */
function e164(value: unknown): string {
  const result = normalizePhone(value);
  return result.ok ? result.e164 : String(value);
}

/** A number's configuration alone, without its number, carrier and timestamps. */
export function configOf(number: InboundNumber): InboundConfig {
  const { phone_number: _p, created_at: _c, updated_at: _u, carrier: _k, ...config } = number;
  return config;
}

export interface InboundChange {
  config: InboundConfig;
  /** The settings the request changed, as now applied (including the pathway's resets). */
  updates: Partial<InboundConfig>;
}

/**
 * Applies a validated update on `current`: only fields present change, null resets to the default,
 * and a non-empty pathway_id resets the settings a pathway replaces. Fields sent in the same request
 * as the pathway_id are kept: the caller asked for them explicitly.
 */
export function applyInboundUpdate(current: InboundConfig, input: InboundUpdate): InboundChange {
  const sent = settingsOf(input);
  const updates: Partial<Record<InboundKey, unknown>> = {};
  for (const [key, value] of Object.entries(sent) as [InboundKey, unknown][]) {
    updates[key] = normalizeSetting(key, value);
  }
  if (typeof updates.pathway_id === 'string') {
    for (const key of PATHWAY_RESETS) if (!(key in sent)) updates[key] = DEFAULT_INBOUND_CONFIG[key];
  }
  // Another persona (or none): the number's settings under the old one go with it.
  if ('persona_id' in sent && updates.persona_id !== current.persona_id) updates.persona_settings = null;
  const typed = updates as Partial<InboundConfig>;
  return { config: { ...current, ...typed }, updates: typed };
}

/** The cross-field rule of seed 2.4: a number needs instructions: a prompt, a pathway or a persona. */
export function inboundConfigProblems(config: InboundConfig): string[] {
  return config.prompt || config.pathway_id || config.persona_id ? [] : ['prompt is required'];
}
