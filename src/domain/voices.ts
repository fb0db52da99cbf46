/** One voice of the catalogue served by GET /v1/voices and accepted by `voice`. */
export interface Voice {
  id: string;
  name: string;
  description: string;
  public: boolean;
  tags: string[];
  /** The number a legacy `voice_id` (and the digits after `RL` / `HQ`) selects. */
  legacy_id: number;
  /** Local espeak-ng voice (`language+variant`) used when no cloud TTS is configured. */
  espeak: string;
  /**
   * OpenAI speech voice. Only the six voices every OpenAI-compatible speech server knows (alloy,
   * echo, fable, onyx, nova, shimmer), so some presets share one.
   */
  openai: string;
  /** ElevenLabs premade voice id (the voice's name in ElevenLabs' library in the comment). */
  elevenlabs: string;
}

/** The text-to-speech vendors the catalogue maps its voices to (OPENLINE_TTS). */
export const TTS_VENDORS = ['espeak', 'openai', 'elevenlabs'] as const;
export type TtsVendor = (typeof TTS_VENDORS)[number];

/** The curated voices of the seed. Ids are stable UUIDs so that clients may store either form. */
export const VOICES: readonly Voice[] = [
  {
    name: 'maya',
    legacy_id: 0,
    id: '2f9fdbc7-4bf2-4792-8a18-21ce3c93978f',
    espeak: 'en-us+f3',
    openai: 'nova',
    elevenlabs: 'cgSgspJ2msm6clMCkdW9', // Jessica
    description: 'Young American female, warm and upbeat',
    tags: ['english', 'female', 'american', 'curated'],
  },
  {
    name: 'mason',
    legacy_id: 1,
    id: '1ee98e55-8fb4-4d5a-9fe1-dbfa0c2a7de2',
    espeak: 'en-us+m3',
    openai: 'echo',
    elevenlabs: 'nPczCjzI2devNBz1zQrb', // Brian
    description: 'American male, calm and clear',
    tags: ['english', 'male', 'american', 'curated'],
  },
  {
    name: 'ryan',
    legacy_id: 2,
    id: '37b3f1c8-a01e-4d70-b251-294733f08371',
    espeak: 'en-us+m1',
    openai: 'onyx',
    elevenlabs: 'cjVigY5qzO86Huf0OWal', // Eric
    description: 'Professional American male',
    tags: ['english', 'male', 'american', 'curated'],
  },
  {
    name: 'adriana',
    legacy_id: 3,
    id: '1d054475-3908-4f64-9158-9d3911fe9597',
    espeak: 'en-us+f2',
    openai: 'alloy',
    elevenlabs: 'EXAVITQu4vr4xnSDxMaL', // Sarah
    description: 'Professional American female',
    tags: ['english', 'female', 'american', 'curated'],
  },
  {
    name: 'tina',
    legacy_id: 4,
    id: '3c24a2c3-4a2b-4c4b-9a4e-8a0b7f1d2e55',
    espeak: 'en-us+f4',
    openai: 'shimmer',
    elevenlabs: 'FGY2WhTYpPnrIDTdsKH5', // Laura
    description: 'Gentle American female',
    tags: ['english', 'female', 'american', 'curated'],
  },
  {
    name: 'matt',
    legacy_id: 5,
    id: 'a3d43393-dacb-43d3-91d7-b4cb913a5908',
    espeak: 'en-us+m2',
    openai: 'echo',
    elevenlabs: 'TX3LPaxmHKxFdv7VOQHJ', // Liam
    description: 'Friendly American male',
    tags: ['english', 'male', 'american', 'curated'],
  },
  {
    name: 'evelyn',
    legacy_id: 6,
    id: '7d132ef5-7dd6-4a3f-9ad2-6a2f5c4f7b3b',
    espeak: 'en-gb+f1',
    openai: 'fable',
    elevenlabs: 'Xb7hH8MSUJpSbSDYk0k2', // Alice
    description: 'British female, composed',
    tags: ['english', 'female', 'british', 'curated'],
  },
].map((v) => ({ ...v, public: true }));

export const DEFAULT_VOICE = 'mason';

export interface ResolvedVoice {
  voice: string;
  reduce_latency: boolean;
  high_fidelity: boolean;
}

export type VoiceResult =
  { ok: true; value: ResolvedVoice; warning?: string } | { ok: false; field: string; reason: string };

