import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams } from '../schemas/common.js';
import { VOICES, type Voice as CatalogueVoice } from '../domain/voices.js';
import { notFound } from '../errors.js';

const tags = ['Voices'];

/** A voice as clients see it; the espeak fallback voice is an implementation detail. */
const Voice = Type.Object({
  id: Type.String({ description: 'Stable voice id; accepted as `voice` like the name' }),
  name: Type.String({ description: 'Curated name, accepted as `voice`' }),
  description: Type.String(),
  public: Type.Boolean(),
  tags: Type.Array(Type.String()),
  voice_id: Type.Integer({ description: 'Legacy numeric voice_id (also the digits of the RL/HQ forms)' }),
});

function present(voice: CatalogueVoice) {
  const { id, name, description, tags: voiceTags, legacy_id } = voice;
  return { id, name, description, public: voice.public, tags: voiceTags, voice_id: legacy_id };
}

/** List Voices (seed 4.12); the wrapper key follows the hosted service's documentation. */
export default async function routes(app: Api, services: Services): Promise<void> {
  void services;

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
    async () => ({ voices: VOICES.map(present) }),
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
      const voice = VOICES.find((v) => v.id === key || v.name === key);
      if (!voice) throw notFound('Voice');
      return { voice: present(voice) };
    },
  );
}
