import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, FreeObject, IdParams, Nullable } from '../schemas/common.js';
import {
  DEFAULT_PERSONALITY,
  IDENTITY_KEYS,
  PersonaCreate,
  PersonaSchema,
  PersonaUpdate,
  PersonaVersionSchema,
  VERSION_KEYS,
  FLAT_CONFIG_KEYS,
  type Persona,
  type PersonaBehaviour,
  type PersonaNumber,
  type PersonaVersion,
} from '../schemas/persona.js';
import { configOf, PersonaNumberSettings, type InboundConfig, type InboundNumber } from '../schemas/inbound.js';
import { normalizePathNumber as pathNumber, normalizePhone } from '../domain/phone.js';
import { normalizeTools } from '../schemas/agent.js';
import { conflict, notFound, validationError } from '../errors.js';
import { isRecord } from '../domain/records.js';
import { assertValid } from './validation.js';
import { unknownToolErrors } from './agents.js';
import { behaviourOf, type PersonaIdentity, type StoredPersona, type StoredVersion } from '../store/personas.js';

const tags = ['Personas'];

const Reply = Type.Object({ data: PersonaSchema, errors: Type.Null() });

function configString(v: StoredVersion, key: (typeof FLAT_CONFIG_KEYS)[number]): string | null {
  const value = v.call_config?.[key];
  return typeof value === 'string' ? value : null;
}

function versionBody(v: StoredVersion): PersonaVersion {
  return {
    id: v.id,
    persona_id: v.persona_id,
    version_type: v.version_type,
    version_number: v.version_number,
    orchestration_prompt: v.orchestration_prompt,
    personality_prompt: v.personality_prompt,
    pathway_conditions: v.pathway_conditions,
    kb_ids: v.kb_ids,
    call_config: v.call_config,
    voice: configString(v, 'voice'),
    model: configString(v, 'model'),
    pathway_id: configString(v, 'pathway_id'),
    default_tools: v.default_tools,
    promoted_from_version_id: v.promoted_from_version_id,
    promoted_at: v.promoted_at,
    // API keys, not people, promote here.
    promoted_by: null,
    created_at: v.created_at,
    updated_at: v.updated_at,
  };
}

function personaBody(p: StoredPersona, numbers: PersonaNumber[]): Persona {
  return {
    id: p.id,
    name: p.name,
    role: p.role,
    description: p.description,
    tags: p.tags,
    image_url: p.image_url,
    created_at: p.created_at,
    updated_at: p.updated_at,
    deleted_at: p.deleted_at,
    user_id: p.account_id,
    current_production_version_id: p.production.id,
    current_draft_version_id: p.draft.id,
    inbound_numbers: numbers,
    current_production_version: versionBody(p.production),
    current_draft_version: versionBody(p.draft),
  };
}

/**
 * The behaviour fields a body sets, normalized; absent ones are left out. The flat names (`prompt`,
 * `voice`, `model`, `pathway_id`) count as personality_prompt and call_config's, laid over
 * `config`, the call_config the body or the draft has.
 */
function behaviourIn(body: PersonaUpdate, config: PersonaBehaviour['call_config'] = null): Partial<PersonaBehaviour> {
  const out: Partial<PersonaBehaviour> = {};
  if (body.prompt !== undefined && body.personality_prompt === undefined) out.personality_prompt = body.prompt;
  const flat = FLAT_CONFIG_KEYS.filter((key) => body[key] !== undefined);
  if (flat.length > 0) {
    const base = 'call_config' in body ? (body.call_config ?? {}) : (config ?? {});
    out.call_config = { ...base, ...Object.fromEntries(flat.map((key) => [key, body[key]])) };
  }
  for (const key of VERSION_KEYS) {
    if (!(key in body)) continue;
    const value = body[key];
    if (key === 'default_tools') out.default_tools = normalizeTools(body.default_tools ?? []);
    else if (key === 'kb_ids') out.kb_ids = (body.kb_ids ?? []).map((id) => id.trim());
    else if (key === 'call_config') out.call_config ??= body.call_config ?? null;
    else if (key === 'pathway_conditions') out.pathway_conditions = body.pathway_conditions ?? null;
    else out[key] = typeof value === 'string' ? value : null;
  }
  return out;
}

function identityIn(body: PersonaUpdate): Partial<PersonaIdentity> {
  const out: Partial<PersonaIdentity> = {};
  for (const key of IDENTITY_KEYS) {
    if (!(key in body)) continue;
    if (key === 'tags') out.tags = body.tags ?? [];
    else if (key === 'name') out.name = (body.name ?? '').trim();
    else out[key] = body[key] ?? null;
  }
  return out;
}

