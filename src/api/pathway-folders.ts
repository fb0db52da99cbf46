import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, Nullable } from '../schemas/common.js';
import { notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';

const tags = ['Pathways'];

const Folder = Type.Object({
  folder_id: Type.String(),
  id: Type.String({ description: 'The same as folder_id' }),
  name: Type.String(),
  parent_folder_id: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});
const FolderName = Type.String({ minLength: 1, maxLength: 200 });
const FolderParams = Type.Object({ folder_id: Type.String() });

/**
 * Pathway folders, as the hosted API files pathways: folders (in folders), the pathways of one,
 * and moving a pathway into a folder or back to the top.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  /** A folder id a body names: it must be one of the account's folders. */
  async function existingFolder(
    accountId: string,
    id: string | null | undefined,
    field: string,
  ): Promise<string | null> {
    if (id === undefined || id === null || id.trim() === '') return null;
    if (!(await services.pathwayFolders.get(accountId, id.trim())))
      throw validationError([`${field} is not a folder of this account`]);
    return id.trim();
  }

  app.get(
    '/pathway/folders',
    {
      schema: {
        tags,
        summary: 'List pathway folders',
        response: {
          200: Type.Object({ status: Type.Literal('success'), folders: Type.Array(Folder) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      folders: await services.pathwayFolders.list(request.account.id),
    }),
  );

  app.post(
    '/pathway/folders',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create a pathway folder',
        description: 'In another folder with parent_folder_id, else at the top.',
        body: Type.Object(
          { name: FolderName, parent_folder_id: Type.Optional(Nullable(Type.String())) },
          { additionalProperties: true },
        ),
        response: { 200: Folder, ...errorResponses },
      },
    },
    async (request) => {
      assertValid(request);
      const accountId = request.account.id;
      const parent = await existingFolder(accountId, request.body.parent_folder_id, 'parent_folder_id');
      return services.pathwayFolders.create(accountId, request.body.name.trim(), parent);
    },
  );

  app.patch(
    '/pathway/folders/:folder_id',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Rename a pathway folder',
        params: FolderParams,
        body: Type.Object({ name: FolderName }, { additionalProperties: true }),
        response: { 200: Folder, ...errorResponses },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      if (!(await services.pathwayFolders.get(accountId, request.params.folder_id))) throw notFound('Folder');
      assertValid(request);
      const folder = await services.pathwayFolders.rename(
        accountId,
        request.params.folder_id,
        request.body.name.trim(),
      );
      if (!folder) throw notFound('Folder');
      return folder;
    },
  );

  app.delete(
    '/pathway/folders/:folder_id',
    {
      schema: {
        tags,
        summary: 'Delete a pathway folder',
        description: 'The pathways and folders it holds move up to its parent (or the top); none is deleted.',
        params: FolderParams,
        response: {
          200: Type.Object({ status: Type.Literal('success'), message: Type.String(), folder_id: Type.String() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      if (!(await services.pathwayFolders.delete(request.account.id, request.params.folder_id)))
        throw notFound('Folder');
      return { status: 'success' as const, message: 'Folder deleted', folder_id: request.params.folder_id };
    },
  );

  app.get(
    '/pathway/folders/:folder_id/pathways',
    {
      schema: {
        tags,
        summary: 'List the pathways in a folder',
        params: FolderParams,
        response: {
          200: Type.Object({
            pathways: Type.Array(
              Type.Object({
                id: Type.String(),
                name: Type.String(),
                description: Nullable(Type.String()),
                created_at: Type.String(),
              }),
            ),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      if (!(await services.pathwayFolders.get(accountId, request.params.folder_id))) throw notFound('Folder');
      return { pathways: await services.pathwayFolders.pathways(accountId, request.params.folder_id) };
    },
  );

  app.post(
    '/pathway/folders/move',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Move a pathway into a folder',
        description: 'folder_id null (or absent) moves it to the top.',
        body: Type.Object(
          { pathway_id: Type.String({ minLength: 1 }), folder_id: Type.Optional(Nullable(Type.String())) },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            pathway_id: Type.String(),
            old_folder_id: Nullable(Type.String()),
            new_folder_id: Nullable(Type.String()),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      assertValid(request);
      const accountId = request.account.id;
      const folder = await existingFolder(accountId, request.body.folder_id, 'folder_id');
      const pathwayId = request.body.pathway_id.trim();
      const moved = await services.pathwayFolders.move(accountId, pathwayId, folder);
      if (!moved) throw notFound('Pathway');
      return { pathway_id: pathwayId, old_folder_id: moved.old_folder_id, new_folder_id: folder };
    },
  );
}
