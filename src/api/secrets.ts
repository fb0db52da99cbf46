import { Type, type Static } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { checked, errorResponses, IdParams, Nullable, StringEnum } from '../schemas/common.js';
import { conflict, notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
import { SECRET_NAME } from '../domain/template.js';
import type { RefreshConfig, SecretInfo } from '../store/vault.js';

const tags = ['Secrets'];

const Name = Type.String({
  pattern: SECRET_NAME.source,
  description: 'Letters, digits, _ and -, unique in the account; requests refer to it as {{secrets.NAME}}',
  'x-message': 'must be 1 to 64 letters, digits, _ or -',
});

const ConfigBody = Type.Object(
  {
    url: checked(Type.String({ description: 'Where the value is fetched' }), 'http_url'),
    method: Type.Optional(StringEnum(['GET', 'POST'] as const, { description: 'Default GET' })),
    headers: Type.Optional(Nullable(Type.Record(Type.String(), Type.String(), { maxProperties: 50 }))),
    body: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    refresh_interval: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1440, description: 'Minutes a fetched value is used (default 60)' }),
    ),
    response: Type.String({
      minLength: 1,
      description: 'Where the value is in the JSON answer: token, data.access_token or $.data.access_token',
    }),
  },
  { additionalProperties: true },
);

const SecretBody = Type.Object(
  {
    name: Name,
    secret: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000, description: 'A static value' })),
    value: Type.Optional(
      Type.String({ minLength: 1, maxLength: 10_000, description: 'The same as secret, as some clients name it' }),
    ),
    config: Type.Optional(ConfigBody),
  },
  { additionalProperties: true },
);
const SecretUpdate = Type.Partial(SecretBody, { additionalProperties: true, 'x-update': true });

const MASK = '********';

const SecretView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  static: Type.Boolean({ description: 'true: a value kept as given; false: fetched from config and refreshed' }),
  reference: Type.String({ description: 'How requests refer to it' }),
  config: Type.Optional(
    Type.Object(
      {
        url: Type.String(),
        method: Type.String(),
        headers: Type.Record(Type.String(), Type.String()),
        body: Nullable(Type.String()),
        refresh_interval: Type.Integer(),
        response: Type.String(),
      },
      { description: 'Header values, query values and the body are shown masked' },
    ),
  ),
  created_at: Type.String(),
  updated_at: Type.String(),
});

/** A secret as the API shows it: never its value, nor what its config sends (it may hold credentials). */
function view(secret: SecretInfo): Static<typeof SecretView> {
  const config = secret.config;
  let masked: Static<typeof SecretView>['config'];
  if (config) {
    const url = new URL(config.url);
    for (const key of [...url.searchParams.keys()]) url.searchParams.set(key, MASK);
    masked = {
      url: url.toString(),
      method: config.method,
      headers: Object.fromEntries(Object.keys(config.headers).map((k) => [k, MASK])),
      body: config.body === null ? null : MASK,
      refresh_interval: config.refresh_interval,
      response: config.response,
    };
  }
  return {
    id: secret.id,
    name: secret.name,
    static: secret.static,
    reference: `{{secrets.${secret.name}}}`,
    ...(masked && { config: masked }),
    created_at: secret.created_at,
    updated_at: secret.updated_at,
  };
}

/** What a body sets the secret to hold: its value, or how to fetch one; exactly one of them. */
function contentOf(
  body: { secret?: string; value?: string; config?: Static<typeof ConfigBody> },
  required: boolean,
): { value: string } | { config: RefreshConfig } | undefined {
  const secret = body.secret ?? body.value;
  if (secret !== undefined && body.config !== undefined)
    throw validationError(['give either secret (a static value) or config (a value to fetch), not both']);
  if (secret !== undefined) return { value: secret };
  if (body.config !== undefined) {
    const c = body.config;
    return {
      config: {
        url: c.url,
        method: c.method ?? 'GET',
        headers: c.headers ?? {},
        body: c.body ?? null,
        refresh_interval: c.refresh_interval ?? 60,
        response: c.response,
      },
    };
  }
  if (required) throw validationError(['secret or config is required: a static value, or how to fetch one']);
  return undefined;
}

