import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable, checked } from './common.js';

const Method = Type.String({ enum: ['GET', 'POST', 'get', 'post'], 'x-message': 'must be GET or POST' });

/** Seed 2.5: the body of Create a Custom Tool, and an inline item of Send Call's `tools`. */
export const CustomTool = Type.Object(
  {
    name: checked(Type.String({ description: 'Name the AI sees; no built-in names or reserved words' }), 'tool_name'),
    description: Type.String({ minLength: 1, description: 'What the tool does, as the AI sees it' }),
    speech: Type.Optional(Type.String({ description: 'Spoken while the tool runs' })),
    url: checked(
      Type.String({ description: 'https:// endpoint; may begin with a prompt variable ({{webhook_url}})' }),
      'tool_url',
    ),
    method: Type.Optional(Method),
    headers: Type.Optional(FreeObject({ description: 'Supports prompt variables' })),
    body: Type.Optional(
      Type.Union([FreeObject(), Type.String()], {
        description: 'Supports {{input}} and {{input.<field>}}; GET sends none',
      }),
    ),
    query: Type.Optional(FreeObject({ description: 'Appended to the URL as query parameters' })),
    input_schema: Type.Optional(FreeObject({ description: 'Shape the AI input must match' })),
    response: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description: 'New variable name -> JSON path (e.g. $.data.id) in the response',
      }),
    ),
    timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Milliseconds; default 10000' })),
  },
  { additionalProperties: true },
);
export type CustomTool = Static<typeof CustomTool>;

/** The same fields, all optional: the body of an update. */
export const CustomToolUpdate = Type.Partial(CustomTool, { additionalProperties: true, 'x-update': true });

export const StoredTool = Type.Object(
  {
    tool_id: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
    name: Type.String(),
    description: Type.String(),
    speech: Type.Optional(Type.String()),
    url: Type.String(),
    method: Type.String(),
    headers: Type.Optional(FreeObject()),
    body: Type.Optional(Type.Union([FreeObject(), Type.String()])),
    query: Type.Optional(FreeObject()),
    input_schema: Type.Optional(FreeObject()),
    response: Type.Optional(Type.Record(Type.String(), Type.String())),
    timeout: Type.Number(),
  },
  { additionalProperties: true },
);
export type StoredTool = Static<typeof StoredTool>;

/**
 * A stored tool as the hosted API lists it: the definition under `tool`, beside `label` and
 * `public`. The stored fields stay at the top level too, for clients of the flat form.
 */
export const ListedTool = Type.Object(
  {
    ...StoredTool.properties,
    label: Nullable(Type.String()),
    public: Type.Boolean({ description: 'Always false: tools belong to one account' }),
    tool: Type.Object(
      { ...CustomTool.properties, method: Type.String(), timeout: Type.Number() },
      {
        additionalProperties: true,
        description: 'The definition, as created',
      },
    ),
  },
  { additionalProperties: true },
);
export type ListedTool = Static<typeof ListedTool>;

export function listedTool(stored: StoredTool): ListedTool {
  const { tool_id: _id, created_at: _c, updated_at: _u, ...definition } = stored;
  return { ...stored, label: null, public: false, tool: definition };
}

/** GET /v1/tools/{id}: the flat tool, and the hosted API's `{status, tool: <listed tool>}`. */
export const ToolDetails = Type.Object(
  {
    ...StoredTool.properties,
    status: Type.Literal('success'),
    label: Nullable(Type.String()),
    public: Type.Boolean(),
    tool: ListedTool,
  },
  { additionalProperties: true },
);

/** Fills the seed's defaults and keeps only the fields of seed 2.5. */
export function normalizeTool(input: CustomTool): CustomTool & { method: 'GET' | 'POST'; timeout: number } {
  const { name, description, speech, url, method, headers, body, query, input_schema, response, timeout } = input;
  const upper = (method ?? 'GET').toUpperCase() === 'POST' ? 'POST' : 'GET';
  return {
    name,
    description,
    url,
    method: upper,
    timeout: timeout ?? 10000,
    ...(speech !== undefined && { speech }),
    ...(headers !== undefined && { headers }),
    ...(body !== undefined && upper === 'POST' && { body }),
    ...(query !== undefined && { query }),
    ...(input_schema !== undefined && { input_schema }),
    ...(response !== undefined && { response }),
  };
}
