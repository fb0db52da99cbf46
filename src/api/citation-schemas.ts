import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, FreeObject, Nullable } from '../schemas/common.js';
import { ApiError, notFound, validationError } from '../errors.js';
import { endedCall } from './calls.js';
import { LlmError } from '../providers/llm/types.js';
import { errorMessage } from '../domain/records.js';
import type { CitationSchema } from '../store/citation-schemas.js';

const tags = ['Citation schemas'];
/** The most fields one schema extracts. */
const MAX_FIELDS = 50;

const CitationSchemaBody = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  schema: FreeObject({ description: 'Field name to type hint or description, as a call’s analysis_schema' }),
  created_at: Type.String(),
  updated_at: Type.String(),
});
const One = Type.Object({ data: CitationSchemaBody, errors: Type.Null() });
const Many = Type.Object({ data: Type.Array(CitationSchemaBody), errors: Type.Null() });
const ById = Type.Object({ id: Type.Optional(Type.String({ minLength: 1 })) });
const Fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  schema: Type.Optional(
    FreeObject({
      description:
        'The fields to extract: name to type hint ("string", "boolean", "number", "date", a list of choices, ...); none yet when absent',
    }),
  ),
};

/** A schema's fields: 1 to MAX_FIELDS names, each a type hint or a description. */
function checkedFields(schema: Record<string, unknown>): Record<string, unknown> {
  const errors: string[] = [];
  const names = Object.keys(schema);
  if (names.length === 0) errors.push('schema must name at least one field to extract');
  if (names.length > MAX_FIELDS) errors.push(`schema has ${names.length} fields: at most ${MAX_FIELDS}`);
  for (const name of names) {
    const hint = schema[name];
    if (name.length > 100) errors.push(`schema.${name.slice(0, 20)}…: a field name is at most 100 characters`);
    if (typeof hint !== 'string' && (typeof hint !== 'object' || hint === null))
      errors.push(`schema.${name} must be a type hint (a string) or an object`);
  }
  if (errors.length > 0) throw validationError(errors);
  return schema;
}

/** The schema named by `?id=`, or the 400 that says it is missing. */
function idOf(query: { id?: string | undefined }): string {
  const id = query.id;
  if (!id) throw validationError(['id is required: the citation schema, as ?id=']);
  return id;
}

