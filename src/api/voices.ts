import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams, StringEnum } from '../schemas/common.js';
import { SAMPLES_KEPT } from '../store/speech-samples.js';
import { speechFailed } from './tts.js';
import { DEFAULT_VOICE, VOICES, voiceByName, type Voice as CatalogueVoice } from '../domain/voices.js';
import { DEFAULT_LANGUAGE, Language } from '../schemas/call.js';
import { concatPcm, encodeMulaw, resample } from '../media/audio.js';
import { encodeMulawWav, encodeWav } from '../media/wav.js';
import { ApiError, notFound } from '../errors.js';

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

/** The hosted API's pause marker in /v1/speak text: `<|N|>` is N seconds (0.1 to 10) of silence. */
const PAUSE = /<\|\s*(\d+(?:\.\d+)?)\s*\|>/;

/** Text with its pause markers as the pieces to say and the seconds of silence between them. */
function withPauses(text: string): Array<string | number> {
  return text
    .split(new RegExp(PAUSE.source, 'g'))
    .map((piece, i) => (i % 2 === 1 ? Math.min(10, Math.max(0.1, Number(piece))) : piece))
    .filter((piece) => typeof piece === 'number' || piece.trim() !== '');
}

const Audio = Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'audio/wav, 16-bit mono PCM' });

/** The hosted API's output formats of POST /v1/speak: 16-bit mono PCM at a rate, or 8 kHz G.711 mu-law. */
const OUTPUT_FORMATS = ['pcm_8000', 'pcm_16000', 'pcm_24000', 'pcm_44100', 'ulaw_8000'] as const;
type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * Says `text` in `voice` with the configured text-to-speech provider: one WAV file, in
 * `outputFormat` when one is asked for, else as 16-bit PCM at the provider's own rate.
 */
async function synthesizeWav(
  services: Services,
  text: string,
  voice: string,
  language: string,
  outputFormat?: OutputFormat,
): Promise<{ wav: Buffer; format: string }> {
  const parts: Array<Int16Array | number> = [];
  let sampleRate = 16000;
  const { tts } = services.speech;
  try {
    for (const piece of withPauses(text)) {
      if (typeof piece === 'number') {
        parts.push(piece);
        continue;
      }
      for await (const chunk of tts.synthesize({
        text: piece,
        voice: services.speech.ttsVoiceFor({ voice, language }),
        language,
      })) {
        parts.push(chunk.pcm);
        sampleRate = chunk.sampleRate;
      }
    }
  } catch (error) {
    throw speechFailed(services, error);
  }
  // Pauses become silence at the provider's rate, known once it spoke.
  const pcm = concatPcm(
    parts.map((part) => (typeof part === 'number' ? new Int16Array(Math.round(part * sampleRate)) : part)),
  );
  if (outputFormat === undefined) return { wav: encodeWav(pcm, { sampleRate }), format: `pcm_${sampleRate}` };
  const [encoding, rate] = outputFormat.split('_') as ['pcm' | 'ulaw', string];
  const audio = resample(pcm, sampleRate, Number(rate));
  const wav =
    encoding === 'ulaw'
      ? encodeMulawWav(encodeMulaw(audio), Number(rate))
      : encodeWav(audio, { sampleRate: Number(rate) });
  return { wav, format: outputFormat };
}

