import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams } from '../schemas/common.js';
import { DEFAULT_VOICE, VOICES, voiceByName, type Voice as CatalogueVoice } from '../domain/voices.js';
import { DEFAULT_LANGUAGE, Language } from '../schemas/call.js';
import { concatPcm } from '../media/audio.js';
import { encodeWav } from '../media/wav.js';
import { ApiError, notFound } from '../errors.js';
import { errorMessage } from '../domain/records.js';

const tags = ['Voices'];

/** A voice as clients see it; the espeak fallback voice is an implementation detail. */
const Voice = Type.Object({
  id: Type.String({ description: 'Stable voice id; accepted as `voice` like the name' }),
  name: Type.String({ description: 'Curated name, accepted as `voice`' }),
  description: Type.String(),
  public: Type.Boolean(),
  tags: Type.Array(Type.String()),
  voice_id: Type.Integer({ description: 'Legacy numeric voice_id (also the digits of the RL/HQ forms)' }),
  average_rating: Type.Number({
    description: 'Star rating out of 5 (the hosted library rates voices; 0 here: not rated)',
  }),
  total_ratings: Type.Integer({ description: 'Ratings counted (0: voices here are not rated)' }),
  aliases: Type.Array(Type.String(), {
    description: 'Voice names and ids of the hosted service that speak in this voice here (OPENLINE_VOICE_ALIASES)',
  }),
});

function present(voice: CatalogueVoice, aliases: ReadonlyMap<string, string>) {
  const { id, name, description, tags: voiceTags, legacy_id } = voice;
  const own = [...aliases].filter(([, target]) => voiceByName(target)?.id === id).map(([alias]) => alias);
  return {
    id,
    name,
    description,
    public: voice.public,
    tags: voiceTags,
    voice_id: legacy_id,
    average_rating: 0,
    total_ratings: 0,
    aliases: own,
  };
}

const SpeechBody = Type.Object(
  {
    text: Type.String({ minLength: 1, maxLength: 1000, description: 'What to say (at most 1,000 characters)' }),
    language: Type.Optional(Language),
  },
  { additionalProperties: true },
);

const Audio = Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'audio/wav, 16-bit mono PCM' });

/** Says `text` in `voice` with the configured text-to-speech provider: one WAV file. */
async function synthesizeWav(services: Services, text: string, voice: string, language: string): Promise<Buffer> {
  const chunks: Int16Array[] = [];
  let sampleRate = 16000;
  const { tts } = services.speech;
  try {
    for await (const chunk of tts.synthesize({
      text,
      voice: services.speech.ttsVoiceFor({ voice, language }),
      language,
    })) {
      chunks.push(chunk.pcm);
      sampleRate = chunk.sampleRate;
    }
  } catch (error) {
    const reason = errorMessage(error);
    throw new ApiError('PROVIDER_UNAVAILABLE', `The text-to-speech provider (${tts.name}) failed: ${reason}`);
  }
  return encodeWav(concatPcm(chunks), { sampleRate });
}

/** List Voices (seed 4.12); the wrapper key follows the hosted service's documentation. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.get(
    '/voices',
    {
      schema: {
        tags,
        summary: 'List voices',
        description: 'The voices available to the account; each is usable as `voice` by id or name.',
        response: { 200: Type.Object({ voices: Type.Array(Voice) }), ...errorResponses },
      },
    },
    async () => ({ voices: VOICES.map((v) => present(v, services.config.voiceAliases)) }),
  );

  app.get(
    '/voices/:id',
    {
      schema: {
        tags,
        summary: 'Get a voice',
        description: 'By id or by name (case-insensitive).',
        params: IdParams,
        response: { 200: Type.Object({ voice: Voice }), ...errorResponses },
      },
    },
    async (request) => {
      const key = request.params.id.trim().toLowerCase();
      const voice = voiceByName(services.config.voiceAliases.get(key) ?? key);
      if (!voice) throw notFound('Voice');
      return { voice: present(voice, services.config.voiceAliases) };
    },
  );

  app.post(
    '/voices/:id/sample',
    {
      schema: {
        tags,
        summary: 'Generate a voice sample',
        description: 'The text spoken in this voice by the configured text-to-speech provider (espeak-ng locally).',
        params: IdParams,
        body: SpeechBody,
        response: { 200: Audio, ...errorResponses },
      },
    },
    async (request, reply) => {
      const voice = voiceByName(request.params.id);
      if (!voice) throw notFound('Voice');
      const wav = await synthesizeWav(
        services,
        request.body.text,
        voice.name,
        request.body.language ?? DEFAULT_LANGUAGE,
      );
      return reply.type('audio/wav').send(wav);
    },
  );

  app.post(
    '/speak',
    {
      schema: {
        tags,
        summary: 'Speak text',
        description:
          'The text spoken by the configured text-to-speech provider in `voice` (default mason; a voice this server lacks speaks in the default voice).',
        body: Type.Object(
          { ...SpeechBody.properties, voice: Type.Optional(Type.String({ minLength: 1 })) },
          { additionalProperties: true },
        ),
        response: { 200: Audio, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { text, voice, language } = request.body;
      const wav = await synthesizeWav(services, text, voice ?? DEFAULT_VOICE, language ?? DEFAULT_LANGUAGE);
      return reply.type('audio/wav').send(wav);
    },
  );
}