/**
 * Citation schemas (the hosted API's name for reusable extraction schemas): a set of fields to pull
 * out of a call, kept by the account and applied to any ended call with POST /v1/calls/analyze, the
 * way a call's own analysis_schema is applied after it ends. The hosted API keys them by `?id=`.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  const list = async (request: FastifyRequest) => ({
    data: await services.citationSchemas.list(request.account.id),
    errors: null,
  });
  app.get(
    '/citation_schemas/list',
    { schema: { tags, summary: 'List citation schemas', response: { 200: Many, ...errorResponses } } },
    list,
  );

  app.get(
    '/citation_schemas',
    {
      schema: {
        tags,
        summary: 'Get a citation schema',
        description: 'With `?id=`, that schema; without, the list.',
        querystring: ById,
        response: { 200: Type.Union([One, Many]), ...errorResponses },
      },
    },
    async (request) => {
      if (!request.query.id) return list(request);
      const found = await services.citationSchemas.get(request.account.id, request.query.id);
      if (!found) throw notFound('Citation schema');
      return { data: found, errors: null };
    },
  );

  app.post(
    '/citation_schemas',
    {
      schema: {
        tags,
        summary: 'Create a citation schema',
        body: Type.Object(Fields, { additionalProperties: true }),
        response: { 200: One, ...errorResponses },
      },
    },
    async (request) => {
      const { name, description, schema } = request.body;
      const created = await services.citationSchemas.create(request.account.id, {
        name: name.trim(),
        description: description?.trim() || null,
        schema: schema === undefined ? {} : checkedFields(schema),
      });
      return { data: created, errors: null };
    },
  );

  app.patch(
    '/citation_schemas',
    {
      schema: {
        tags,
        summary: 'Update a citation schema',
        description: 'Fields sent replace the stored ones: `name`, `description`, `schema`.',
        querystring: ById,
        body: Type.Partial(Type.Object(Fields), { additionalProperties: true, 'x-update': true }),
        response: { 200: One, ...errorResponses },
      },
    },
    async (request) => {
      const { name, description, schema } = request.body;
      const updated = await services.citationSchemas.update(request.account.id, idOf(request.query), {
        ...(name !== undefined && { name: name.trim() }),
        ...(description !== undefined && { description: description?.trim() || null }),
        ...(schema !== undefined && { schema: checkedFields(schema) }),
      });
      if (!updated) throw notFound('Citation schema');
      return { data: updated, errors: null };
    },
  );

  app.delete(
    '/citation_schemas',
    {
      schema: {
        tags,
        summary: 'Delete a citation schema',
        querystring: ById,
        response: {
          200: Type.Object({ data: Type.Object({ id: Type.String(), deleted: Type.Boolean() }), errors: Type.Null() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const id = idOf(request.query);
      if (!(await services.citationSchemas.delete(request.account.id, id))) throw notFound('Citation schema');
      return { data: { id, deleted: true }, errors: null };
    },
  );

  app.post(
    '/calls/analyze',
    {
      schema: {
        tags,
        summary: 'Extract fields from a call',
        description:
          'Fills the fields of a citation schema (`schema_id`), or of the call’s own analysis_schema when none is ' +
          'named, from an ended call, with the configured language model. `analysis` is null when the model’s ' +
          'answers never fit the fields.',
        body: Type.Object(
          { call_id: Type.String({ minLength: 1 }), schema_id: Type.Optional(Type.String({ minLength: 1 })) },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({
              call_id: Type.String(),
              schema_id: Nullable(Type.String()),
              analysis: Nullable(FreeObject()),
            }),
            errors: Type.Null(),
          }),
          409: errorResponses[400],
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { call_id: callId, schema_id: schemaId } = request.body;
      const call = await endedCall(services, request.account.id, callId);
      const schema = schemaId === undefined ? undefined : await schemaOf(services, request.account.id, schemaId);
      const fields = schema?.schema ?? call.request.analysis_schema;
      if (!fields) throw validationError(['schema_id is required: the call has no analysis_schema of its own']);
      const analysis = await extracting(services, fields, () => services.postCall.extract(call, fields));
      return { data: { call_id: call.id, schema_id: schema?.id ?? null, analysis }, errors: null };
    },
  );

  app.post(
    '/sms/analyze',
    {
      schema: {
        tags,
        summary: 'Extract fields from an SMS conversation',
        description:
          'Fills the fields of a citation schema from the messages of an SMS conversation, with the configured ' +
          'language model, and answers as the hosted API does. `extracted_variables` is `{}` when the model’s ' +
          'answers never fit the fields; `citations` is always empty.',
        body: Type.Object(
          { conversation_id: Type.String({ minLength: 1 }), schema_id: Type.String({ minLength: 1 }) },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({
              status: Type.Literal('success'),
              conversation_id: Type.String(),
              schema_id: Type.String(),
              schema_name: Type.String(),
              variables_extracted: Type.Integer({ description: 'Fields the conversation told (not null)' }),
              extracted_variables: FreeObject(),
              citations: Type.Array(FreeObject()),
              messages_processed: Type.Integer(),
            }),
            errors: Type.Array(Type.String(), { maxItems: 0 }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { conversation_id: conversationId, schema_id: schemaId } = request.body;
      const conversation = await services.smsConversations.get(request.account.id, conversationId);
      if (!conversation) throw notFound('Conversation');
      const schema = await schemaOf(services, request.account.id, schemaId);
      const extracted =
        (await extracting(services, schema.schema, () =>
          services.postCall.extractFromTexts(conversation.id, conversation.messages, schema.schema),
        )) ?? {};
      return {
        data: {
          status: 'success' as const,
          conversation_id: conversation.id,
          schema_id: schema.id,
          schema_name: schema.name,
          variables_extracted: Object.values(extracted).filter((value) => value !== null && value !== undefined).length,
          extracted_variables: extracted,
          citations: [],
          messages_processed: conversation.messages.length,
        },
        errors: [],
      };
    },
  );
}

/** The account's citation schema named by schema_id (a 400 naming it otherwise). */
async function schemaOf(services: Services, accountId: string, schemaId: string): Promise<CitationSchema> {
  const schema = await services.citationSchemas.get(accountId, schemaId);
  if (!schema) throw validationError(['schema_id is not a citation schema of this account']);
  return schema;
}

/**
 * Runs an extraction of fields with the language model: a 400 when there are no fields yet, a 503
 * when no model is configured or the model fails.
 */
async function extracting<T>(services: Services, fields: Record<string, unknown>, run: () => Promise<T>): Promise<T> {
  if (Object.keys(fields).length === 0) throw validationError(['schema_id names a citation schema with no fields yet']);
  if (!services.postCall.hasModel)
    throw new ApiError(
      'PROVIDER_UNAVAILABLE',
      'No language model is configured to analyze calls or texts: set OPENAI_API_KEY or OPENLINE_LLM_BASE_URL',
    );
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof LlmError)) throw error;
    throw new ApiError('PROVIDER_UNAVAILABLE', `The language model failed: ${errorMessage(error)}`);
  }
}
