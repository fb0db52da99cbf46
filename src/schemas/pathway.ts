import { Type, type Static } from '@sinclair/typebox';
import { Nullable, StringEnum } from './common.js';
import { NODE_TYPES, type GraphNode, type PathwayEdge } from '../domain/pathway-graph.js';

/*
 * The schemas type-check the shape of nodes and edges so that the OpenAPI document shows it; the
 * rules between fields (unique ids, edge targets, one start node, per-type data) live in
 * src/domain/pathway-graph.ts, whose messages match Ajv's word for word so that a problem found
 * by both is reported once.
 */

const NodeData = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'Shown in the editor and in pathway logs' }),
    isStart: Type.Optional(Type.Boolean({ description: 'Exactly one node of a pathway starts the call' })),
    isGlobal: Type.Optional(Type.Boolean({ description: 'Reachable from every node; needs globalLabel' })),
    globalLabel: Type.Optional(Type.String()),
    text: Type.Optional(Type.String({ description: 'Static speech' })),
    prompt: Type.Optional(Type.String({ description: 'Instructions for generated speech' })),
    condition: Type.Optional(Type.String({ description: 'The node loops until it is met' })),
    extractVars: Type.Optional(
      Type.Array(Type.Array(Type.Unknown()), {
        description: '[[name, type (string|integer|number|boolean), description], ...]',
      }),
    ),
    modelOptions: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'modelName, interruptionThreshold, temperature' }),
    ),
  },
  {
    additionalProperties: true,
    description:
      'Per type: Default text or prompt; Transfer Call transferNumber; Webhook url, method, headers, body, ' +
      'responseData, timeoutValue, max_retries; Press Button digit or sequence; SMS smsBody, phoneNumber; ' +
      'Transfer Pathway transferPathway, transferPathwayNode, version; Knowledge Base kb or text. ' +
      'Other fields are kept as sent.',
  },
);

export const PathwayEdgeSchema = Type.Unsafe<PathwayEdge>(
  Type.Object(
    {
      id: Type.String({ minLength: 1 }),
      source: Type.String({ description: 'Node id' }),
      target: Type.String({ description: 'Node id' }),
      label: Type.Optional(
        Type.String({
          minLength: 1,
          description:
            'What the agent reads to choose this path; required, here or as data.label (answers carry it in both places)',
        }),
      ),
      description: Type.Optional(Type.String({ description: 'Also read from, and answered in, data.description' })),
    },
    {
      additionalProperties: true,
      description:
        'Optional `conditions`: [{variable, operator (==, !=, >, >=, <, <=, contains, exists, not_exists), value}] ' +
        'on extracted variables; the edge is open only when all hold.',
    },
  ),
);

/**
 * A member of `nodes`: a node (id, type and data, which the graph check requires of every member
 * but the global config entry), or the hosted API's place for the global prompt, an entry with no
 * id, type or data. One object schema, so that a node's problems are named field by field.
 */
const GraphNodeSchema = Type.Unsafe<GraphNode>(
  Type.Object(
    {
      id: Type.Optional(Type.String({ minLength: 1 })),
      type: Type.Optional(
        Type.String({
          description: `One of ${NODE_TYPES.join(', ')}; case, spaces, dashes and underscores are ignored`,
        }),
      ),
      data: Type.Optional(NodeData),
      globalConfig: Type.Optional(
        Type.Object(
          { globalPrompt: Type.Optional(Type.String({ description: 'What every node of the pathway follows' })) },
          { additionalProperties: true, description: 'Only in the global config entry (no id, type or data)' },
        ),
      ),
    },
    {
      additionalProperties: true,
      description: 'A node {id, type, data}, or the global config entry {globalConfig: {globalPrompt}}',
    },
  ),
);

export const GraphNodes = Type.Array(GraphNodeSchema);
const Edges = Type.Array(PathwayEdgeSchema);

export const PathwayCreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    description: Type.Optional(Nullable(Type.String())),
    nodes: Type.Optional(GraphNodes),
    edges: Type.Optional(Edges),
  },
  { additionalProperties: true },
);
export type PathwayCreateBody = Static<typeof PathwayCreateBody>;

export const PathwayUpdateBody = Type.Partial(PathwayCreateBody, { additionalProperties: true, 'x-update': true });
export type PathwayUpdateBody = Static<typeof PathwayUpdateBody>;

/** Seed 2.8; `nodes` as GET returns them, the global config entry among them. */
export const PathwayVersionBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    nodes: Type.Array(GraphNodeSchema, { minItems: 1 }),
    edges: Edges,
  },
  { additionalProperties: true },
);
export type PathwayVersionBody = Static<typeof PathwayVersionBody>;

export const ENVIRONMENTS = ['production', 'staging'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export const PublishBody = Type.Object(
  {
    version_id: Type.Optional(
      Nullable(
        Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })], {
          description: 'The version id, or its version_number; absent or null: the draft, saved as a new version',
          'x-message': 'must be a version id or a version number',
        }),
      ),
    ),
    environment: Type.Optional(StringEnum(ENVIRONMENTS, { description: 'Default production' })),
  },
  { additionalProperties: true },
);
export type PublishBody = Static<typeof PublishBody>;

const VersionNumber = Nullable(Type.Integer());

export const PathwaySummary = Type.Object({
  id: Type.String(),
  pathway_id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  production_version: VersionNumber,
  production_version_number: Nullable(
    Type.Integer({ description: 'The same as production_version, under the name some clients read' }),
  ),
  staging_version: VersionNumber,
  latest_version: VersionNumber,
  folder_id: Nullable(
    Type.String({ description: 'The folder it is filed in (POST /v1/pathway/folders/move); null: the top' }),
  ),
});
export type PathwaySummary = Static<typeof PathwaySummary>;

/** A pathway with its draft graph. */
export const PathwayDetail = Type.Object({
  ...PathwaySummary.properties,
  nodes: GraphNodes,
  edges: Edges,
});
export type PathwayDetail = Static<typeof PathwayDetail>;

export const VersionSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  version_number: Type.Integer(),
  created_at: Type.String(),
  is_production: Type.Boolean(),
  is_staging: Type.Boolean(),
  is_prev_published: Type.Boolean({
    description: 'It has been published to production (it may since have been replaced): not a draft',
  }),
  is_latest: Type.Boolean({ description: 'The highest version number' }),
});
export type VersionSummary = Static<typeof VersionSummary>;

export const VersionDetail = Type.Object({
  ...VersionSummary.properties,
  pathway_id: Type.String(),
  nodes: GraphNodes,
  edges: Edges,
});
export type VersionDetail = Static<typeof VersionDetail>;
