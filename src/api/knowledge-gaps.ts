import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams, Nullable, StringEnum } from '../schemas/common.js';
import { notFound } from '../errors.js';
import type { KnowledgeGap } from '../store/knowledge-gaps.js';

const GapSchema = Type.Object({
  id: Type.String(),
  call_id: Type.String({ description: 'The call it was asked on' }),
  persona_id: Nullable(Type.String()),
  knowledge_base_ids: Type.Array(Type.String(), { description: "The call's knowledge bases" }),
  question: Type.String({ description: 'What the caller asked' }),
  status: StringEnum(['open', 'resolved', 'dismissed'] as const),
  answer: Nullable(Type.String()),
  created_at: Type.String(),
  resolved_at: Nullable(Type.String()),
});
const GapReply = Type.Object({ data: GapSchema, errors: Type.Null() });
const GapList = Type.Object({
  data: Type.Object({ gaps: Type.Array(GapSchema), total: Type.Integer() }),
  errors: Type.Null(),
});
const ListQuery = {
  status: Type.Optional(StringEnum(['open', 'resolved', 'dismissed'] as const)),
  page: Type.Optional(Type.Integer({ minimum: 1, description: 'Counted from 1' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Per page (default 20)' })),
};
const ResolveBody = Type.Object(
  {
    answer: Type.Optional(Type.String({ minLength: 1, maxLength: 4000, description: 'The answer to the question' })),
    add_to_knowledge_base: Type.Optional(
      Type.Boolean({
        default: true,
        description: "Add the question and the answer to the call's knowledge bases, so agents answer it from now on",
      }),
    ),
  },
  { additionalProperties: true },
);

/**
 * Resolves a gap: with an answer, the question and its answer become a paragraph of each of the
 * call's knowledge bases still there (a new version of each), unless add_to_knowledge_base is false.
 */
async function resolve(
  services: Services,
  accountId: string,
  gap: KnowledgeGap,
  body: { answer?: string; add_to_knowledge_base?: boolean },
): Promise<KnowledgeGap> {
  const answer = body.answer?.trim() || null;
  if (answer && body.add_to_knowledge_base !== false)
    for (const kb of await services.knowledge.getMany(accountId, gap.knowledge_base_ids))
      await services.knowledge.update(accountId, kb.id, {
        words: { text: `${kb.text}\n\n${gap.question}\n${answer}`, change: 'gap answered' },
      });
  return (await services.knowledgeGaps.close(accountId, gap.id, { status: 'resolved', answer }))!;
}

const page = (query: { page?: number; limit?: number }) => {
  const limit = query.limit ?? 20;
  return { offset: ((query.page ?? 1) - 1) * limit, limit };
};

/**
 * Knowledge gaps: each question a caller asked that the call's knowledge bases had nothing on,
 * kept once per call, to answer (the answer added to the knowledge bases) or dismiss. Listed for
 * the account, by knowledge base, or by the persona whose calls they came from.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  const tags = ['Knowledge bases'];
  app.get(
    '/knowledge/gaps',
    {
      schema: {
        tags,
        summary: 'List knowledge gaps',
        description:
          "Questions callers asked that their call's knowledge bases had nothing on, newest first; by knowledge base and status.",
        querystring: Type.Object({ knowledge_base_id: Type.Optional(Type.String({ minLength: 1 })), ...ListQuery }),
        response: { 200: GapList, ...errorResponses },
      },
    },
    async (request) => {
      const { knowledge_base_id: knowledgeBaseId, status } = request.query;
      const found = await services.knowledgeGaps.list(
        request.account.id,
        { ...(knowledgeBaseId && { knowledgeBaseId }), ...(status && { status }) },
        page(request.query),
      );
      return { data: found, errors: null };
    },
  );

  app.post(
    '/knowledge/gaps/:id/resolve',
    {
      schema: {
        tags,
        summary: 'Resolve a knowledge gap',
        description:
          "With `answer`, the question and its answer are added to the call's knowledge bases (unless `add_to_knowledge_base` is false), so agents answer it from now on.",
        params: IdParams,
        body: ResolveBody,
        response: { 200: GapReply, ...errorResponses },
      },
    },
    async (request) => {
      const gap = await services.knowledgeGaps.get(request.account.id, request.params.id);
      if (!gap) throw notFound('Knowledge gap');
      return { data: await resolve(services, request.account.id, gap, request.body ?? {}), errors: null };
    },
  );

  app.post(
    '/knowledge/gaps/:id/dismiss',
    {
      schema: {
        tags,
        summary: 'Dismiss a knowledge gap',
        description: 'The question needs no answer; the knowledge bases stay as they are.',
        params: IdParams,
        response: { 200: GapReply, ...errorResponses },
      },
    },
    async (request) => {
      const gap = await services.knowledgeGaps.close(request.account.id, request.params.id, {
        status: 'dismissed',
        answer: null,
      });
      if (!gap) throw notFound('Knowledge gap');
      return { data: gap, errors: null };
    },
  );

  app.get(
    '/personas/:id/gaps',
    {
      schema: {
        tags: ['Personas'],
        summary: "List a persona's knowledge gaps",
        description: "Questions callers asked on the persona's calls that their knowledge bases had nothing on.",
        params: IdParams,
        querystring: Type.Object(ListQuery),
        response: { 200: GapList, ...errorResponses },
      },
    },
    async (request) => {
      if (!(await services.personas.get(request.account.id, request.params.id))) throw notFound('Persona');
      const { status } = request.query;
      const found = await services.knowledgeGaps.list(
        request.account.id,
        { personaId: request.params.id, ...(status && { status }) },
        page(request.query),
      );
      return { data: found, errors: null };
    },
  );

  app.post(
    '/personas/:id/gaps/:gap_id/resolve',
    {
      schema: {
        tags: ['Personas'],
        summary: "Resolve a persona's knowledge gap",
        description: 'As POST /v1/knowledge/gaps/{id}/resolve, for a gap of one of the persona’s calls.',
        params: Type.Object({ id: Type.String(), gap_id: Type.String() }),
        body: ResolveBody,
        response: { 200: GapReply, ...errorResponses },
      },
    },
    async (request) => {
      const gap = await services.knowledgeGaps.get(request.account.id, request.params.gap_id);
      if (!gap || gap.persona_id !== request.params.id) throw notFound('Knowledge gap');
      return { data: await resolve(services, request.account.id, gap, request.body ?? {}), errors: null };
    },
  );
}