/**
 * Personas: an agent's identity and its behaviour in versions. Updates change the draft; promote
 * puts the draft in production, which calls (`persona_id` on Send Call) and the inbound numbers
 * that name it use.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  /** Problems with the ids a body names: tools, knowledge bases, pathways of the account. */
  // Reads the body as sent (it may not have passed the schema): every problem is reported at once.
  async function referenceProblems(accountId: string, body: unknown): Promise<string[]> {
    if (!isRecord(body)) return [];
    const problems = await unknownToolErrors(services, accountId, body.default_tools, 'default_tools');
    const kbIds = Array.isArray(body.kb_ids) ? body.kb_ids : [];
    const given = kbIds.filter((id): id is string => typeof id === 'string').map((id) => id.trim());
    const found = new Set(await services.knowledge.existing(accountId, given));
    kbIds.forEach((id, i) => {
      if (typeof id === 'string' && !found.has(id.trim()))
        problems.push(`kb_ids[${i}] ${JSON.stringify(id)} is not a knowledge base of this account`);
    });
    const conditions = Array.isArray(body.pathway_conditions) ? body.pathway_conditions : [];
    for (const [i, condition] of conditions.entries()) {
      const id = isRecord(condition) && typeof condition.pathway_id === 'string' ? condition.pathway_id.trim() : '';
      if (id && !(await services.pathways.get(accountId, id)))
        problems.push(`pathway_conditions[${i}].pathway_id is not a pathway of this account`);
    }
    const config = isRecord(body.call_config) ? body.call_config : {};
    for (const [field, id] of [
      ['pathway_id', body.pathway_id],
      ['call_config.pathway_id', config.pathway_id],
    ] as const)
      if (typeof id === 'string' && id.trim() && !(await services.pathways.get(accountId, id.trim())))
        problems.push(`${field} is not a pathway of this account`);
    return problems;
  }

  async function numbersOf(accountId: string): Promise<Map<string, PersonaNumber[]>> {
    const byPersona = new Map<string, PersonaNumber[]>();
    for (const number of await services.inbound.list(accountId)) {
      if (!number.persona_id) continue;
      const entry: PersonaNumber = {
        phone_number: number.phone_number,
        label: number.label,
        persona_id: number.persona_id,
        persona_settings: number.persona_settings,
      };
      byPersona.set(number.persona_id, [...(byPersona.get(number.persona_id) ?? []), entry]);
    }
    return byPersona;
  }

  /** The account's numbers among those a body lists, in E.164; each one it does not hold is a problem. */
  async function accountNumbers(accountId: string, listed: readonly string[]): Promise<string[]> {
    const problems: string[] = [];
    const numbers: string[] = [];
    for (const [i, value] of listed.entries()) {
      const phone = normalizePhone(value);
      if (!phone.ok) problems.push(`inbound_numbers[${i}] ${phone.reason}`);
      else if (!(await services.inbound.get(accountId, phone.e164)))
        problems.push(`inbound_numbers[${i}] ${phone.e164} is not an inbound number of this account`);
      else numbers.push(phone.e164);
    }
    if (problems.length > 0) throw validationError(problems);
    return numbers;
  }

  async function setPersona(
    accountId: string,
    phone: string,
    change: (current: InboundNumber) => Partial<InboundConfig>,
  ): Promise<InboundNumber | undefined> {
    return services.inbound.modifyConfig(accountId, phone, (number) => ({ ...configOf(number), ...change(number) }));
  }

  async function reply(accountId: string, persona: StoredPersona) {
    return { data: personaBody(persona, (await numbersOf(accountId)).get(persona.id) ?? []), errors: null };
  }

  app.post(
    '/personas',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create a persona',
        description:
          'Creates the persona with a production version (version 1) and a draft (version 2), both holding ' +
          'the behaviour given: personality_prompt (default "You are a helpful assistant"), orchestration_prompt, ' +
          'call_config, default_tools, kb_ids and pathway_conditions.',
        body: PersonaCreate,
        response: { 200: Reply, ...errorResponses },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      assertValid(request, await referenceProblems(accountId, request.body));
      const body = request.body;
      const identity = identityIn(body);
      const given = behaviourIn(body);
      const behaviour: PersonaBehaviour = {
        orchestration_prompt: given.orchestration_prompt ?? null,
        personality_prompt: given.personality_prompt ?? DEFAULT_PERSONALITY,
        call_config: given.call_config ?? null,
        default_tools: given.default_tools ?? [],
        pathway_conditions: given.pathway_conditions ?? null,
        kb_ids: given.kb_ids ?? [],
      };
      const persona = await services.personas.create(
        accountId,
        {
          name: identity.name ?? body.name,
          role: identity.role ?? null,
          description: identity.description ?? null,
          tags: identity.tags ?? [],
          image_url: identity.image_url ?? null,
        },
        behaviour,
      );
      return reply(accountId, persona);
    },
  );

  app.get(
    '/personas',
    {
      schema: {
        tags,
        summary: 'List personas',
        response: { 200: Type.Object({ data: Type.Array(PersonaSchema), errors: Type.Null() }), ...errorResponses },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const numbers = await numbersOf(accountId);
      const personas = await services.personas.list(accountId);
      return { data: personas.map((p) => personaBody(p, numbers.get(p.id) ?? [])), errors: null };
    },
  );

  app.get(
    '/personas/:id',
    {
      schema: { tags, summary: 'Get a persona', params: IdParams, response: { 200: Reply, ...errorResponses } },
    },
    async (request) => {
      const persona = await services.personas.get(request.account.id, request.params.id);
      if (!persona) throw notFound('Persona');
      return reply(request.account.id, persona);
    },
  );

  // PATCH as documented; POST as the hosted API's CLI sends it.
  app.route({
    method: ['PATCH', 'POST'],
    url: '/personas/:id',
    attachValidation: true,
    schema: {
      tags,
      summary: 'Update a persona',
      description:
        'name, role, description, tags and image_url change at once; the behaviour fields change the draft ' +
        'version, which calls use once promoted. `prompt`, `voice`, `model` and `pathway_id` are taken as ' +
        "personality_prompt and call_config's. POST does the same as PATCH.",
      params: IdParams,
      body: PersonaUpdate,
      response: { 200: Reply, ...errorResponses },
    },
    handler: async (request) => {
      const accountId = request.account.id;
      const existing = await services.personas.get(accountId, request.params.id);
      if (!existing) throw notFound('Persona');
      assertValid(request, await referenceProblems(accountId, request.body));
      const persona = await services.personas.update(
        accountId,
        request.params.id,
        identityIn(request.body),
        behaviourIn(request.body, existing.draft.call_config),
      );
      if (!persona) throw notFound('Persona');
      return reply(accountId, persona);
    },
  });

  app.delete(
    '/personas/:id',
    {
      schema: {
        tags,
        summary: 'Delete a persona',
        description: 'Refused while an inbound number uses it: give the number another persona_id (or null) first.',
        params: IdParams,
        response: { 200: Reply, ...errorResponses, 409: errorResponses[400] },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const attached = (await numbersOf(accountId)).get(request.params.id) ?? [];
      if (attached.length > 0 && (await services.personas.get(accountId, request.params.id)))
        throw conflict(
          `The persona answers ${attached.map((n) => n.phone_number).join(', ')}: give ${attached.length === 1 ? 'it' : 'them'} another persona_id (or null) first`,
        );
      const persona = await services.personas.delete(accountId, request.params.id);
      if (!persona) throw notFound('Persona');
      return { data: personaBody(persona, []), errors: null };
    },
  );

  const NumbersBody = Type.Object({
    inbound_numbers: Type.Array(Type.String(), { minItems: 1, maxItems: 100, description: 'E.164 numbers' }),
  });

  /** Attach and detach: the same request, changing each number listed as `change` says. */
  const numbersRoute = (
    path: 'attach' | 'detach',
    summary: string,
    description: string,
    change: (personaId: string, number: InboundNumber) => Partial<InboundConfig>,
  ): void => {
    app.post(
      `/personas/:id/inbound/${path}`,
      {
        schema: {
          tags,
          summary,
          description,
          params: IdParams,
          body: NumbersBody,
          response: { 200: Reply, ...errorResponses },
        },
      },
      async (request) => {
        const accountId = request.account.id;
        const persona = await services.personas.get(accountId, request.params.id);
        if (!persona) throw notFound('Persona');
        for (const phone of await accountNumbers(accountId, request.body.inbound_numbers))
          await setPersona(accountId, phone, (number) => change(persona.id, number));
        return reply(accountId, persona);
      },
    );
  };
  numbersRoute(
    'attach',
    'Attach inbound numbers to a persona',
    'The persona answers them from now on (a number attached to another persona moves to this one).',
    (personaId, n) => ({
      persona_id: personaId,
      persona_settings: n.persona_id === personaId ? n.persona_settings : null,
    }),
  );
  numbersRoute(
    'detach',
    'Detach inbound numbers from a persona',
    'Numbers this persona answers go back to their own settings; others are left as they are.',
    (personaId, n) => (n.persona_id === personaId ? { persona_id: null, persona_settings: null } : {}),
  );

  app.patch(
    '/personas/:id/inbound/:phone_number/settings',
    {
      schema: {
        tags,
        summary: "Set a number's own pathway under its persona",
        description: "persona_settings: {pathway_id, pathway_version, start_node_id}, or null to use the persona's.",
        params: Type.Object({ id: Type.String(), phone_number: Type.String() }),
        body: Type.Object({ persona_settings: Nullable(PersonaNumberSettings) }),
        response: {
          200: Type.Object({
            data: Type.Object({
              phone_number: Type.String(),
              persona_id: Type.String(),
              persona_settings: Nullable(FreeObject()),
              updated_at: Type.String(),
            }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const persona = await services.personas.get(accountId, request.params.id);
      if (!persona) throw notFound('Persona');
      const phone = pathNumber(request.params.phone_number);
      const number = phone.ok ? await services.inbound.get(accountId, phone.e164) : undefined;
      if (!phone.ok || !number) throw notFound('Inbound number');
      if (number.persona_id !== persona.id)
        throw validationError([`${number.phone_number} is not attached to this persona: attach it first`]);
      const settings = request.body.persona_settings;
      const pathwayId = settings?.pathway_id?.trim();
      if (pathwayId && !(await services.pathways.get(accountId, pathwayId)))
        throw validationError(['persona_settings.pathway_id is not a pathway of this account']);
      const saved = await setPersona(accountId, number.phone_number, () => ({ persona_settings: settings ?? null }));
      if (!saved) throw notFound('Inbound number');
      return {
        data: {
          phone_number: saved.phone_number,
          persona_id: persona.id,
          persona_settings: saved.persona_settings,
          updated_at: saved.updated_at,
        },
        errors: null,
      };
    },
  );

  for (const which of ['draft', 'production'] as const)
    app.get(
      `/personas/:id/${which}`,
      {
        schema: {
          tags,
          summary: which === 'draft' ? 'Get a persona’s draft' : 'Get a persona’s production version',
          description:
            which === 'draft' ? 'The version updates change, until it is promoted.' : 'The version calls use.',
          params: IdParams,
          response: {
            200: Type.Object({ data: PersonaVersionSchema, errors: Type.Null() }),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const persona = await services.personas.get(request.account.id, request.params.id);
        if (!persona) throw notFound('Persona');
        return { data: versionBody(persona[which]), errors: null };
      },
    );

  app.get(
    '/personas/:id/versions',
    {
      schema: {
        tags,
        summary: 'List persona versions',
        description: 'Newest first: the draft, the production version, and the production versions it replaced.',
        params: IdParams,
        response: {
          200: Type.Object({ data: Type.Array(PersonaVersionSchema), errors: Type.Null() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const versions = await services.personas.versions(request.account.id, request.params.id);
      if (!versions) throw notFound('Persona');
      return { data: versions.map(versionBody), errors: null };
    },
  );

  // Under versions/ as documented; the hosted API's CLI posts to /promote.
  for (const url of ['/personas/:id/versions/promote', '/personas/:id/promote'])
    app.post(
      url,
      {
        schema: {
          hide: url === '/personas/:id/promote',
          tags,
          summary: 'Promote the draft to production',
          description:
            'Calls placed from now on use the draft as it is now; the production version it replaces is kept. ' +
            'Also served at POST /v1/personas/{id}/promote.',
          params: IdParams,
          response: { 200: Reply, ...errorResponses },
        },
      },
      async (request) => {
        const persona = await services.personas.promote(request.account.id, request.params.id);
        if (!persona) throw notFound('Persona');
        return reply(request.account.id, persona);
      },
    );

  for (const url of ['/personas/:id/versions/reset', '/personas/:id/reset-draft'])
    app.post(
      url,
      {
        schema: {
          hide: url === '/personas/:id/reset-draft',
          tags,
          summary: 'Reset the draft to the production version',
          description:
            "Drops the draft's changes: it holds the production version's behaviour again. Also served at " +
            'POST /v1/personas/{id}/reset-draft.',
          params: IdParams,
          response: { 200: Reply, ...errorResponses },
        },
      },
      async (request) => {
        const accountId = request.account.id;
        const current = await services.personas.get(accountId, request.params.id);
        if (!current) throw notFound('Persona');
        const persona = await services.personas.update(accountId, current.id, {}, behaviourOf(current.production));
        if (!persona) throw notFound('Persona');
        return reply(accountId, persona);
      },
    );
}
