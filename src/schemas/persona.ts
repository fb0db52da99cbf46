import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable, StringEnum, checked } from './common.js';
import { BACKGROUND_TRACKS, Language, MaxDuration, Model, type CallSettings } from './call.js';
import { ToolItem } from './agent.js';
import type { PersonaRoute } from './call-request.js';

/** How a persona's calls sound and run: the Send Call settings it sets. */
export const PersonaCallConfig = Type.Object(
  {
    voice: Type.Optional(Nullable(checked(Type.String({ description: 'A voice of GET /v1/voices' }), 'voice'))),
    record: Type.Optional(Nullable(Type.Boolean())),
    language: Type.Optional(Nullable(Language)),
    background: Type.Optional(Nullable(StringEnum(BACKGROUND_TRACKS, { description: 'The background track' }))),
    max_duration: Type.Optional(Nullable(MaxDuration('Minutes (fractions allowed)'))),
    wait_for_greeting: Type.Optional(Nullable(Type.Boolean())),
    interruption_threshold: Type.Optional(Nullable(Type.Number({ minimum: 0 }))),
    model: Type.Optional(Nullable(Model)),
    pathway_id: Type.Optional(
      Nullable(Type.String({ description: 'A pathway the calls follow (its production version)' })),
    ),
  },
  { additionalProperties: true },
);
export type PersonaCallConfig = Static<typeof PersonaCallConfig>;

/** A pathway the persona hands the call to when the conversation is about what `prompt` says. */
export const PathwayCondition = Type.Object(
  {
    name: Type.Optional(Type.String()),
    prompt: Type.Optional(Type.String({ description: 'When to hand over, e.g. "The caller asks about a bill"' })),
    pathway_id: Type.Optional(Type.String()),
    pathway_version: Type.Optional(Nullable(Type.Union([Type.String(), Type.Integer()]))),
    start_node_id: Type.Optional(Nullable(Type.String())),
  },
  { additionalProperties: true },
);
export type PathwayCondition = Static<typeof PathwayCondition>;

/** What a version holds: the persona's behaviour. Changes go to the draft; promote makes them live. */
const versionFields = {
  orchestration_prompt: Type.Optional(Nullable(Type.String({ description: 'How to run the call' }))),
  personality_prompt: Type.Optional(Nullable(Type.String({ description: 'Who the agent is and how it talks' }))),
  call_config: Type.Optional(Nullable(PersonaCallConfig)),
  default_tools: Type.Optional(
    Nullable(Type.Array(ToolItem, { maxItems: 100, description: 'Custom tools or tool ids' })),
  ),
  pathway_conditions: Type.Optional(Nullable(Type.Array(PathwayCondition, { maxItems: 50 }))),
  kb_ids: Type.Optional(
    Nullable(Type.Array(Type.String({ minLength: 1 }), { maxItems: 50, description: 'Knowledge base ids' })),
  ),
};

/**
 * The flat names the hosted API's CLI sends a persona's behaviour under: `prompt` is the
 * personality_prompt, the others are call_config's (laid over the call_config the body gives).
 */
const flatFields = {
  prompt: Type.Optional(Nullable(Type.String({ description: 'The same as personality_prompt' }))),
  voice: PersonaCallConfig.properties.voice,
  model: PersonaCallConfig.properties.model,
  pathway_id: PersonaCallConfig.properties.pathway_id,
};
export const FLAT_CONFIG_KEYS = ['voice', 'model', 'pathway_id'] as const;

/** Who the persona is: changed in place, not versioned. */
const identityFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  role: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  tags: Type.Optional(Nullable(Type.Array(Type.Unknown(), { maxItems: 50 }))),
  image_url: Type.Optional(Nullable(checked(Type.String(), 'http_url'))),
};

export const PersonaCreate = Type.Object(
  { ...identityFields, ...versionFields, ...flatFields },
  { additionalProperties: true },
);
export type PersonaCreate = Static<typeof PersonaCreate>;

export const PersonaUpdate = Type.Partial(PersonaCreate, { additionalProperties: true, 'x-update': true });
export type PersonaUpdate = Static<typeof PersonaUpdate>;

export const VERSION_KEYS = Object.keys(versionFields) as (keyof typeof versionFields)[];
export const IDENTITY_KEYS = Object.keys(identityFields) as (keyof typeof identityFields)[];

/** A version's behaviour as stored: every field present, null where unset. */
export interface PersonaBehaviour {
  orchestration_prompt: string | null;
  personality_prompt: string | null;
  call_config: PersonaCallConfig | null;
  default_tools: unknown[];
  pathway_conditions: PathwayCondition[] | null;
  kb_ids: string[];
}

