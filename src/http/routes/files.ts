import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { DEFAULT_USER } from '../../apps/end-users.js';
import { Readable } from 'node:stream';
import { noFileUploaded, remoteFileUploadFailed } from '../../files/errors.js';
import { fetchRemote, RemoteFetchError } from '../../files/remote-fetch.js';
import { extensionOf, sizeLimitFor } from '../../files/file-types.js';
import { requireJson } from '../json-body.js';
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
const RemoteBody = Type.Object({ url: Type.String({ minLength: 1, maxLength: 2048 }) });
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
export const fileRoutes: FastifyPluginAsync<{ runtime: FileRouteDeps; web?: boolean }> = async (app, { runtime, web = false }) => {
  // the web app's `POST /remote-files/upload`: a file fetched from a URL, stored as the end user's upload
  if (web) {
    app.post<{ Body: Static<typeof RemoteBody> }>('/remote-files/upload', { preValidation: requireJson, schema: { body: RemoteBody } }, async (request, reply) => {
      const a = requireApp(request);
      const endUser = request.passport!;
      const url = request.body.url;
      const guessExt = extensionOf(new URL(url, 'http://x').pathname);
      let remote;
      try {
        remote = await fetchRemote(url, { maxBytes: sizeLimitFor(guessExt, runtime.config.upload).bytes, allowHosts: runtime.config.ssrfAllowHosts });
      } catch (err) {
        if (err instanceof RemoteFetchError) throw remoteFileUploadFailed(`Failed to fetch file from ${url}: ${err.message}`);
        throw err;
      }
      const name = remote.filename || `remote${guessExt ? `.${guessExt}` : ''}`;
      const uploaded = await runtime.uploads.upload({
        filename: name,
        mimeType: remote.mimeType || 'application/octet-stream',
        body: Readable.from([remote.body]),
        workspaceId: a.workspaceId,
        appId: a.id,
        createdBy: endUser.id,
        createdByRole: 'end_user',
      });
      const f = fileResponse(uploaded);
      const signed = await runtime.fileUrls.sign(uploaded.id, requestOrigin(request, runtime.config.httpServer.trustProxy), false);
      return reply.code(201).send({ id: f.id, name: f.name, size: f.size, extension: f.extension, url: signed, mime_type: f.mime_type, created_by: f.created_by, created_at: f.created_at });
    });
  }

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
