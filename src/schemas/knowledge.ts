import { Type, type Static } from '@sinclair/typebox';
import { checked, Nullable, StringEnum } from './common.js';
import { MAX_WEB_URLS } from '../knowledge/web.js';

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'A name that says what it holds' });
const Description = Type.String({
  maxLength: 2000,
  description: 'What it holds; the agent reads it to know when to look things up there',
});
const Text = Type.String({ minLength: 1, description: 'The text the agent searches (at most 1 MB)' });

/**
 * Upload Text or Scrape Web: POST /v1/knowledge/learn with a JSON body (a file comes as
 * multipart/form-data). `text` is required for type "text" (the default), `urls` for "web".
 */
export const KnowledgeLearnBody = Type.Object({
  type: Type.Optional(
    StringEnum(['text', 'web', 'file'] as const, {
      description: '"text" (this body, the default), "web" (urls to read) or "file" (multipart)',
    }),
  ),
  name: Name,
  description: Type.Optional(Nullable(Description)),
  text: Type.Optional(Text),
  urls: Type.Optional(
    Type.Array(checked(Type.String({ description: 'An http(s) address' }), 'http_url'), {
      minItems: 1,
      maxItems: MAX_WEB_URLS,
      description: `The pages to read for type "web" (at most ${MAX_WEB_URLS})`,
    }),
  ),
});

/** Update: name and description (null removes it); the text itself through the older routes. */
export const KnowledgeUpdateBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Nullable(Description)),
  },
  { additionalProperties: true, 'x-update': true },
);

/** The older Create a Knowledge Base: POST /v1/knowledgebases (or /v1/vectors). */
export const VectorCreateBody = Type.Object({
  name: Name,
  description: Type.Optional(Nullable(Description)),
  text: Text,
});

export const VectorUpdateBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Nullable(Description)),
    text: Type.Optional(Text),
  },
  { additionalProperties: true, 'x-update': true },
);

export const KnowledgeFileSchema = Type.Object({
  file_name: Type.String(),
  file_size: Type.Integer(),
  file_type: Type.String(),
});

export const KnowledgeBaseSchema = Type.Object({
  id: Type.String({ description: "Give it in a call's or agent's `tools` to let the agent look things up in it" }),
  name: Type.String(),
  description: Nullable(Type.String()),
  status: StringEnum(['PROCESSING', 'COMPLETED', 'FAILED', 'DELETED'] as const, {
    description: 'Openline reads text and files as they are uploaded: COMPLETED once created',
  }),
  type: StringEnum(['TEXT', 'FILE', 'WEB_SCRAPE'] as const),
  source_urls: Type.Optional(Type.String({ description: 'WEB_SCRAPE: the pages read, comma-separated' })),
  base_url: Type.Optional(Type.String({ description: "WEB_SCRAPE: the first page's origin" })),
  created_at: Type.String(),
  updated_at: Type.String(),
  error_message: Nullable(Type.String()),
  file: Type.Optional(KnowledgeFileSchema),
  text: Type.Optional(Type.String({ description: 'With include_text=true' })),
});
export type KnowledgeBaseBody = Static<typeof KnowledgeBaseSchema>;

/** The older API's view of a knowledge base (a "vector store"). */
export const VectorSchema = Type.Object({
  vector_id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  text: Type.Optional(Type.String()),
});
