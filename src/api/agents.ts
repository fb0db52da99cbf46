import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams, SuccessMessage } from '../schemas/common.js';
import { Agent, AgentCreate, AgentUpdate, mergeAgent, toolIdsOf } from '../schemas/agent.js';
import { notFound } from '../errors.js';
import { toolResolver } from '../schemas/call-request.js';
import { assertValid } from './validation.js';

const tags = ['Agents'];

/**
 * Problems with the ids of a `tools` value: each must name a tool or knowledge base of the account. Reads the
 * raw value so that it can run alongside schema validation and report every problem at once.
 */
export async function unknownToolErrors(
  services: Services,
  accountId: string,
  tools: unknown,
  field = 'tools',
): Promise<string[]> {
  const refs = toolIdsOf(tools);
  if (refs.length === 0) return [];
  const resolved = await toolResolver(services, accountId)(refs.map((r) => r.id));
  const found = new Set([...resolved.tools.map((t) => t.tool_id), ...resolved.knowledgeBases]);
  return refs
    .filter((r) => !found.has(r.id))
    .map((r) => `${field}[${r.index}] is not a tool or knowledge base of this account: ${JSON.stringify(r.id)}`);
}

function toolsOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null ? (body as { tools?: unknown }).tools : undefined;
}

/** Agents: seed 2.6 and 4.6, CONTRACT.md section 9. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/agents',
    {
      // Tool ids are checked against the account next to the schema's problems.
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create an agent',
        description: 'Only prompt is required. Defaults: voice mason, model enhanced, max_duration 30, language en-US.',
        body: AgentCreate,
        response: {
          200: Type.Object({ status: Type.Literal('success'), agent_id: Type.String(), agent: Agent }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      assertValid(request, await unknownToolErrors(services, request.account.id, toolsOf(request.body)));
      const agent = await services.agents.create(request.account.id, mergeAgent(undefined, request.body));
      return { status: 'success' as const, agent_id: agent.agent_id, agent };
    },
  );

  app.get(
    '/agents',
    {
      schema: {
        tags,
        summary: 'List agents',
        description: 'Every agent of the account, oldest first, with the fields of seed 2.6 (null where unset).',
        response: { 200: Type.Object({ agents: Type.Array(Agent) }), ...errorResponses },
      },
    },
    async (request) => ({ agents: await services.agents.list(request.account.id) }),
  );

  app.get(
    '/agents/:id',
    {
      schema: {
        tags,
        summary: 'Get an agent',
        params: IdParams,
        response: { 200: Type.Object({ status: Type.Literal('success'), agent: Agent }), ...errorResponses },
      },
    },
    async (request) => {
      const agent = await services.agents.get(request.account.id, request.params.id);
      if (!agent) throw notFound('Agent');
      return { status: 'success' as const, agent };
    },
  );

  app.post(
    '/agents/:id',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Update an agent',
        description: 'Fields sent replace the stored ones; fields not sent are kept; null clears an optional field.',
        params: IdParams,
        body: AgentUpdate,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            updates: Type.Record(Type.String(), Type.Unknown(), {
              description: 'The settings sent, as now stored (the hosted API answers with these)',
            }),
            agent: Agent,
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const existing = await services.agents.get(request.account.id, request.params.id);
      if (!existing) throw notFound('Agent');
      assertValid(request, await unknownToolErrors(services, request.account.id, toolsOf(request.body)));
      const agent = await services.agents.modify(request.account.id, request.params.id, (stored) => {
        const { agent_id: _id, created_at: _c, ...current } = stored;
        return mergeAgent(current, request.body);
      });
      if (!agent) throw notFound('Agent');
      const sent = new Set(Object.keys(request.body));
      const updates = Object.fromEntries(Object.entries(agent).filter(([key]) => sent.has(key)));
      return { status: 'success' as const, message: 'Agent updated successfully', updates, agent };
    },
  );

  const removeSchema = {
    tags,
    summary: 'Delete an agent',
    params: IdParams,
    response: { 200: SuccessMessage, ...errorResponses },
  };
  const remove = async (accountId: string, id: string) => {
    if (!(await services.agents.delete(accountId, id))) throw notFound('Agent');
    return { status: 'success' as const, message: 'Agent deleted successfully' };
  };
  app.delete('/agents/:id', { schema: removeSchema }, (request) => remove(request.account.id, request.params.id));
  // The hosted API deletes with a POST to .../delete.
  app.post('/agents/:id/delete', { schema: { ...removeSchema, summary: 'Delete an agent (POST form)' } }, (request) =>
    remove(request.account.id, request.params.id),
  );
}
