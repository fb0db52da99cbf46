import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { checked, errorResponses, IdParams, SuccessMessage } from '../schemas/common.js';
import {
  KnowledgeBaseSchema,
  KnowledgeFileSchema,
  KnowledgeLearnBody,
  KnowledgeUpdateBody,
  VectorCreateBody,
  VectorSchema,
  VectorUpdateBody,
  type KnowledgeBaseBody,
} from '../schemas/knowledge.js';
import { ApiError, notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
import { MAX_CRAWL_URLS } from '../knowledge/web.js';
import {
  documentKind,
  extractDocumentText,
  MAX_KNOWLEDGE_FILE_BYTES,
  MAX_KNOWLEDGE_TEXT_BYTES,
  tidyKnowledgeText,
  UnreadableDocument,
} from '../knowledge/extract.js';
import type { KnowledgeBase, KnowledgeFile } from '../store/knowledge.js';

const tags = ['Knowledge bases'];

/** A JSON body carries up to 1 MB of text, with room for its quoting. */
const TEXT_BODY_LIMIT = 2 * MAX_KNOWLEDGE_TEXT_BYTES + 64 * 1024;

const Envelope = <T extends Parameters<typeof Type.Object>[0]>(data: T) =>
  Type.Object({ data: Type.Object(data), errors: Type.Null() });
const KnowledgeReply = Type.Object({ data: KnowledgeBaseSchema, errors: Type.Null() });
const IncludeText = Type.Object({
  include_text: Type.Optional(Type.Boolean({ description: 'Include the text (also as the include-text header)' })),
});

function bodyOf(kb: KnowledgeBase, text?: string): KnowledgeBaseBody {
  return {
    id: kb.id,
    name: kb.name,
    description: kb.description,
    status: 'COMPLETED',
    type: kb.type,
    created_at: kb.created_at,
    updated_at: kb.updated_at,
    error_message: null,
    ...(kb.file && { file: kb.file }),
    ...(kb.source_urls && { source_urls: kb.source_urls.join(','), base_url: new URL(kb.source_urls[0]!).origin }),
    ...(text !== undefined && { text }),
  };
}

/** The older API's view: the fields at the top, and again under `data` as its newer clients read them. */
function vectorOf(kb: KnowledgeBase, text?: string) {
  const vector = {
    vector_id: kb.id,
    name: kb.name,
    description: kb.description,
    ...(text !== undefined && { text }),
  };
  return { status: 'success' as const, ...vector, data: vector };
}

/** include_text=true, or the include-text header the older API also reads. */
function wantsText(request: FastifyRequest): boolean {
  const header = request.headers['include-text'];
  return (
    (request.query as { include_text?: boolean }).include_text === true ||
    (typeof header === 'string' && /^(true|1|yes)$/i.test(header.trim()))
  );
}

/** Text typed in, tidied; too much of it is a 400 naming the field. */
function textField(text: string): string {
  try {
    const tidy = tidyKnowledgeText(text);
    if (tidy === '') throw validationError(['text must hold some words']);
    return tidy;
  } catch (error) {
    if (error instanceof UnreadableDocument) throw validationError([`text ${error.message}`]);
    throw error;
  }
}

/** The words of web pages, tidied; pages that give nothing are a 400 naming each (`urls[i]`). */
async function webText(services: Services, urls: string[], failed: string): Promise<string> {
  const pages = await services.readWebPages(urls);
  if (pages.problems.length > 0) throw validationError(pages.problems, failed);
  try {
    return tidyKnowledgeText(pages.text);
  } catch (error) {
    if (error instanceof UnreadableDocument) throw validationError([`urls: the pages ${error.message}`]);
    throw error;
  }
}

interface Upload {
  fields: Record<string, string>;
  file?: { name: string; type: string; data: Buffer };
}

/** A multipart/form-data upload: its text fields and its one file. Problems are 400s (413 for size). */
async function readUpload(request: FastifyRequest): Promise<Upload> {
  const upload: Upload = { fields: {} };
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || upload.file) {
          part.file.resume();
          throw validationError([`${part.fieldname}: send one file, in the field "file"`]);
        }
        upload.file = { name: part.filename, type: part.mimetype, data: await part.toBuffer() };
      } else if (typeof part.value === 'string') upload.fields[part.fieldname] = part.value;
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const code = (error as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE')
      throw new ApiError('PAYLOAD_TOO_LARGE', `file is larger than ${MAX_KNOWLEDGE_FILE_BYTES / 1024 / 1024} MB`);
    if (code === 'FST_FILES_LIMIT') throw validationError(['file: send one file']);
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') throw validationError(['too many form fields']);
    throw validationError([`the form could not be read (${code ?? 'malformed multipart body'})`]);
  }
  return upload;
}

