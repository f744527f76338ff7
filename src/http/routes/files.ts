import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { DEFAULT_USER } from '../../apps/end-users.js';
import { noFileUploaded } from '../../files/errors.js';
import { fileResponse } from '../../files/upload-service.js';
import { invalidParam } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { requestOrigin, sendFile } from '../file-reply.js';
import { multipartRoutes, readUploadForm } from '../multipart-upload.js';
import { UploadForm } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type FileRouteDeps = Pick<Runtime, 'config' | 'endUsers' | 'filePreviews' | 'fileUrls' | 'uploads'>;

const PreviewParams = Type.Object({ file_id: Type.String() });
const PreviewQuery = Type.Object({
  as_attachment: Type.Optional(Type.String()),
  // Dify reads it and creates the end user; it has no effect on access.
  user: Type.Optional(Type.String()),
});

/** Pydantic's lax boolean strings, as Dify's `FilePreviewQuery` parses `as_attachment`. */
function queryBoolean(name: string, raw: string | undefined): boolean {
  if (raw === undefined) return false;
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on', 't', 'y'].includes(v)) return true;
  if (['false', '0', 'no', 'off', 'f', 'n'].includes(v)) return false;
  throw invalidParam(`${name} must be a boolean (true or false), got "${raw}"`);
}

/**
 * `POST /files/upload` (multipart `file` + optional `user`), Dify's checks in Dify's order, and
 * `GET /files/{file_id}/preview` (the raw bytes of an upload a message of this app was sent with).
 */
export const fileRoutes: FastifyPluginAsync<{ runtime: FileRouteDeps }> = async (app, { runtime }) => {
  await multipartRoutes(app, (mp) => mp.post('/files/upload', { schema: { consumes: ['multipart/form-data'], body: UploadForm } }, async (request, reply) => {
    const a = requireApp(request);
    // `user` may come before or after the file (curl and the SDKs send it after), so the file is
    // streamed to the blob store first and recorded once every part has been read.
    const { pending, fields } = await readUploadForm(request, runtime.uploads);
    if (!pending) throw noFileUploaded();
    try {
      const endUser = request.passport ?? (await runtime.endUsers.getOrCreate(a.id, fields.user || DEFAULT_USER));
      const uploaded = await runtime.uploads.commit(pending, { workspaceId: a.workspaceId, appId: a.id, createdBy: endUser.id, createdByRole: 'end_user' });
      // As Dify, `source_url` is a signed, key-less URL of the file (good for FILES_ACCESS_TIMEOUT).
      return reply.code(201).send({ ...fileResponse(uploaded), source_url: await runtime.fileUrls.sign(uploaded.id, requestOrigin(request, runtime.config.httpServer.trustProxy), false) });
    } catch (err) {
      await runtime.uploads.abandon(pending);
      throw err;
    }
  }));

  app.get<{ Params: Static<typeof PreviewParams>; Querystring: Static<typeof PreviewQuery> }>(
    '/files/:file_id/preview',
    { schema: { params: PreviewParams, querystring: PreviewQuery } },
    async (request, reply) => {
      const asAttachment = queryBoolean('as_attachment', request.query.as_attachment);
      return sendFile(request, reply, await runtime.filePreviews.open(requireApp(request), request.params.file_id, asAttachment, request.headers.range));
    },
  );
};
