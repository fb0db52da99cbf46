import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams, SuccessMessage } from '../schemas/common.js';
import {
  KnowledgeBaseSchema,
  KnowledgeLearnBody,
  KnowledgeUpdateBody,
  VectorCreateBody,
  VectorSchema,
  VectorUpdateBody,
  type KnowledgeBaseBody,
} from '../schemas/knowledge.js';
import { ApiError, notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
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
  const kind = documentKind(file.name, file.type);
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

function knowledgeRoutes(app: Api, services: Services): void {
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
          const pages = await services.readWebPages(body.urls);
          if (pages.problems.length > 0)
            throw validationError(pages.problems, 'Knowledge base not created: pages could not be read');
          let text: string;
          try {
            text = tidyKnowledgeText(pages.text);
          } catch (error) {
            if (error instanceof UnreadableDocument) throw validationError([`urls: the pages ${error.message}`]);
            throw error;
          }
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
        response: {
          200: Type.Object({ status: Type.Literal('success'), vectors: Type.Array(VectorSchema) }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { kbs } = await services.knowledge.list(request.account.id, { offset: 0, limit: 1000 });
      return { status: 'success' as const, vectors: kbs.map((kb) => vectorOf(kb).data) };
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
          ...(text !== undefined && { text: textField(text) }),
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
