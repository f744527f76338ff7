import type { FastifyPluginAsync } from 'fastify';
import { DEFAULT_USER } from '../../apps/end-users.js';
import { filenameNotExists, noFileUploaded, tooManyFiles, unsupportedFileType } from '../../files/errors.js';
import { fileResponse, type PendingUpload } from '../../files/upload-service.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';

/** `POST /files/upload` (multipart `file` + optional `user`), Dify's checks in Dify's order. */
export const fileRoutes: FastifyPluginAsync<{ runtime: Runtime }> = async (app, { runtime }) => {
  app.post('/files/upload', async (request, reply) => {
    const a = requireApp(request);
    if (!request.isMultipart()) throw noFileUploaded();
    let user: string | undefined;
    let pending: PendingUpload | undefined;
    const fileFields = new Set<string>();
    try {
      // `user` may come before or after the file (curl and the SDKs send it after), so the file is
      // streamed to the blob store first and recorded once every part has been read.
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          if (part.fieldname === 'user' && typeof part.value === 'string') user = part.value;
          continue;
        }
        fileFields.add(part.fieldname);
        if (pending || part.fieldname !== 'file') {
          part.file.resume();
          continue;
        }
        if (!part.mimetype) throw unsupportedFileType();
        if (!part.filename) throw filenameNotExists();
        pending = await runtime.uploads.receive({ filename: part.filename, mimeType: part.mimetype, body: part.file });
      }
      if (!fileFields.has('file')) throw noFileUploaded();
      if (fileFields.size > 1) throw tooManyFiles();
      const endUser = await runtime.endUsers.getOrCreate(a.id, user || DEFAULT_USER);
      const uploaded = await runtime.uploads.commit(pending!, {
        workspaceId: a.workspaceId,
        appId: a.id,
        createdBy: endUser.id,
        createdByRole: 'end_user',
      });
      pending = undefined;
      return reply.code(201).send(fileResponse(uploaded));
    } finally {
      if (pending) await runtime.uploads.abandon(pending);
    }
  });
};
