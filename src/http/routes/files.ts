import type { FastifyPluginAsync } from 'fastify';
import { DEFAULT_USER } from '../../apps/end-users.js';
import { noFileUploaded } from '../../files/errors.js';
import { fileResponse } from '../../files/upload-service.js';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { readUploadForm } from '../multipart-upload.js';

/** `POST /files/upload` (multipart `file` + optional `user`), Dify's checks in Dify's order. */
export const fileRoutes: FastifyPluginAsync<{ runtime: Runtime }> = async (app, { runtime }) => {
  app.post('/files/upload', async (request, reply) => {
    const a = requireApp(request);
    // `user` may come before or after the file (curl and the SDKs send it after), so the file is
    // streamed to the blob store first and recorded once every part has been read.
    const { pending, fields } = await readUploadForm(request, runtime.uploads);
    if (!pending) throw noFileUploaded();
    try {
      const endUser = await runtime.endUsers.getOrCreate(a.id, fields.user || DEFAULT_USER);
      const uploaded = await runtime.uploads.commit(pending, { workspaceId: a.workspaceId, appId: a.id, createdBy: endUser.id, createdByRole: 'end_user' });
      return reply.code(201).send(fileResponse(uploaded));
    } catch (err) {
      await runtime.uploads.abandon(pending);
      throw err;
    }
  });
};