/**
 * A voice of the catalogue by its name or id (case-insensitive), or by the number GET /v1/voices
 * lists as its `voice_id` (programs send that as `voice`).
 */
export function voiceByName(value: string): Voice | undefined {
  const key = value.trim().toLowerCase();
  if (/^\d+$/.test(key)) return byLegacyId(Number(key));
  return VOICES.find((v) => v.name === key || v.id === key);
}

function byLegacyId(id: number): Voice | undefined {
  return VOICES.find((v) => v.legacy_id === id);
}

/** Whether `voice` names a voice: a curated name, a voice id, or an RL/HQ legacy form. */
export function isKnownVoice(value: string): boolean {
  return parseVoice(value) !== undefined;
}

function parseVoice(value: string): ResolvedVoice | undefined {
  const legacy = /^(RL|HQ)(\d+)$/i.exec(value.trim());
  if (legacy) {
    const voice = byLegacyId(Number(legacy[2]));
    if (!voice) return undefined;
    const prefix = (legacy[1] ?? '').toUpperCase();
    return { voice: voice.name, reduce_latency: prefix === 'RL', high_fidelity: prefix === 'HQ' };
  }
  const voice = voiceByName(value);
  return voice ? { voice: voice.name, reduce_latency: false, high_fidelity: false } : undefined;
}

/**
 * Resolves the seed's voice parameters: `voice` (name, id or RL/HQ form), the former
 * `voice_preset_id` (valid as voice), and the legacy `voice_id` and `reduce_latency`, which
 * override `voice` when present.
 */
export function resolveVoice(params: {
  voice?: unknown;
  voice_id?: unknown;
  voice_preset_id?: unknown;
  reduce_latency?: unknown;
}): VoiceResult {
  let resolved: ResolvedVoice = { voice: DEFAULT_VOICE, reduce_latency: false, high_fidelity: false };
  let warning: string | undefined;
  for (const field of ['voice_preset_id', 'voice'] as const) {
    const value = params[field];
    if (value === undefined || value === null || value === '') continue;
    if (typeof value !== 'string') return { ok: false, field, reason: 'must be a string' };
    const parsed = parseVoice(value);
    if (parsed) {
      resolved = parsed;
      warning = undefined;
      continue;
    }
    // A voice of the hosted service (an id or a name no catalogue here has): the call goes ahead
    // in the default voice, keeps the name it was given, and says so.
    resolved = { voice: value, reduce_latency: false, high_fidelity: false };
    warning = `${field} "${value}" is not a voice of this server: the default voice (${DEFAULT_VOICE}) speaks instead (GET /v1/voices lists the voices)`;
  }
  if (params.voice_id !== undefined && params.voice_id !== null) {
    const id =
      typeof params.voice_id === 'string' && /^\d+$/.test(params.voice_id) ? Number(params.voice_id) : params.voice_id;
    if (typeof id !== 'number' || !Number.isInteger(id))
      return { ok: false, field: 'voice_id', reason: 'must be an integer' };
    const voice = byLegacyId(id);
    if (voice) {
      resolved = { ...resolved, voice: voice.name };
      warning = undefined;
    } else {
      // The hosted service's numbering goes far beyond the curated voices: as with an unknown
      // `voice`, the call goes ahead in the default voice and says so.
      resolved = { ...resolved, voice: DEFAULT_VOICE };
      warning = `voice_id ${id} is not a voice of this server: the default voice (${DEFAULT_VOICE}) speaks instead (GET /v1/voices lists the voices)`;
    }
  }
  if (params.reduce_latency !== undefined && params.reduce_latency !== null) {
    if (typeof params.reduce_latency !== 'boolean')
      return { ok: false, field: 'reduce_latency', reason: 'must be a boolean' };
    resolved = { ...resolved, reduce_latency: params.reduce_latency };
  }
  return warning ? { ok: true, value: resolved, warning } : { ok: true, value: resolved };
}

/**
 * The vendor's own voice id for a call's `voice` (curated name, voice id or RL/HQ legacy form, as
 * resolveVoice accepts them). A voice the catalogue does not know gets the vendor's default voice,
 * which is the default preset's (mason) voice at that vendor.
 */
export function providerVoiceId(vendor: TtsVendor, voice: string | null | undefined): string {
  const name = (voice ? parseVoice(voice)?.voice : undefined) ?? DEFAULT_VOICE;
  return (voiceByName(name) ?? voiceByName(DEFAULT_VOICE)!)[vendor];
}
