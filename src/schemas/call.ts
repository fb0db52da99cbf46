import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable, StringEnum, checked } from './common.js';
import { CustomTool } from './tool.js';
import { LANGUAGES } from '../domain/language.js';

/** The longest `retry.wait`: a retry after voicemail is placed within 30 days (a wait beyond dates is no date at all). */
export const MAX_RETRY_WAIT_S = 30 * 24 * 3600;

export { LANGUAGES } from '../domain/language.js';
export const Language = StringEnum(LANGUAGES, {
  description: 'Language of the conversation; default en-US. Matched case-insensitively, with legacy aliases (ENG)',
  'x-normalize': 'language',
});
export type Language = Static<typeof Language>;
export const DEFAULT_LANGUAGE: Language = 'en-US';

/** Seed 2.4: base follows scripts most closely, enhanced is the default, turbo has no tools/transfers. */
export const MODELS = ['base', 'enhanced', 'turbo'] as const;
export const Model = StringEnum(MODELS, { description: 'base, enhanced (default) or turbo' });
export type Model = Static<typeof Model>;
export const DEFAULT_MODEL: Model = 'enhanced';

export const DEFAULT_MAX_DURATION = 30;
/** max_duration as every place that takes one reads it: minutes, fractions allowed (2.5 is 2 min 30 s). */
export const MaxDuration = (description = 'Minutes (fractions allowed); default 30') =>
  Type.Number({ exclusiveMinimum: 0, maximum: 1440, description });

const DynamicMethod = Type.String({ enum: ['GET', 'POST', 'get', 'post'], 'x-message': 'must be GET or POST' });

/** One `response_data` rule of seed 2.2: where a value sits in the response and how the agent learns it. */
export const ResponseDataItem = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'Variable name, usable as {{name}}' }),
    data: Type.String({ description: 'JSON path into the response, e.g. $.temperature' }),
    context: Type.Optional(Type.String({ description: 'How the value enters the agent knowledge; may use {{name}}' })),
  },
  { additionalProperties: true },
);

/** Seed 2.2: an external request whose results enter the call (Send Call, inbound numbers, agents). */
export const DynamicDataItem = Type.Object(
  {
    url: checked(
      Type.String({ description: 'External API URL; may begin with a prompt variable ({{crm_url}}/orders)' }),
      'templated_http_url',
    ),
    response_data: Type.Array(ResponseDataItem, { description: 'Parsing rules for the response' }),
    method: Type.Optional(DynamicMethod),
    cache: Type.Optional(
      Type.Boolean({ description: 'true (default): fetch once at call start; false: re-check during the call' }),
    ),
    headers: Type.Optional(FreeObject({ description: 'Headers sent with the request' })),
    body: Type.Optional(
      FreeObject({ description: 'Request body; {{from}}, {{to}}, {{short_from}}, {{short_to}}, {{call_id}}' }),
    ),
  },
  { additionalProperties: true },
);
export type DynamicDataItem = Static<typeof DynamicDataItem>;

/** A stored dynamic_data item: the seed's fields only, defaults filled. */
export const StoredDynamicDataItem = Type.Object({
  url: Type.String(),
  response_data: Type.Array(
    Type.Object({ name: Type.String(), data: Type.String(), context: Type.Optional(Type.String()) }),
  ),
  method: StringEnum(['GET', 'POST'] as const),
  cache: Type.Boolean(),
  headers: Type.Optional(FreeObject()),
  body: Type.Optional(FreeObject()),
});
export type StoredDynamicDataItem = Static<typeof StoredDynamicDataItem>;

/** Keeps only the fields of seed 2.2 and fills its defaults (method GET, cache true). */
export function normalizeDynamicData(items: DynamicDataItem[]): StoredDynamicDataItem[] {
  return items.map(({ url, response_data, method, cache, headers, body }) => ({
    url,
    response_data: response_data.map(({ name, data, context }) => ({
      name,
      data,
      ...(context !== undefined && { context }),
    })),
    method: (method ?? 'GET').toUpperCase() === 'POST' ? 'POST' : 'GET',
    cache: cache ?? true,
    ...(headers !== undefined && { headers }),
    ...(body !== undefined && { body }),
  }));
}

export const BACKGROUND_TRACKS = ['office', 'cafe', 'restaurant', 'none'] as const;
export const BackgroundTrack = Nullable(StringEnum(BACKGROUND_TRACKS), {
  description: 'null = quiet phone static (default); office, cafe, restaurant, none',
  'x-message': 'must be null or one of: office, cafe, restaurant, none',
});

export const VOICEMAIL_ACTIONS = ['hangup', 'leave_message', 'ignore'] as const;
export const VoicemailAction = StringEnum(VOICEMAIL_ACTIONS, { description: 'Default hangup' });

/**
 * The categories webhook_events may name: the seed's six, then those the hosted API added since
 * (`citations`, `evals`, `post_transfer_transcript`), accepted so that its clients' calls go out;
 * Openline streams no events of those three.
 */
export const WEBHOOK_EVENTS = [
  'queue',
  'call',
  'latency',
  'webhook',
  'tool',
  'dynamic_data',
  'citations',
  'evals',
  'post_transfer_transcript',
] as const;

/** A phone number in any form of the seed's Send Call rules (string, or digits as a JSON number). */
export const PhoneInput = checked(
  Type.Union([Type.String(), Type.Number()], { 'x-message': 'must be a string or a number' }),
  'phone',
);

export const PronunciationItem = Type.Object(
  {
    word: Type.String({ minLength: 1 }),
    pronunciation: Type.String(),
    case_sensitive: Type.Optional(checked(Type.Unknown(), 'boolean_like')),
    spaced: Type.Optional(checked(Type.Unknown(), 'boolean_like')),
  },
  { additionalProperties: true },
);