/** A new persona's behaviour when the body gives none (as the hosted API: a helpful assistant). */
export const DEFAULT_PERSONALITY = 'You are a helpful assistant';

export const PersonaVersionSchema = Type.Object({
  id: Type.String(),
  persona_id: Type.String(),
  version_type: StringEnum(['draft', 'production', 'archived'] as const),
  version_number: Type.Integer(),
  orchestration_prompt: Nullable(Type.String()),
  personality_prompt: Nullable(Type.String()),
  pathway_conditions: Nullable(Type.Array(FreeObject())),
  kb_ids: Type.Array(Type.String()),
  call_config: Nullable(FreeObject()),
  voice: Nullable(Type.String({ description: "call_config's voice, where clients read it" })),
  model: Nullable(Type.String({ description: "call_config's model" })),
  pathway_id: Nullable(Type.String({ description: "call_config's pathway_id" })),
  default_tools: Type.Array(Type.Unknown()),
  promoted_from_version_id: Nullable(Type.String()),
  promoted_at: Nullable(Type.String()),
  promoted_by: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type PersonaVersion = Static<typeof PersonaVersionSchema>;

/** An inbound number a persona answers, with its own settings under the persona. */
export const PersonaNumber = Type.Object({
  phone_number: Type.String(),
  label: Nullable(Type.String()),
  persona_id: Type.String(),
  persona_settings: Nullable(FreeObject()),
});
export type PersonaNumber = Static<typeof PersonaNumber>;

export const PersonaSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Nullable(Type.String()),
  description: Nullable(Type.String()),
  tags: Type.Array(Type.Unknown()),
  image_url: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  deleted_at: Nullable(Type.String()),
  user_id: Type.String(),
  current_production_version_id: Type.String(),
  current_draft_version_id: Type.String(),
  inbound_numbers: Type.Array(PersonaNumber, { description: 'The inbound numbers it answers' }),
  current_production_version: PersonaVersionSchema,
  current_draft_version: PersonaVersionSchema,
});
export type Persona = Static<typeof PersonaSchema>;

/**
 * The call settings a persona version sets: its prompts as the task, its call_config, its
 * default tools and knowledge bases as `tools`, and the routes of its pathway conditions.
 */
export function personaSettings(version: PersonaBehaviour): CallSettings & { persona_routes: PersonaRoute[] } {
  const config = version.call_config ?? {};
  const task = [version.personality_prompt, version.orchestration_prompt]
    .filter((p): p is string => typeof p === 'string' && p.trim() !== '')
    .join('\n\n');
  const settings: CallSettings & { persona_routes: PersonaRoute[] } = {
    persona_routes: (version.pathway_conditions ?? []).flatMap((c) =>
      c.pathway_id?.trim()
        ? [
            {
              name: c.name ?? '',
              prompt: c.prompt ?? '',
              pathway_id: c.pathway_id.trim(),
              pathway_version: versionNumber(c.pathway_version),
              start_node_id: c.start_node_id?.trim() || null,
            },
          ]
        : [],
    ),
  };
  if (task) settings.task = task;
  if (typeof config.voice === 'string') settings.voice = config.voice;
  if (typeof config.record === 'boolean') settings.record = config.record;
  if (typeof config.language === 'string') settings.language = config.language as CallSettings['language'];
  if (typeof config.background === 'string')
    settings.background_track = config.background as CallSettings['background_track'];
  if (typeof config.max_duration === 'number') settings.max_duration = config.max_duration;
  if (typeof config.wait_for_greeting === 'boolean') settings.wait_for_greeting = config.wait_for_greeting;
  if (typeof config.interruption_threshold === 'number')
    settings.interruption_threshold = config.interruption_threshold;
  if (typeof config.model === 'string') settings.model = config.model;
  if (typeof config.pathway_id === 'string' && config.pathway_id.trim()) settings.pathway_id = config.pathway_id.trim();
  const tools = [...version.default_tools, ...version.kb_ids] as NonNullable<CallSettings['tools']>;
  if (tools.length > 0) settings.tools = tools;
  return settings;
}

/** A condition's pathway_version as a number; anything else is the production version. */
function versionNumber(value: string | number | null | undefined): number | null {
  if (typeof value === 'number') return value;
  return typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : null;
}

/**
 * Settings laid over others: what `over` sets wins, and the tools of both are used, `base`'s
 * first. A Send Call's fields over its persona's; an inbound number's persona over the number.
 */
export function overlaySettings<T extends CallSettings>(base: CallSettings, over: T): T {
  const defined = Object.fromEntries(Object.entries(over).filter(([, v]) => v !== undefined)) as T;
  const tools = [...(base.tools ?? []), ...(over.tools ?? [])];
  return { ...base, ...defined, ...(tools.length > 0 && { tools }) };
}