/** The voice a path names, by id, name (any case) or alias; 404 when none. */
function catalogueVoice(services: Services, id: string): CatalogueVoice {
  const key = id.trim().toLowerCase();
  const voice = voiceByName(services.config.voiceAliases.get(key) ?? key);
  if (!voice) throw notFound('Voice');
  return voice;
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
    async (request) => ({ voice: present(catalogueVoice(services, request.params.id), services.config.voiceAliases) }),
  );

  // The hosted API renames and deletes its cloned voices; every voice here is built in.
  for (const method of ['PATCH', 'DELETE'] as const)
    app.route({
      method,
      url: '/voices/:id',
      schema: {
        tags,
        summary: method === 'PATCH' ? 'Rename a voice' : 'Delete a voice',
        description:
          'Every voice of this server is one of its built-in voices (there is no voice cloning): they cannot be ' +
          'renamed or deleted. 403 for a voice of the catalogue, 404 for none.',
        params: IdParams,
        response: errorResponses,
      },
      handler: async (request) => {
        const voice = catalogueVoice(services, request.params.id);
        throw new ApiError(
          'FORBIDDEN',
          `${voice.name} is one of this server's built-in voices: they cannot be ${method === 'PATCH' ? 'renamed' : 'deleted'} (there is no voice cloning here)`,
        );
      },
    });

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
      const voice = catalogueVoice(services, request.params.id);
      const { wav } = await synthesizeWav(
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
          'The text spoken by the configured text-to-speech provider in `voice` (default mason; a voice this server lacks speaks in the default voice), ' +
          'as a WAV file in `output_format`.',
        body: Type.Object(
          {
            ...SpeechBody.properties,
            text: Type.String({
              minLength: 1,
              maxLength: 5000,
              description: 'What to say (at most 5,000 characters); `<|N|>` pauses N seconds (0.1 to 10)',
            }),
            voice: Type.Optional(Type.String({ minLength: 1 })),
            output_format: Type.Optional(
              StringEnum(OUTPUT_FORMATS, {
                description:
                  "pcm_<rate>: 16-bit mono PCM at that rate; ulaw_8000: 8 kHz G.711 mu-law. Default: 16-bit PCM at the provider's own rate",
              }),
            ),
          },
          { additionalProperties: true },
        ),
        response: { 200: Audio, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { text, voice, language, output_format: outputFormat } = request.body;
      const started = performance.now();
      const { wav, format } = await synthesizeWav(
        services,
        text,
        voice ?? DEFAULT_VOICE,
        language ?? DEFAULT_LANGUAGE,
        outputFormat,
      );
      // Kept, as the hosted API keeps every generation (GET /v1/speak/samples).
      const sample = await services.speechSamples.add(request.account.id, {
        text,
        voiceId: (voiceByName(voice ?? DEFAULT_VOICE) ?? voiceByName(DEFAULT_VOICE)!).id,
        outputFormat: format,
        wav,
        latencyMs: performance.now() - started,
      });
      return reply.type('audio/wav').header('x-sample-id', sample.id).send(wav);
    },
  );

  const Sample = Type.Object({
    id: Type.String(),
    text: Type.String(),
    voice_id: Type.String({ description: 'The voice, by its id in GET /v1/voices' }),
    output_format: Type.String({ description: 'pcm_<rate>: 16-bit mono PCM at that rate; ulaw_8000: G.711 mu-law' }),
    latency_ms: Type.Integer({ description: 'From the request to the whole audio' }),
    cost: Type.Number({ description: '0: speech here costs nothing per use' }),
    created_at: Type.String(),
  });
  app.get(
    '/speak/samples',
    {
      schema: {
        tags,
        summary: 'List speech samples',
        description: `What POST /v1/speak said, newest first (the newest ${SAMPLES_KEPT} are kept), without the audio.`,
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SAMPLES_KEPT, default: 20 })),
          offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
          voice_id: Type.Optional(Type.String({ description: 'One voice’s, by name or id' })),
        }),
        response: { 200: Type.Object({ data: Type.Array(Sample), errors: Type.Null() }), ...errorResponses },
      },
    },
    async (request) => {
      const { limit = 20, offset = 0, voice_id: voiceId } = request.query;
      const voice = voiceId === undefined ? undefined : (voiceByName(voiceId)?.id ?? voiceId);
      const samples = await services.speechSamples.list(request.account.id, { limit, offset, voiceId: voice });
      return { data: samples.map((s) => ({ ...s, cost: 0 })), errors: null };
    },
  );
  app.get(
    '/speak/samples/:id',
    {
      schema: {
        tags,
        summary: 'Get a speech sample',
        description:
          'One thing POST /v1/speak said, its WAV file as base64 in `audio_data`; with `?format=audio`, the WAV file itself.',
        params: IdParams,
        querystring: Type.Object({ format: Type.Optional(StringEnum(['json', 'audio'] as const)) }),
        response: {
          200: Type.Union([
            Type.Object({
              data: Type.Object({
                ...Sample.properties,
                audio_data: Type.String({ description: 'The WAV file, base64' }),
              }),
              errors: Type.Null(),
            }),
            Audio,
          ]),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const sample = await services.speechSamples.get(request.account.id, request.params.id);
      if (!sample) throw notFound('Speech sample');
      const { wav, ...rest } = sample;
      if (request.query.format === 'audio') return reply.type('audio/wav').send(wav);
      return { data: { ...rest, cost: 0, audio_data: wav.toString('base64') }, errors: null };
    },
  );
}
