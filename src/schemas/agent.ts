import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable, checked } from './common.js';
import { CustomTool, normalizeTool } from './tool.js';
import {
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

/** An item of `tools`: an inline custom tool (2.5) or the id of a tool created with POST /v1/tools. */
export const ToolItem = Type.Union([CustomTool, Type.String({ minLength: 1, description: 'A tool id (TL-...)' })]);
export type ToolItem = Static<typeof ToolItem>;
export const StoredToolItem = Type.Union([FreeObject(), Type.String()]);
export type StoredToolItem = Static<typeof StoredToolItem>;

export function normalizeTools(items: ToolItem[]): StoredToolItem[] {
  return items.map((item) => (typeof item === 'string' ? item.trim() : normalizeTool(item)));
}

/** The tool ids among `tools` with their positions, for the existence check against the account. */
export function toolIdsOf(tools: unknown): { index: number; id: string }[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((item: unknown, index) =>
    typeof item === 'string' && item.trim() !== '' ? [{ index, id: item.trim() }] : [],
  );
}

const agentFields = {
  prompt: Type.String({ minLength: 1, description: 'The agent instructions; recommended under 2,000 characters' }),
  voice: checked(Type.String({ description: 'Voice name or id (GET /v1/voices); default mason' }), 'voice'),
  webhook: Nullable(checked(Type.String({ description: 'End-of-call webhook URL' }), 'http_url')),
  dynamic_data: Nullable(Type.Array(DynamicDataItem)),
  interruption_threshold: Nullable(Type.Number({ minimum: 0, description: 'Recommended 50-200' })),
  first_sentence: Nullable(Type.String()),
  model: Model,
  voice_settings: Nullable(FreeObject({ description: 'Provider-specific voice settings, kept as given' })),
  temperature: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
  max_duration: MaxDuration(),
  language: Language,
  tools: Nullable(Type.Array(ToolItem)),
};

/** Body of POST /v1/agents: only `prompt` is required; null clears an optional setting. */
export const AgentCreate = Type.Object(
  {
    ...agentFields,
    voice: Type.Optional(agentFields.voice),
    webhook: Type.Optional(agentFields.webhook),
    dynamic_data: Type.Optional(agentFields.dynamic_data),
    interruption_threshold: Type.Optional(agentFields.interruption_threshold),
    first_sentence: Type.Optional(agentFields.first_sentence),
    model: Type.Optional(agentFields.model),
    voice_settings: Type.Optional(agentFields.voice_settings),
    temperature: Type.Optional(agentFields.temperature),
    max_duration: Type.Optional(agentFields.max_duration),
    language: Type.Optional(agentFields.language),
    tools: Type.Optional(agentFields.tools),
  },
  { additionalProperties: true },
);
export type AgentCreate = Static<typeof AgentCreate>;

/** Body of POST /v1/agents/{id}: the same fields, all optional. */
export const AgentUpdate = Type.Partial(AgentCreate, { additionalProperties: true, 'x-update': true });
export type AgentUpdate = Static<typeof AgentUpdate>;

/** The agent settings of seed 2.6 (without agent_id), as stored. */
export const AgentConfig = Type.Object({
  webhook: Nullable(Type.String()),
  dynamic_data: Nullable(Type.Array(StoredDynamicDataItem)),
  interruption_threshold: Nullable(Type.Number()),
  first_sentence: Nullable(Type.String()),
  model: Type.String(),
  voice_settings: Nullable(FreeObject()),
  voice: Type.String(),
  prompt: Type.String(),
  temperature: Nullable(Type.Number()),
  max_duration: Type.Number(),
  language: Type.String(),
  tools: Nullable(Type.Array(StoredToolItem)),
});
export type AgentConfig = Static<typeof AgentConfig>;

/** An agent as every endpoint returns it: exactly the fields of seed 2.6 plus created_at. */
export const Agent = Type.Object({
  agent_id: Type.String(),
  ...AgentConfig.properties,
  created_at: Type.String(),
});
export type Agent = Static<typeof Agent>;

/** Applies `input` on `base` (fields absent from `input` are kept, null clears) and fills the defaults. */
export function mergeAgent(base: AgentConfig | undefined, input: AgentUpdate): AgentConfig {
  const { dynamic_data: dynamicData, tools } = input;
  return {
    prompt: input.prompt ?? base?.prompt ?? '',
    voice: input.voice ?? base?.voice ?? DEFAULT_VOICE,
    webhook: input.webhook !== undefined ? input.webhook : (base?.webhook ?? null),
    dynamic_data:
      dynamicData !== undefined
        ? dynamicData && dynamicData.length > 0
          ? normalizeDynamicData(dynamicData)
          : null
        : (base?.dynamic_data ?? null),
    interruption_threshold:
      input.interruption_threshold !== undefined
        ? input.interruption_threshold
        : (base?.interruption_threshold ?? null),
    first_sentence: input.first_sentence !== undefined ? input.first_sentence : (base?.first_sentence ?? null),
    model: input.model ?? base?.model ?? DEFAULT_MODEL,
    voice_settings: input.voice_settings !== undefined ? input.voice_settings : (base?.voice_settings ?? null),
    temperature: input.temperature !== undefined ? input.temperature : (base?.temperature ?? null),
    max_duration: input.max_duration ?? base?.max_duration ?? DEFAULT_MAX_DURATION,
    language: input.language ?? base?.language ?? DEFAULT_LANGUAGE,
    tools: tools !== undefined ? (tools ? normalizeTools(tools) : null) : (base?.tools ?? null),
  };
}
