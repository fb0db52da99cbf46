import { Type, type Static } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams, Nullable, SuccessMessage } from '../schemas/common.js';
import {
  PathwayCreateBody,
  PathwayDetail,
  PathwayEdgeSchema,
  PathwayNodeSchema,
  PathwayUpdateBody,
  PathwayVersionBody,
  PublishBody,
  VersionDetail,
  VersionSummary,
} from '../schemas/pathway.js';
import { checkPathwayGraph, type PathwayGraph } from '../domain/pathway-graph.js';
import { ApiError, notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
import { isRecord } from '../domain/records.js';
import { NO_TOOLS, normalizeCallSettings } from '../schemas/call-request.js';

const tags = ['Pathways'];

/**
 * Checks the body: schema problems and graph problems are reported together. Returns the graph
 * with canonical node types, or undefined when the body carries neither nodes nor edges (a draft
 * may leave them out). Reads the body defensively: it may have failed schema validation.
 */
function checkBody(
  request: Parameters<typeof assertValid>[0],
  stored: PathwayGraph | undefined,
  requireNodes: boolean,
): PathwayGraph | undefined {
  const raw: Record<string, unknown> = isRecord(request.body) ? request.body : {};
  const absent = requireNodes
    ? raw.nodes === undefined || raw.edges === undefined // the schema reports the missing field
    : raw.nodes === undefined && raw.edges === undefined;
  if (absent) {
    assertValid(request);
    return undefined;
  }
  const result = checkPathwayGraph(raw.nodes ?? stored?.nodes ?? [], raw.edges ?? stored?.edges ?? [], {
    requireNodes,
  });
  assertValid(request, result.ok ? [] : result.errors);
  return result.ok ? result.graph : undefined;
}

/**
 * Pathways, their versions and publishing: seed 2.8, 4.9 and CONTRACT.md section 9. The hosted
 * API serves the same routes under /convo_pathway too, the older name many of its clients still
 * call (GET /v1/convo_pathway/{id}, POST /v1/convo_pathway/create, ...): so does Openline,
 * documented once, under /pathway.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  await pathwayRoutes(app, services, '/pathway');
  await app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    await pathwayRoutes(scope as Api, services, '/convo_pathway');
    await registerPathwayUpdateAlias(scope as Api, services);
  });
}

const UpdateReply = Type.Object({
  status: Type.Literal('success'),
  message: Type.String(),
  pathway_data: Type.Object({
    name: Type.String(),
    description: Nullable(Type.String()),
    nodes: Type.Array(PathwayNodeSchema),
    edges: Type.Array(PathwayEdgeSchema),
  }),
});

/** Changes a pathway's draft with the fields the body sends; the resulting graph must be valid. */
async function updateDraft(
  services: Services,
  request: FastifyRequest,
  id: string,
): Promise<Static<typeof UpdateReply>> {
  const accountId = request.account.id;
  const existing = await services.pathways.get(accountId, id);
  if (!existing) throw notFound('Pathway');
  const graph = checkBody(request, existing, false);
  // checkBody has checked the body against the schema (it throws otherwise).
  const body = request.body as PathwayUpdateBody;
  const patch = {
    ...(body.name !== undefined && { name: body.name }),
    ...(body.description !== undefined && { description: body.description }),
    ...graph,
  };
  if (!(await services.pathways.update(accountId, id, patch))) throw notFound('Pathway');
  const updated = await services.pathways.get(accountId, id);
  if (!updated) throw notFound('Pathway');
  const { name, description, nodes, edges } = updated;
  return {
    status: 'success',
    message: 'Pathway updated successfully',
    pathway_data: { name, description, nodes, edges },
  };
}

/**
 * The older update form: `POST /convo_pathway/update` (also under /v1) with the pathway's `id` in
 * the body, as some clients still send it; it changes the draft as `POST /v1/pathway/{id}` does.
 */
export async function registerPathwayUpdateAlias(app: Api, services: Services): Promise<void> {
  app.post(
    '/convo_pathway/update',
    {
      attachValidation: true,
      schema: {
        hide: true,
        tags,
        summary: 'Update the draft of a pathway (older form, id in the body)',
        body: Type.Intersect([Type.Object({ id: Type.String({ minLength: 1 }) }), PathwayUpdateBody]),
        response: { 200: UpdateReply, ...errorResponses },
      },
    },
    async (request) => {
      const id = (request.body as { id?: unknown } | undefined)?.id;
      if (typeof id !== 'string' || id.trim() === '') throw validationError(['id is required: the pathway to update']);
      return updateDraft(services, request, id.trim());
    },
  );
}

/** The pathway routes under one base path. */
async function pathwayRoutes(app: Api, services: Services, base: string): Promise<void> {
  // Created at /create as documented, or POSTed to the collection itself as some clients do.
  for (const path of [`${base}/create`, base])
    app.post(
      path,
      {
        attachValidation: true,
        schema: {
          hide: path === base,
          tags,
          summary: 'Create a pathway',
          description:
            'Creates a pathway whose draft holds the nodes and edges given (none by default). Its id is given ' +
            'at the top and under `data`, as the hosted API has answered over time.',
          body: PathwayCreateBody,
          response: {
            200: Type.Object({
              status: Type.Literal('success'),
              pathway_id: Type.String(),
              data: Type.Object({ pathway_id: Type.String() }),
              errors: Type.Null(),
            }),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const graph = checkBody(request, undefined, false) ?? { nodes: [], edges: [] };
        const body = request.body;
        const pathwayId = await services.pathways.create(request.account.id, {
          name: body.name,
          description: body.description ?? null,
          ...graph,
        });
        return { status: 'success' as const, pathway_id: pathwayId, data: { pathway_id: pathwayId }, errors: null };
      },
    );

  app.get(
    base,
    {
      schema: {
        tags,
        summary: 'List pathways',
        description: "Each pathway with its draft's nodes and edges, as the hosted list shows them.",
        response: {
          200: Type.Object({ status: Type.Literal('success'), pathways: Type.Array(PathwayDetail) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ status: 'success' as const, pathways: await services.pathways.list(request.account.id) }),
  );

  app.get(
    `${base}/:id`,
    {
      schema: {
        tags,
        summary: 'Get a pathway (its draft)',
        params: IdParams,
        response: { 200: PathwayDetail, ...errorResponses },
      },
    },
    async (request) => {
      const pathway = await services.pathways.get(request.account.id, request.params.id);
      if (!pathway) throw notFound('Pathway');
      return pathway;
    },
  );

  app.post(
    `${base}/:id`,
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Update the draft of a pathway',
        description:
          'Fields sent replace the stored ones. When nodes or edges are sent, the resulting graph ' +
          '(the new nodes or edges with the stored other half) must be valid.',
        params: IdParams,
        body: PathwayUpdateBody,
        response: { 200: UpdateReply, ...errorResponses },
      },
    },
    async (request) => updateDraft(services, request, request.params.id),
  );

  app.delete(
    `${base}/:id`,
    {
      schema: {
        tags,
        summary: 'Delete a pathway and all its versions',
        params: IdParams,
        response: { 200: SuccessMessage, ...errorResponses },
      },
    },
    async (request) => {
      if (!(await services.pathways.delete(request.account.id, request.params.id))) throw notFound('Pathway');
      return { status: 'success' as const, message: 'Pathway deleted successfully' };
    },
  );

  app.post(
    `${base}/:id/version`,
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create a pathway version',
        description:
          'Stores the nodes and edges given as the next version (1, 2, 3, ...). Versions never change; ' +
          'the draft is left as it is.',
        params: IdParams,
        body: PathwayVersionBody,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            pathway_id: Type.String(),
            data: Type.Object({
              created_at: Type.String(),
              id: Type.String(),
              name: Type.String(),
              version_number: Type.Integer(),
            }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      if (!(await services.pathways.get(accountId, request.params.id))) throw notFound('Pathway');
      // A version is required to carry both halves, so nothing is taken from the draft.
      const graph = checkBody(request, undefined, true);
      if (!graph) throw new Error('unreachable: checkBody throws unless the graph is valid');
      const version = await services.pathways.createVersion(accountId, request.params.id, {
        name: request.body.name,
        ...graph,
      });
      if (!version) throw notFound('Pathway');
      return {
        status: 'success' as const,
        message: 'Version created successfully',
        pathway_id: request.params.id,
        data: version,
      };
    },
  );

  app.get(
    `${base}/:id/versions`,
    {
      schema: {
        tags,
        summary: 'List the versions of a pathway',
        params: IdParams,
        response: {
          200: Type.Object({ status: Type.Literal('success'), versions: Type.Array(VersionSummary) }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const versions = await services.pathways.listVersions(request.account.id, request.params.id);
      if (!versions) throw notFound('Pathway');
      return { status: 'success' as const, versions };
    },
  );

  app.get(
    `${base}/:id/version/:n`,
    {
      schema: {
        tags,
        summary: 'Get a pathway version',
        description: 'n is a version_number; 0 is the live (production) version.',
        params: Type.Object({ id: Type.String(), n: Type.Integer({ minimum: 0 }) }),
        response: { 200: VersionDetail, ...errorResponses },
      },
    },
    async (request) => {
      const { id, n } = request.params;
      const result = await services.pathways.getVersion(request.account.id, id, n);
      if (result.ok) return result.version;
      if (result.reason === 'pathway') throw notFound('Pathway');
      if (result.reason === 'unpublished') {
        throw new ApiError('NOT_FOUND', 'Pathway has no published version: publish one to production first');
      }
      throw new ApiError('NOT_FOUND', `Pathway version ${n} not found`);
    },
  );

  app.post(
    `${base}/:id/version/:n`,
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Update a pathway version',
        description:
          "Fields sent replace the version's own (name, nodes, edges); the resulting graph must be valid. " +
          'Calls already running keep the graph they started with.',
        params: Type.Object({ id: Type.String(), n: Type.Integer({ minimum: 1 }) }),
        body: PathwayUpdateBody,
        response: {
          200: Type.Object({ status: Type.Literal('success'), message: Type.String(), data: VersionDetail }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { id, n } = request.params;
      const accountId = request.account.id;
      const current = await services.pathways.getVersion(accountId, id, n);
      if (!current.ok) {
        if (current.reason === 'pathway') throw notFound('Pathway');
        throw new ApiError('NOT_FOUND', `Pathway version ${n} not found`);
      }
      const graph = checkBody(request, current.version, false);
      const name = request.body.name;
      await services.pathways.updateVersion(accountId, id, n, { ...(name !== undefined && { name }), ...graph });
      const updated = await services.pathways.getVersion(accountId, id, n);
      if (!updated.ok) throw new ApiError('NOT_FOUND', `Pathway version ${n} not found`);
      return { status: 'success' as const, message: 'Pathway version updated', data: updated.version };
    },
  );

  app.post(
    `${base}/:id/publish`,
    {
      schema: {
        tags,
        summary: 'Publish a pathway version',
        description:
          'Points the production (default) or staging environment at a version, named by its id or its ' +
          'version_number; without version_id the draft is saved as the next version and published. Calls on ' +
          'the pathway use the production version unless they set pathway_version.',
        params: IdParams,
        body: PublishBody,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            version_number: Type.Integer(),
            environment: Type.String(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const environment = request.body.environment ?? 'production';
      let versionRef = request.body.version_id;
      // No version named: the draft as it is now becomes the next version, and that is published.
      if (versionRef === undefined || versionRef === null) {
        const pathway = await services.pathways.get(accountId, request.params.id);
        if (!pathway) throw notFound('Pathway');
        if (pathway.nodes.length === 0)
          throw validationError(['version_id is required: the draft has no nodes to publish']);
        const draft = checkPathwayGraph(pathway.nodes, pathway.edges, { requireNodes: true });
        if (!draft.ok) throw validationError(draft.errors.map((e) => `the draft: ${e}`));
        const saved = await services.pathways.createVersion(accountId, request.params.id, {
          name: pathway.name,
          ...draft.graph,
        });
        if (!saved) throw notFound('Pathway');
        versionRef = saved.version_number;
      }
      const result = await services.pathways.publish(accountId, request.params.id, versionRef, environment);
      if (!result.ok) {
        if (result.reason === 'pathway') throw notFound('Pathway');
        throw new ApiError('NOT_FOUND', `Pathway version ${String(request.body.version_id)} not found`);
      }
      return {
        status: 'success' as const,
        message: 'Pathway published successfully',
        version_number: result.version_number,
        environment,
      };
    },
  );
}

const ChatData = Type.Object({
  chat_id: Type.String(),
  pathway_id: Type.String(),
  assistant_responses: Type.Array(Type.String(), { description: 'What the pathway said in answer to this message' }),
  current_node_id: Nullable(Type.String()),
  current_node_name: Nullable(Type.String()),
  chat_history: Type.Array(Type.Object({ role: Type.String(), content: Type.String() })),
  variables: Type.Record(Type.String(), Type.Unknown()),
  pathway_logs: Type.Array(Type.Unknown(), { description: 'Every step so far, as in a call record' }),
  ended: Type.Boolean({ description: 'An end node or a transfer was reached' }),
  completed: Type.Boolean({ description: 'The same as ended, under the hosted API name' }),
});
const ChatReply = Type.Object({ data: ChatData, errors: Type.Null() });
const ChatParams = Type.Object({ id: Type.String() });

/** Pathway chat: a pathway run as text with the call's own runner (src/pathways/chat.ts). */
export async function pathwayChatRoutes(app: Api, services: Services): Promise<void> {
  const tags = ['Pathways'];
  app.post(
    '/pathway/chat/create',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Start a pathway chat',
        description:
          'Starts a text conversation with a pathway (its production version unless pathway_version is ' +
          'given, or its draft when none is published), using the offline model or the configured language model.',
        body: Type.Object(
          {
            pathway_id: Type.String({ minLength: 1 }),
            start_node_id: Type.Optional(Type.String()),
            pathway_version: Type.Optional(Type.Integer({ minimum: 0 })),
            request_data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({
              chat_id: Type.String(),
              message: Type.String(),
              variables: Type.Record(Type.String(), Type.Unknown()),
            }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      assertValid(request);
      const accountId = request.account.id;
      const body = request.body;
      const version = body.pathway_version ?? null;
      if (!(await services.pathways.resolveVersion(accountId, body.pathway_id, version))) {
        if (version === null || !(await services.pathways.get(accountId, body.pathway_id))) throw notFound('Pathway');
        throw new ApiError('NOT_FOUND', `Pathway version ${version} not found`);
      }
      const errors: string[] = [];
      const settings = await normalizeCallSettings(
        {
          pathway_id: body.pathway_id,
          ...(version !== null && { pathway_version: version }),
          ...(body.start_node_id !== undefined && { start_node_id: body.start_node_id }),
          request_data: body.request_data ?? {},
        },
        NO_TOOLS,
        errors,
        { requirePhone: false, requireTask: false },
      );
      assertValid(request, errors);
      const variables = { ...(body.request_data ?? {}) };
      const chatId = services.pathwayChats.create(accountId, { ...settings, phone_number: '' }, variables);
      return { data: { chat_id: chatId, message: 'Chat instance created successfully', variables }, errors: null };
    },
  );

  app.post(
    '/pathway/chat/:id',
    {
      // The message is optional: a POST without a body (the opening words only) is an empty one.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags,
        summary: 'Send a message to a pathway chat',
        description: 'The first message (or an empty one) also returns the opening words of the start node.',
        params: ChatParams,
        body: Type.Object({ message: Type.Optional(Type.String({ maxLength: 4000 })) }, { additionalProperties: true }),
        response: { 200: ChatReply, ...errorResponses },
      },
    },
    async (request) => {
      const data = await services.pathwayChats.send(request.account.id, request.params.id, request.body.message);
      if (!data) throw notFound('Pathway chat');
      return { data, errors: null };
    },
  );

  app.get(
    '/pathway/chat/:id',
    {
      // The message is optional: a POST without a body (the opening words only) is an empty one.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags,
        summary: 'Get a pathway chat',
        params: ChatParams,
        response: { 200: ChatReply, ...errorResponses },
      },
    },
    async (request) => {
      const data = services.pathwayChats.get(request.account.id, request.params.id);
      if (!data) throw notFound('Pathway chat');
      return { data, errors: null };
    },
  );
}
