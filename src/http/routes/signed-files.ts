import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { sendFile } from '../file-reply.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type SignedFileRouteDeps = Pick<Runtime, 'fileUrls'>;

const Params = Type.Object({ file_id: Type.String() });
const Query = Type.Object({
  timestamp: Type.Optional(Type.String()),
  nonce: Type.Optional(Type.String()),
  sign: Type.Optional(Type.String()),
  as_attachment: Type.Optional(Type.String()),
});

/**
 * `GET /files/{file_id}/file-preview?timestamp&nonce&sign[&as_attachment=true]`: the file behind a
 * signed URL (document downloads hand them out), without an API key, as Dify's files route.
 */
export const signedFileRoutes: FastifyPluginAsync<{ runtime: SignedFileRouteDeps }> = async (app, { runtime }) => {
  app.get<{ Params: Static<typeof Params>; Querystring: Static<typeof Query> }>(
    '/files/:file_id/file-preview',
    { schema: { params: Params, querystring: Query } },
    async (request, reply) => sendFile(request, reply, await runtime.fileUrls.open(request.params.file_id, request.query, request.headers.range)),
  );
};
