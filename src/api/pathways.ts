import { Type, type Static } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { ErrorResponse, errorResponses, FreeObject, IdParams, Nullable, SuccessMessage } from '../schemas/common.js';
import type { PathwayLogEntry } from '../pathways/logs.js';
import {
  PathwayCreateBody,
  PathwayDetail,
  PathwayEdgeSchema,
  GraphNodes,
  PathwayUpdateBody,
  PathwayVersionBody,
  PublishBody,
  type Environment,
  VersionDetail,
  VersionSummary,
} from '../schemas/pathway.js';
import { checkPathwayGraph, type PathwayGraph } from '../domain/pathway-graph.js';
import { ApiError, conflict, notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
import { CallReferenceChecker } from './call-references.js';
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
    await registerOlderPathwayRoutes(scope as Api, services);
  });
}

const UpdateReply = Type.Object({
  status: Type.Literal('success'),
  message: Type.String(),
  pathway_data: Type.Object({
    pathway_id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    nodes: GraphNodes,
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
    pathway_data: { pathway_id: id, name, description, nodes, edges },
  };
}

/** Version n of a pathway (0: the production one), or the 404 that says what is missing. */
async function versionOf(services: Services, accountId: string, id: string, n: number): Promise<VersionDetail> {
  const result = await services.pathways.getVersion(accountId, id, n);
  if (result.ok) return result.version;
  if (result.reason === 'pathway') throw notFound('Pathway');
  if (result.reason === 'unpublished')
    throw new ApiError('NOT_FOUND', 'Pathway has no published version: publish one to production first');
  throw new ApiError('NOT_FOUND', `Pathway version ${n} not found`);
}

/**
 * Changes version n with the fields the body sends (name, nodes, edges); the resulting graph must
 * be valid. Returns the version as it now is, and whether its graph changed.
 */
async function updateVersionFrom(
  services: Services,
  request: FastifyRequest,
  id: string,
  n: number,
): Promise<{ version: VersionDetail; graphChanged: boolean }> {
  const accountId = request.account.id;
  const graph = checkBody(request, await versionOf(services, accountId, id, n), false);
  const name = (request.body as PathwayUpdateBody).name;
  await services.pathways.updateVersion(accountId, id, n, { ...(name !== undefined && { name }), ...graph });
  return { version: await versionOf(services, accountId, id, n), graphChanged: graph !== undefined };
}

/** The pathway a body of the older routes names, by the first of `keys` it carries. */
function pathwayIdIn(body: unknown, keys: readonly string[]): string {
  const key = isRecord(body) ? keys.find((k) => body[k] !== undefined && body[k] !== null) : undefined;
  const raw = key !== undefined && isRecord(body) ? body[key] : undefined;
  if (key !== undefined && typeof raw !== 'string')
    throw validationError([`${key} must be a string: the id of the pathway`]);
  if (typeof raw !== 'string' || raw.trim() === '')
    throw validationError([`${keys[0]} is required: the id of the pathway`]);
  return raw.trim();
}

/** A version number a body of the older routes gives, if any. */
function versionNumberIn(body: unknown): number | undefined {
  const raw = isRecord(body) ? body.version_number : undefined;
  if (raw === undefined || raw === null) return undefined;
  const n = typeof raw === 'string' && /^\d+$/.test(raw.trim()) ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1)
    throw validationError(['version_number must be a whole number of 1 or more']);
  return n;
}

/**
 * Publishes version `versionRef` (an id or a number) of a pathway to an environment; without one,
 * the draft as it is now is saved as the next version and that is published.
 */
async function publishVersion(
  services: Services,
  accountId: string,
  pathwayId: string,
  versionRef: string | number | null | undefined,
  environment: Environment,
) {
  let ref = versionRef;
  if (ref === undefined || ref === null) {
    const pathway = await services.pathways.get(accountId, pathwayId);
    if (!pathway) throw notFound('Pathway');
    if (pathway.nodes.length === 0)
      throw validationError(['version_id is required: the draft has no nodes to publish']);
    const draft = checkPathwayGraph(pathway.nodes, pathway.edges, { requireNodes: true });
    if (!draft.ok) throw validationError(draft.errors.map((e) => `the draft: ${e}`));
    const saved = await services.pathways.createVersion(accountId, pathwayId, { name: pathway.name, ...draft.graph });
    if (!saved) throw notFound('Pathway');
    ref = saved.version_number;
  }
  const result = await services.pathways.publish(accountId, pathwayId, ref, environment);
  if (!result.ok) {
    if (result.reason === 'pathway') throw notFound('Pathway');
    throw new ApiError('NOT_FOUND', `Pathway version ${String(ref)} not found`);
  }
  return {
    status: 'success' as const,
    message: 'Pathway published successfully',
    version_number: result.version_number,
    environment,
  };
}

/**
 * The older routes with the pathway's id in the body, as the hosted API's own CLI and older
 * clients call them (all under /convo_pathway, also under /v1):
 * - `update` {id, version_number?}: changes that version, or the draft without one;
 * - `create-version` {pathway_id, name?, nodes?, edges?}: saves the graph given (or the draft) as
 *   the next version;
 * - `publish` {id, version_number | version_id, environment};
 * - `get_one` {id, version_number?}: that version, or the draft;
 * - `duplicate` {pathwayID | pathway_id | id, name?}: a new pathway with a copy of the draft.
 * A graph these routes write to a version also becomes the draft, the working copy that GET
 * /convo_pathway/{id} shows, when that version is the latest one.
 */
export async function registerOlderPathwayRoutes(app: Api, services: Services): Promise<void> {
  const hidden = { hide: true, tags };
  const looseBody = Type.Object({}, { additionalProperties: true });

  /** Makes a version's graph the draft too, when it is the pathway's latest version. */
  async function followLatest(accountId: string, pathwayId: string, version: VersionDetail): Promise<void> {
    if (version.is_latest)
      await services.pathways.update(accountId, pathwayId, { nodes: version.nodes, edges: version.edges });
  }

  app.post(
    '/convo_pathway/update',
    {
      attachValidation: true,
      schema: {
        ...hidden,
        summary: 'Update the draft of a pathway, or one of its versions (older form, id in the body)',
        body: Type.Intersect([
          Type.Object({ id: Type.String({ minLength: 1 }), version_number: Type.Optional(Type.Unknown()) }),
          PathwayUpdateBody,
        ]),
        response: { 200: UpdateReply, ...errorResponses },
      },
    },
    async (request) => {
      const id = pathwayIdIn(request.body, ['id', 'pathway_id']);
      const n = versionNumberIn(request.body);
      if (n === undefined) return updateDraft(services, request, id);
      const accountId = request.account.id;
      const { version, graphChanged } = await updateVersionFrom(services, request, id, n);
      if (graphChanged) await followLatest(accountId, id, version);
      const pathway = await services.pathways.get(accountId, id);
      if (!pathway) throw notFound('Pathway');
      const { name, nodes, edges } = version;
      return {
        status: 'success' as const,
        message: 'Pathway version updated',
        pathway_data: { pathway_id: id, name, description: pathway.description, nodes, edges },
      };
    },
  );

  app.post(
    '/convo_pathway/create-version',
    {
      attachValidation: true,
      schema: {
        ...hidden,
        summary: 'Save a pathway version (older form, pathway_id in the body)',
        body: Type.Intersect([Type.Object({ pathway_id: Type.String({ minLength: 1 }) }), PathwayUpdateBody]),
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const id = pathwayIdIn(request.body, ['pathway_id', 'id']);
      const pathway = await services.pathways.get(accountId, id);
      if (!pathway) throw notFound('Pathway');
      const given = checkBody(request, pathway, false);
      const graph = checkPathwayGraph(given?.nodes ?? pathway.nodes, given?.edges ?? pathway.edges, {
        requireNodes: true,
      });
      if (!graph.ok) throw validationError(given ? graph.errors : graph.errors.map((e) => `the draft: ${e}`));
      const name = (request.body as PathwayUpdateBody).name ?? pathway.name;
      const version = await services.pathways.createVersion(accountId, id, { name, ...graph.graph });
      if (!version) throw notFound('Pathway');
      if (given) await services.pathways.update(accountId, id, graph.graph);
      return {
        status: 'success' as const,
        message: 'Version created successfully',
        pathway_id: id,
        data: { ...version, pathway_id: id },
        errors: null,
      };
    },
  );

  app.post(
    '/convo_pathway/publish',
    { schema: { ...hidden, summary: 'Publish a pathway version (older form, id in the body)', body: looseBody } },
    async (request) => {
      const body = request.body as Record<string, unknown>;
      const id = pathwayIdIn(body, ['id', 'pathway_id']);
      const environment = body.environment ?? 'production';
      if (environment !== 'production' && environment !== 'staging')
        throw validationError(['environment must be production or staging']);
      const versionId = body.version_id;
      if (
        versionId !== undefined &&
        versionId !== null &&
        typeof versionId !== 'string' &&
        typeof versionId !== 'number'
      )
        throw validationError(['version_id must be a version id or a version number']);
      return publishVersion(services, request.account.id, id, versionNumberIn(body) ?? versionId, environment);
    },
  );

  app.post(
    '/convo_pathway/get_one',
    {
      schema: {
        ...hidden,
        summary: 'Get a pathway or one of its versions (older form, id in the body)',
        body: looseBody,
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const id = pathwayIdIn(request.body, ['id', 'pathway_id']);
      const n = versionNumberIn(request.body);
      if (n === undefined) {
        const pathway = await services.pathways.get(accountId, id);
        if (!pathway) throw notFound('Pathway');
        return { status: 'success' as const, data: pathway, errors: null };
      }
      return { status: 'success' as const, data: await versionOf(services, accountId, id, n), errors: null };
    },
  );

  app.post(
    '/convo_pathway/duplicate',
    { schema: { ...hidden, summary: 'Duplicate a pathway (its draft)', body: looseBody } },
    async (request) => {
      const accountId = request.account.id;
      const body = request.body as Record<string, unknown>;
      const id = pathwayIdIn(body, ['pathwayID', 'pathway_id', 'id']);
      if (body.name !== undefined && (typeof body.name !== 'string' || body.name.trim() === ''))
        throw validationError(['name must be a non-empty string']);
      const source = await services.pathways.get(accountId, id);
      if (!source) throw notFound('Pathway');
      const name = typeof body.name === 'string' ? body.name.trim() : `Copy of ${source.name}`;
      const copy = await services.pathways.create(accountId, {
        name,
        description: source.description,
        nodes: source.nodes,
        edges: source.edges,
      });
      return {
        status: 'success' as const,
        id: copy,
        pathway_id: copy,
        data: { id: copy, pathway_id: copy, name },
        errors: null,
      };
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
        description: 'Oldest first, as a JSON array (the hosted API answers a bare list).',
        params: IdParams,
        response: { 200: Type.Array(VersionSummary), ...errorResponses },
      },
    },
    async (request) => {
      const versions = await services.pathways.listVersions(request.account.id, request.params.id);
      if (!versions) throw notFound('Pathway');
      return versions;
    },
  );

  app.delete(
    `${base}/:id/version/:n`,
    {
      schema: {
        tags,
        summary: 'Delete a pathway version',
        description:
          'n is a version_number. Refused (409) while production or staging uses it: publish another first. ' +
          'The other versions keep their numbers.',
        params: Type.Object({ id: Type.String(), n: Type.Integer({ minimum: 1 }) }),
        response: { 200: SuccessMessage, 409: ErrorResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { id, n } = request.params;
      const result = await services.pathways.deleteVersion(request.account.id, id, n);
      if (result === 'live') throw conflict(`Pathway version ${n} is published: publish another version first`);
      if (!result) {
        await versionOf(services, request.account.id, id, n);
        throw new ApiError('NOT_FOUND', `Pathway version ${n} not found`);
      }
      return { status: 'success' as const, message: 'Version deleted successfully' };
    },
  );

  app.get(
    `${base}/:id/version/:n`,
    {
      schema: {
        tags,
        summary: 'Get a pathway version',
        description: "n is a version_number (0: the live, production, version) or a version's id.",
        params: Type.Object({
          id: Type.String(),
          n: Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 })], {
            'x-message': 'must be a version number or a version id',
          }),
        }),
        response: { 200: VersionDetail, ...errorResponses },
      },
    },
    async (request) => {
      const { id, n } = request.params;
      const accountId = request.account.id;
      if (typeof n === 'number') return versionOf(services, accountId, id, n);
      const versions = await services.pathways.listVersions(accountId, id);
      if (!versions) throw notFound('Pathway');
      const found = versions.find((v) => v.id === n);
      if (!found) throw new ApiError('NOT_FOUND', `Pathway version ${n} not found`);
      return versionOf(services, accountId, id, found.version_number);
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
      const { version } = await updateVersionFrom(services, request, id, n);
      return { status: 'success' as const, message: 'Pathway version updated', data: version };
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
    async (request) =>
      publishVersion(
        services,
        request.account.id,
        request.params.id,
        request.body.version_id,
        request.body.environment ?? 'production',
      ),
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
      // As for a call: a graph to walk, and a start node that is one of its nodes.
      const errors: string[] = [];
      await new CallReferenceChecker(services, accountId, { ownCarrier: false }).check(body, errors);
      assertValid(request, errors);
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
      schema: {
        tags,
        summary: 'Get a pathway chat',
        description:
          "The chat's conversation so far, oldest first, as the hosted API answers it: `data` is the list of " +
          'messages (the `chat_history` of the last answer).',
        params: ChatParams,
        response: {
          200: Type.Object({ data: ChatData.properties.chat_history, errors: Type.Null() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const chat = services.pathwayChats.get(request.account.id, request.params.id);
      if (!chat) throw notFound('Pathway chat');
      return { data: chat.chat_history, errors: null };
    },
  );

  app.get(
    '/pathway_calls/:id',
    {
      schema: {
        tags,
        summary: "A pathway call's turns",
        description:
          "The call's pathway steps as a conversation, in order: one line for what the caller said (`role` user) " +
          'and one for what the agent said (`role` assistant) at each step, with the step, node and edge taken; a ' +
          'step with neither has `role` system and `text` null. An empty list for a call without a pathway.',
        params: IdParams,
        response: { 200: Type.Array(FreeObject()), ...errorResponses },
      },
    },
    async (request) => {
      const call = await services.calls.get(request.account.id, request.params.id);
      if (!call) throw notFound('Call');
      const steps = call.pathway_logs ? (JSON.parse(call.pathway_logs) as PathwayLogEntry[]) : [];
      return steps.flatMap((step): { role: string; text: string | null }[] => {
        const about = {
          step: step.step,
          at: step.at,
          node_id: step.node_id,
          node_name: step.node_name,
          event: step.event,
          chosen_edge: step.chosen_edge,
          variables: step.variables,
        };
        const lines = [
          ...(step.heard ? [{ role: 'user', text: step.heard, ...about }] : []),
          ...(step.said ? [{ role: 'assistant', text: step.said, ...about }] : []),
        ];
        return lines.length > 0 ? lines : [{ role: 'system', text: null, ...about }];
      });
    },
  );
}
