import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams, Nullable, SuccessMessage } from '../schemas/common.js';
import {
  CustomTool,
  CustomToolUpdate,
  ListedTool,
  StoredTool,
  ToolDetails,
  listedTool,
  normalizeTool,
} from '../schemas/tool.js';
import { notFound } from '../errors.js';
import { callToolOf } from '../schemas/call-request.js';
import { assertValid } from './validation.js';

const tags = ['Tools'];

/** Custom tools: seed 4.5 and CONTRACT.md section 9. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/tools',
    {
      schema: {
        tags,
        summary: 'Create a custom tool',
        body: CustomTool,
        response: { 200: Type.Object({ status: Type.Literal('success'), tool_id: Type.String() }), ...errorResponses },
      },
    },
    async (request) => {
      const tool = await services.tools.create(request.account.id, normalizeTool(request.body));
      return { status: 'success' as const, tool_id: tool.tool_id };
    },
  );

  app.get(
    '/tools',
    {
      schema: {
        tags,
        summary: 'List custom tools',
        response: {
          200: Type.Object({ status: Type.Literal('success'), tools: Type.Array(ListedTool) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      tools: (await services.tools.list(request.account.id)).map(listedTool),
    }),
  );

  app.get(
    '/tools/:id',
    {
      schema: {
        tags,
        summary: 'Get a custom tool',
        params: IdParams,
        response: { 200: ToolDetails, ...errorResponses },
      },
    },
    async (request) => {
      const tool = await services.tools.get(request.account.id, request.params.id);
      if (!tool) throw notFound('Tool');
      const listed = listedTool(tool);
      return { ...listed, status: 'success' as const, tool: listed };
    },
  );

  app.post(
    '/tools/:id',
    {
      // The update's fields are checked again once merged with the stored tool.
      attachValidation: true,
      schema: {
        tags,
        summary: 'Update a custom tool',
        description: 'Fields sent replace the stored ones; fields not sent are kept.',
        params: IdParams,
        body: CustomToolUpdate,
        response: {
          200: Type.Object({ status: Type.Literal('success'), message: Type.String(), tool: StoredTool }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const existing = await services.tools.get(request.account.id, request.params.id);
      if (!existing) throw notFound('Tool');
      assertValid(request);
      const { tool_id: _id, created_at: _c, updated_at: _u, ...current } = existing;
      const merged = normalizeTool({ ...current, ...request.body } as CustomTool);
      const tool = await services.tools.replace(request.account.id, request.params.id, merged);
      if (!tool) throw notFound('Tool');
      return { status: 'success' as const, message: 'Tool updated successfully', tool };
    },
  );

  app.post(
    '/tools/:id/test',
    {
      schema: {
        tags,
        summary: 'Test a custom tool',
        description:
          'Runs the tool once, as a call would: `input` is what the agent would give it (checked against ' +
          "input_schema), `variables` stand in for the call's variables in its templates, and secrets are " +
          'filled in. `response` is what the call would get from it (the `response` mapping, else `{data}`).',
        params: IdParams,
        body: Type.Object(
          {
            input: Type.Optional(Type.Unknown({ description: 'The input, as the agent would give it' })),
            variables: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({
              ok: Type.Boolean(),
              response: Type.Record(Type.String(), Type.Unknown()),
              spoken_result: Type.String({ description: 'What an agent would be told it returned' }),
              error: Nullable(Type.String({ description: 'Why it failed or was skipped' })),
              skipped: Type.Boolean({ description: 'The input did not match input_schema: it was not run' }),
            }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const tool = await services.tools.get(accountId, request.params.id);
      if (!tool) throw notFound('Tool');
      const body = request.body;
      const result = await services.testTool(accountId, callToolOf(tool), body.input ?? {}, body.variables ?? {});
      return {
        data: {
          ok: result.ok,
          response: result.variables,
          spoken_result: result.spokenResult,
          error: result.error,
          skipped: result.skipped === true,
        },
        errors: null,
      };
    },
  );

  app.delete(
    '/tools/:id',
    {
      schema: {
        tags,
        summary: 'Delete a custom tool',
        params: IdParams,
        response: { 200: SuccessMessage, ...errorResponses },
      },
    },
    async (request) => {
      if (!(await services.tools.delete(request.account.id, request.params.id))) throw notFound('Tool');
      return { status: 'success' as const, message: 'Tool deleted successfully' };
    },
  );
}