/** Creates a knowledge base from an uploaded file: its text is read now (PDF, Word, text files). */
async function createFromUpload(request: FastifyRequest, services: Services): Promise<KnowledgeBase> {
  const { fields, file } = await readUpload(request);
  if (!file) throw validationError(['file is required: the document to read (multipart/form-data)']);
  const kind = documentKind(file.name, file.type, file.data);
  if (!kind)
    throw validationError([
      `file "${file.name}" is not a kind Openline reads: send a PDF, a Word document (.docx) or a text file (.txt, .md, .csv, .json)`,
    ]);
  const name = (fields.name ?? '').trim() || file.name.trim() || 'Untitled';
  if (name.length > 200) throw validationError(['name must be at most 200 characters']);
  const description = fields.description?.trim() || null;
  let text: string;
  try {
    text = await extractDocumentText(kind, file.data);
  } catch (error) {
    if (error instanceof UnreadableDocument) throw validationError([`file "${file.name}" ${error.message}`]);
    throw error;
  }
  const stored: KnowledgeFile = { file_name: file.name, file_size: file.data.length, file_type: file.type };
  return services.knowledge.create(request.account.id, { name, description, text, file: stored });
}

/**
 * Knowledge bases: text the agent looks things up in while it talks, given in a call's (or an
 * agent's) `tools` by id. Served as the hosted API's current routes (/knowledge) and its older
 * ones (/knowledgebases, and /vectors before that), all over the same knowledge bases.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  await app.register(async (scope) => {
    // Only these routes read multipart/form-data (file uploads); elsewhere it stays a 415.
    await scope.register(multipart, {
      limits: { fileSize: MAX_KNOWLEDGE_FILE_BYTES, files: 1, fields: 10, parts: 12, fieldSize: 64 * 1024 },
    });
    knowledgeRoutes(scope as Api, services);
    vectorRoutes(scope as Api, services, '/knowledgebases', false);
    vectorRoutes(scope as Api, services, '/vectors', true);
  });
}

const AskBody = Type.Object(
  {
    knowledge_base_id: Type.String({ minLength: 1, description: 'The knowledge base to ask' }),
    question: Type.String({ minLength: 1, maxLength: 2000 }),
    conversation_history: Type.Optional(
      Type.Array(
        Type.Object({
          role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
          content: Type.String({ maxLength: 4000 }),
        }),
        { maxItems: 50, description: 'Earlier messages of the conversation, oldest first (chat only)' },
      ),
    ),
  },
  { additionalProperties: true },
);
const AnswerReply = Envelope({
  answer: Type.String(),
  found: Type.Boolean({ description: 'False when no passage of the knowledge base is about the question' }),
  sources: Type.Array(
    Type.Object({
      knowledge_base: Type.String({ description: "The knowledge base's name" }),
      text: Type.String(),
      score: Type.Number({ description: 'How well the passage matches (BM25), best first' }),
    }),
  ),
});

function knowledgeRoutes(app: Api, services: Services): void {
  for (const [url, summary] of [
    ['/knowledge/answer', 'Ask a knowledge base a question'],
    ['/knowledge/chat', 'Chat with a knowledge base'],
  ] as const)
    app.post(
      url,
      {
        schema: {
          tags,
          summary,
          description:
            'Answers `question` from the knowledge base as an agent on a call does: its best passages, read by the ' +
            'configured language model (or, without one, the sentences that share the most words with the question). ' +
            '`conversation_history` gives the earlier messages of a chat. The passages used are listed in `sources`.',
          body: AskBody,
          response: { 200: AnswerReply, ...errorResponses },
        },
      },
      async (request) => {
        const { knowledge_base_id: id, question, conversation_history: history = [] } = request.body;
        const asked = await services.askKnowledge(request.account.id, id, question, history);
        if (!asked) throw notFound('Knowledge base');
        return {
          data: {
            answer: asked.answer,
            found: asked.found,
            sources: asked.sources.map((p) => ({ knowledge_base: p.source, text: p.text, score: p.score })),
          },
          errors: null,
        };
      },
    );

  // POST /knowledge too: the hosted API's CLI creates knowledge bases there.
  for (const url of ['/knowledge/learn', '/knowledge'])
    app.post(
      url,
      {
        bodyLimit: TEXT_BODY_LIMIT,
        // A multipart upload has no JSON body to check.
        attachValidation: true,
        schema: {
          hide: url === '/knowledge',
          tags,
          summary: 'Create a knowledge base from text or a file',
          description:
            'A JSON body `{type: "text", name, description, text}` stores the text; multipart/form-data with a ' +
            '`file` (PDF, Word .docx, or text: .txt, .md, .csv, .json) and optional `name` and `description` ' +
            'stores the text read from the file. Either way it is searchable at once (status COMPLETED).',
          body: KnowledgeLearnBody,
          response: { 200: KnowledgeReply, ...errorResponses, 413: errorResponses[400] },
        },
      },
      async (request) => {
        if (request.isMultipart()) return { data: bodyOf(await createFromUpload(request, services)), errors: null };
        assertValid(request);
        const body = request.body;
        if (body.type === 'file') throw validationError(['type "file": upload the file as multipart/form-data']);
        const about = { name: body.name.trim(), description: body.description?.trim() || null };
        if (body.type === 'web') {
          if (!body.urls) throw validationError(['urls is required for type "web": the pages to read']);
          const text = await webText(services, body.urls, 'Knowledge base not created: pages could not be read');
          const kb = await services.knowledge.create(request.account.id, { ...about, text, source_urls: body.urls });
          return { data: bodyOf(kb), errors: null };
        }
        if (body.text === undefined) throw validationError(['text is required: the text the agent searches']);
        const kb = await services.knowledge.create(request.account.id, { ...about, text: textField(body.text) });
        return { data: bodyOf(kb), errors: null };
      },
    );

  app.get(
    '/knowledge',
    {
      schema: {
        tags,
        summary: 'List knowledge bases',
        querystring: Type.Object({
          page: Type.Optional(Type.Integer({ minimum: 1, description: 'Counted from 1' })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Per page (default 20)' })),
        }),
        response: {
          200: Envelope({ kbs: Type.Array(KnowledgeBaseSchema), total: Type.Integer() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 20;
      const offset = ((request.query.page ?? 1) - 1) * limit;
      const { kbs, total } = await services.knowledge.list(request.account.id, { offset, limit });
      return { data: { kbs: kbs.map((kb) => bodyOf(kb)), total }, errors: null };
    },
  );

  app.get(
    '/knowledge/:id',
    {
      schema: {
        tags,
        summary: 'Get a knowledge base',
        params: IdParams,
        querystring: IncludeText,
        response: { 200: KnowledgeReply, ...errorResponses },
      },
    },
    async (request) => {
      const kb = await services.knowledge.get(request.account.id, request.params.id);
      if (!kb) throw notFound('Knowledge base');
      return { data: bodyOf(kb, wantsText(request) ? kb.text : undefined), errors: null };
    },
  );

  app.post(
    '/knowledge/crawl',
    {
      schema: {
        tags,
        summary: 'Find the pages of a site',
        description:
          "The addresses a site's sitemap lists (`/sitemap.xml`, or those its robots.txt names), else the links of " +
          'the page that stay on its site: to choose the `urls` of a type "web" knowledge base. Fetched through the ' +
          'guarded client (no private addresses).',
        body: Type.Object(
          {
            url: checked(Type.String({ description: 'The site, or a page of it' }), 'http_url'),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CRAWL_URLS, default: 100 })),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Envelope({
            url: Type.String(),
            source: Type.Union([Type.Literal('sitemap'), Type.Literal('links')]),
            urls: Type.Array(Type.String()),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { url, limit = 100 } = request.body;
      try {
        const site = await services.crawlSite(url, limit);
        return { data: { url, ...site }, errors: null };
      } catch (error) {
        if (error instanceof UnreadableDocument) throw validationError([`url ${error.message}`]);
        throw error;
      }
    },
  );

  app.get(
    '/knowledge/:id/content',
    {
      schema: {
        tags,
        summary: "A knowledge base's content",
        description: 'What the agent searches: its text, and the pages or file it was read from.',
        params: IdParams,
        response: {
          200: Envelope({
            id: Type.String(),
            type: Type.String(),
            text: Type.String(),
            source_urls: Type.Optional(Type.Array(Type.String())),
            file: Type.Optional(KnowledgeFileSchema),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const kb = await services.knowledge.get(request.account.id, request.params.id);
      if (!kb) throw notFound('Knowledge base');
      return {
        data: {
          id: kb.id,
          type: kb.type,
          text: kb.text,
          ...(kb.source_urls && { source_urls: kb.source_urls }),
          ...(kb.file && { file: kb.file }),
        },
        errors: null,
      };
    },
  );

  app.post(
    '/knowledge/:id/content',
    {
      bodyLimit: TEXT_BODY_LIMIT,
      schema: {
        tags,
        summary: "Replace a knowledge base's text",
        description: 'The new text is searched from the next question on; the text it replaces stays as a version.',
        params: IdParams,
        body: Type.Object({ text: Type.String({ minLength: 1 }) }, { additionalProperties: true }),
        response: { 200: KnowledgeReply, ...errorResponses },
      },
    },
    async (request) => {
      const words = { text: textField(request.body.text), change: 'content' };
      const kb = await services.knowledge.update(request.account.id, request.params.id, { words });
      if (!kb) throw notFound('Knowledge base');
      return { data: bodyOf(kb), errors: null };
    },
  );

  app.post(
    '/knowledge/:id/replace_urls',
    {
      schema: {
        tags,
        summary: 'Read a knowledge base from other web pages',
        description:
          'Reads `urls` as type "web" does and makes their words the knowledge base\'s text (its type becomes ' +
          'WEB_SCRAPE); nothing changes when a page gives nothing. The text it replaces stays as a version.',
        params: IdParams,
        body: Type.Object({ urls: KnowledgeLearnBody.properties.urls }, { additionalProperties: true }),
        response: { 200: KnowledgeReply, ...errorResponses },
      },
    },
    async (request) => {
      const urls = request.body.urls;
      if (!urls) throw validationError(['urls is required: the pages to read']);
      if (!(await services.knowledge.get(request.account.id, request.params.id))) throw notFound('Knowledge base');
      const text = await webText(services, urls, 'Knowledge base unchanged: pages could not be read');
      const kb = await services.knowledge.update(request.account.id, request.params.id, {
        words: { text, source_urls: urls, change: 'urls' },
      });
      if (!kb) throw notFound('Knowledge base');
      return { data: bodyOf(kb), errors: null };
    },
  );

  app.get(
    '/knowledge/:id/versions',
    {
      schema: {
        tags,
        summary: "A knowledge base's versions",
        description:
          'Every text it has had, oldest first: version 1 when it was made, one more with each change of its text ' +
          'or pages. The last is the one searched (`is_current`).',
        params: IdParams,
        response: {
          200: Type.Object({
            data: Type.Array(
              Type.Object({
                id: Type.String(),
                version_number: Type.Integer(),
                change: Type.String({ description: 'created, content, urls, or "restored from version N"' }),
                characters: Type.Integer(),
                source_urls: Type.Union([Type.Array(Type.String()), Type.Null()]),
                created_at: Type.String(),
                is_current: Type.Boolean(),
              }),
            ),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const versions = await services.knowledge.versionsOf(request.account.id, request.params.id);
      if (!versions) throw notFound('Knowledge base');
      return {
        data: versions.map((v, i) => ({ ...v, is_current: i === versions.length - 1 })),
        errors: null,
      };
    },
  );

  app.post(
    '/knowledge/:id/versions/:version_id/restore',
    {
      schema: {
        tags,
        summary: 'Restore a version of a knowledge base',
        description:
          "Its text (and pages) become the current ones again, as a new version; `version_id` is a version's id or number.",
        params: Type.Object({ id: Type.String(), version_id: Type.String() }),
        response: { 200: KnowledgeReply, ...errorResponses },
      },
    },
    async (request) => {
      const { id, version_id: versionId } = request.params;
      if (!(await services.knowledge.get(request.account.id, id))) throw notFound('Knowledge base');
      const version = await services.knowledge.version(request.account.id, id, versionId);
      if (!version) throw notFound('Knowledge base version');
      const kb = await services.knowledge.update(request.account.id, id, {
        words: {
          text: version.text,
          ...(version.source_urls && { source_urls: version.source_urls }),
          change: `restored from version ${version.version_number}`,
        },
      });
      if (!kb) throw notFound('Knowledge base');
      return { data: bodyOf(kb), errors: null };
    },
  );

  for (const method of ['put', 'patch'] as const)
    app[method](
      '/knowledge/:id',
      {
        schema: {
          tags,
          hide: method === 'patch',
          summary: 'Rename or describe a knowledge base',
          description: 'Name and description only; `description: null` removes it. The text stays as it is.',
          params: IdParams,
          body: KnowledgeUpdateBody,
          response: { 200: KnowledgeReply, ...errorResponses },
        },
      },
      async (request) => {
        const { name, description } = request.body;
        const kb = await services.knowledge.update(request.account.id, request.params.id, {
          ...(name !== undefined && { name: name.trim() }),
          ...(description !== undefined && { description: description?.trim() || null }),
        });
        if (!kb) throw notFound('Knowledge base');
        return { data: bodyOf(kb), errors: null };
      },
    );

  app.delete(
    '/knowledge/:id',
    {
      schema: {
        tags,
        summary: 'Delete a knowledge base',
        description: 'Calls already placed that name it go on without it.',
        params: IdParams,
        response: {
          200: Type.Object({
            data: Type.Object({ id: Type.String(), status: Type.Literal('DELETED') }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      if (!(await services.knowledge.delete(request.account.id, request.params.id))) throw notFound('Knowledge base');
      return { data: { id: request.params.id, status: 'DELETED' as const }, errors: null };
    },
  );
}

/** The older routes under one base path; `/vectors` is served but documented once, as /knowledgebases. */
function vectorRoutes(app: Api, services: Services, base: string, hide: boolean): void {
  const VectorReply = Type.Intersect([
    Type.Object({ status: Type.Literal('success') }),
    VectorSchema,
    Type.Object({ data: VectorSchema }),
  ]);

  app.post(
    base,
    {
      bodyLimit: TEXT_BODY_LIMIT,
      schema: {
        tags,
        hide,
        summary: 'Create a knowledge base (older API)',
        description: 'Returns its id as `vector_id`, at the top and under `data`.',
        body: VectorCreateBody,
        response: { 200: VectorReply, ...errorResponses },
      },
    },
    async (request) => {
      const kb = await services.knowledge.create(request.account.id, {
        name: request.body.name.trim(),
        description: request.body.description?.trim() || null,
        text: textField(request.body.text),
      });
      return vectorOf(kb);
    },
  );

  app.post(
    `${base}/upload`,
    {
      schema: {
        tags,
        hide,
        summary: 'Create a knowledge base from a file (older API)',
        description: 'multipart/form-data: `file` (PDF, Word .docx or text), `name`, `description`.',
        response: { 200: VectorReply, ...errorResponses, 413: errorResponses[400] },
      },
    },
    async (request) => {
      if (!request.isMultipart())
        throw new ApiError(
          'UNSUPPORTED_MEDIA_TYPE',
          'Content-Type must be multipart/form-data, with the file in "file"',
        );
      return vectorOf(await createFromUpload(request, services));
    },
  );

  app.get(
    base,
    {
      schema: {
        tags,
        hide,
        summary: 'List knowledge bases (older API)',
        description: 'The list is `vectors`, at the top and under `data` (where clients of the hosted API read it).',
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            vectors: Type.Array(VectorSchema),
            data: Type.Object({ vectors: Type.Array(VectorSchema) }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { kbs } = await services.knowledge.list(request.account.id, { offset: 0, limit: 1000 });
      const vectors = kbs.map((kb) => vectorOf(kb).data);
      return { status: 'success' as const, vectors, data: { vectors }, errors: null };
    },
  );

  app.get(
    `${base}/:id`,
    {
      schema: {
        tags,
        hide,
        summary: 'Get a knowledge base (older API)',
        params: IdParams,
        querystring: IncludeText,
        response: { 200: VectorReply, ...errorResponses },
      },
    },
    async (request) => {
      const kb = await services.knowledge.get(request.account.id, request.params.id);
      if (!kb) throw notFound('Knowledge base');
      return vectorOf(kb, wantsText(request) ? kb.text : undefined);
    },
  );

  for (const method of ['patch', 'post'] as const)
    app[method](
      `${base}/:id`,
      {
        bodyLimit: TEXT_BODY_LIMIT,
        schema: {
          tags,
          hide: hide || method === 'post',
          summary: 'Update a knowledge base (older API)',
          description: 'Fields sent replace the stored ones: `name`, `description` and `text`.',
          params: IdParams,
          body: VectorUpdateBody,
          response: { 200: VectorReply, ...errorResponses },
        },
      },
      async (request) => {
        const { name, description, text } = request.body;
        const kb = await services.knowledge.update(request.account.id, request.params.id, {
          ...(name !== undefined && { name: name.trim() }),
          ...(description !== undefined && { description: description?.trim() || null }),
          ...(text !== undefined && { words: { text: textField(text), change: 'content' } }),
        });
        if (!kb) throw notFound('Knowledge base');
        return vectorOf(kb);
      },
    );

  const remove = async (request: FastifyRequest<{ Params: { id: string } }>) => {
    if (!(await services.knowledge.delete(request.account.id, request.params.id))) throw notFound('Knowledge base');
    return { status: 'success' as const, message: 'Knowledge base deleted' };
  };
  const deleteSchema = {
    tags,
    params: IdParams,
    response: { 200: SuccessMessage, ...errorResponses },
  };
  app.delete(
    `${base}/:id`,
    { schema: { ...deleteSchema, hide, summary: 'Delete a knowledge base (older API)' } },
    remove,
  );
  app.post(
    `${base}/:id/delete`,
    { schema: { ...deleteSchema, hide: true, summary: 'Delete a knowledge base (older API)' } },
    remove,
  );
}