/**
 * Secrets: values (API keys, tokens) that custom tools, dynamic_data and pathway webhooks use as
 * `{{secrets.NAME}}` in their URLs, headers and bodies, without the value ever appearing in a
 * request's definition, a call record or a log. A static secret keeps the value given; a
 * refreshed one is fetched from `config` and kept for its refresh interval. Both are stored
 * sealed with the server's master key and never shown again.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  /** The secret a route's `:id` names, by its id or its name (the hosted CLI deletes by name). */
  const idOf = async (request: { account: { id: string }; params: { id: string } }) =>
    (await services.vault.idOf(request.account.id, request.params.id)) ?? request.params.id;

  app.post(
    '/secrets',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create a secret',
        body: SecretBody,
        response: {
          200: Type.Object({ data: Type.Object({ secret_id: Type.String() }), errors: Type.Null() }),
          ...errorResponses,
          409: errorResponses[400],
        },
      },
    },
    async (request) => {
      assertValid(request);
      const content = contentOf(request.body, true)!;
      const created = await services.vault.create(request.account.id, request.body.name, content);
      if (!created) throw conflict(`A secret named ${request.body.name} exists already`);
      return { data: { secret_id: created.id }, errors: null };
    },
  );

  app.get(
    '/secrets',
    {
      schema: {
        tags,
        summary: 'List secrets',
        response: { 200: Type.Object({ data: Type.Array(SecretView), errors: Type.Null() }), ...errorResponses },
      },
    },
    async (request) => ({ data: (await services.vault.list(request.account.id)).map(view), errors: null }),
  );

  app.get(
    '/secrets/:id',
    {
      schema: {
        tags,
        summary: 'Get a secret (without its value)',
        description: 'The secret is named by its id or its name, here and in PATCH and DELETE.',
        params: IdParams,
        response: {
          200: Type.Object({ data: Type.Object({ secret: SecretView }), errors: Type.Null() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const secret = await services.vault.info(request.account.id, await idOf(request));
      if (!secret) throw notFound('Secret');
      return { data: { secret: view(secret) }, errors: null };
    },
  );

  // PATCH as documented; POST as the hosted API updates its other resources (and clients send it).
  app.route({
    method: ['PATCH', 'POST'],
    url: '/secrets/:id',
    attachValidation: true,
    schema: {
      tags,
      summary: 'Rename a secret, or give it a new value or config',
      description: 'POST does the same as PATCH.',
      params: IdParams,
      body: SecretUpdate,
      response: {
        200: Type.Object({ data: Type.Object({ secret: SecretView }), errors: Type.Null() }),
        ...errorResponses,
        409: errorResponses[400],
      },
    },
    handler: async (request) => {
      assertValid(request);
      const content = contentOf(request.body, false);
      const result = await services.vault.update(request.account.id, await idOf(request), {
        ...(request.body.name !== undefined && { name: request.body.name }),
        ...(content && { content }),
      });
      if (result === 'taken') throw conflict(`A secret named ${request.body.name ?? ''} exists already`);
      if (!result) throw notFound('Secret');
      return { data: { secret: view(result) }, errors: null };
    },
  });

  app.delete(
    '/secrets/:id',
    {
      schema: {
        tags,
        summary: 'Delete a secret',
        description: 'Requests that refer to it render the reference empty from then on.',
        params: IdParams,
        response: {
          200: Type.Object({
            data: Type.Object({ secret_id: Type.String(), deleted: Type.Literal(true) }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const id = await idOf(request);
      if (!(await services.vault.delete(request.account.id, id))) throw notFound('Secret');
      return { data: { secret_id: id, deleted: true as const }, errors: null };
    },
  );
}