/**
 * Every setting of a call (seed 2.1) except the number: shared by Send Call, campaigns and
 * batches. All optional here; Send Call adds its required fields.
 */
export const callSettingsProperties = {
  task: Type.Optional(Type.String({ description: 'The agent instructions; required unless pathway_id or persona_id' })),
  persona_id: Type.Optional(
    Type.String({
      description:
        "A persona (POST /v1/personas): its production version's prompts, call_config, tools and knowledge bases " +
        'fill in what the call does not set',
    }),
  ),
  pathway_id: Type.Optional(Type.String()),
  pathway_version: Type.Optional(Type.Integer({ minimum: 0, description: 'Default: the production version' })),
  start_node_id: Type.Optional(Type.String()),
  model: Type.Optional(Model),
  voice: Type.Optional(checked(Type.String({ description: 'Default mason' }), 'voice')),
  voice_id: Type.Optional(Type.Union([Type.Integer(), Type.String()], { description: 'Legacy; overrides voice' })),
  voice_preset_id: Type.Optional(checked(Type.String({ description: 'Legacy; valid as voice' }), 'voice')),
  reduce_latency: Type.Optional(Type.Boolean({ description: 'Legacy' })),
  background_track: Type.Optional(BackgroundTrack),
  first_sentence: Type.Optional(Type.String()),
  wait_for_greeting: Type.Optional(Type.Boolean()),
  block_interruptions: Type.Optional(Type.Boolean()),
  interruption_threshold: Type.Optional(Type.Number({ minimum: 0, description: 'Default 100; 50-200 recommended' })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'Default 0.7' })),
  keywords: Type.Optional(Type.Array(checked(Type.String(), 'keyword'))),
  pronunciation_guide: Type.Optional(Type.Array(PronunciationItem)),
  transfer_phone_number: Type.Optional(PhoneInput),
  transfer_list: Type.Optional(Type.Record(Type.String(), PhoneInput)),
  language: Type.Optional(Language),
  timezone: Type.Optional(checked(Type.String({ description: 'Default America/Los_Angeles' }), 'timezone')),
  request_data: Type.Optional(FreeObject({ description: 'Prompt variables {{name}}' })),
  tools: Type.Optional(
    Type.Array(Type.Union([Type.String({ description: 'A tool id' }), CustomTool]), {
      description: 'Custom tool objects or tool ids',
    }),
  ),
  dynamic_data: Type.Optional(Type.Array(DynamicDataItem)),
  start_time: Type.Optional(
    checked(Type.String({ description: 'YYYY-MM-DD HH:MM:SS with optional -HH:MM' }), 'start_time'),
  ),
  voicemail_message: Type.Optional(Type.String()),
  voicemail_action: Type.Optional(VoicemailAction),
  voicemail: Type.Optional(
    Type.Object(
      {
        message: Type.Optional(Type.String({ description: 'As voicemail_message' })),
        action: Type.Optional(
          StringEnum([...VOICEMAIL_ACTIONS, 'leave_message_and_sms'] as const, {
            description: 'As voicemail_action; leave_message_and_sms is leave_message (the SMS is `sms`)',
          }),
        ),
        sensitive: Type.Optional(Type.Boolean({ description: 'Accepted; not used' })),
        sms: Type.Optional(
          FreeObject({
            description:
              'A text sent once the call reaches a voicemail: {message, to?, from?}; to defaults to the number ' +
              "called, from to the call's from if it is the account's number, else the account's first number",
          }),
        ),
      },
      {
        additionalProperties: true,
        description:
          "The hosted API's current form of voicemail_message and voicemail_action; the flat fields win when both are given",
      },
    ),
  ),
  retry: Type.Optional(
    Type.Object(
      {
        wait: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: MAX_RETRY_WAIT_S,
            description: 'Seconds before the retry, at most 30 days',
          }),
        ),
        voicemail_action: Type.Optional(VoicemailAction),
        voicemail_message: Type.Optional(Type.String()),
      },
      { additionalProperties: true },
    ),
  ),
  max_duration: Type.Optional(MaxDuration()),
  record: Type.Optional(Type.Boolean()),
  from: Type.Optional(checked(Type.String({ description: 'E.164 number to call from' }), 'from_number')),
  webhook: Type.Optional(checked(Type.String(), 'http_url')),
  webhook_events: Type.Optional(Type.Array(StringEnum(WEBHOOK_EVENTS))),
  metadata: Type.Optional(FreeObject()),
  summary_prompt: Type.Optional(Type.String()),
  analysis_prompt: Type.Optional(Type.String()),
  analysis_schema: Type.Optional(FreeObject()),
  citation_schema_ids: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      maxItems: 20,
      description:
        'Citation schemas (/v1/citation_schemas) whose fields are filled after the call into `analysis`, with analysis_schema',
    }),
  ),
  citation_schema_id: Type.Optional(
    Type.String({ minLength: 1, description: 'One citation schema: the same as a one-item citation_schema_ids' }),
  ),
  answered_by_enabled: Type.Optional(Type.Boolean()),
  amd: Type.Optional(Type.Boolean({ description: 'Legacy name of answered_by_enabled' })),
};

export const CallSettings = Type.Object(callSettingsProperties, { additionalProperties: true });
export type CallSettings = Static<typeof CallSettings>;

/** Seed 2.1: the body of Send Call. */
export const SendCallBody = Type.Object(
  { phone_number: PhoneInput, ...callSettingsProperties },
  { additionalProperties: true },
);
export type SendCallBody = Static<typeof SendCallBody>;
