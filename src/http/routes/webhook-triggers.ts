import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import type { PendingUpload } from '../../files/upload-service.js';
import { invalidParam, ServiceError } from '../../infra/errors.js';
import { WebhookCalls, type WebhookCall, type WebhookTarget } from '../../triggers/webhook-calls.js';
import { webhookBodyTooLarge } from '../../triggers/errors.js';
import { tooDeepField } from '../json-depth.js';
import { malformedMultipart } from '../multipart-upload.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type WebhookRouteDeps = Pick<Runtime, 'apps' | 'config' | 'endUsers' | 'rateLimiter' | 'runs' | 'triggers' | 'uploads'>;

const Params = Type.Object({ webhook_id: Type.String() });

/** The request's headers as strings (a repeated header joined as Node joins it). */
function headerMap(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(request.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function queryMap(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((request.query ?? {}) as Record<string, unknown>)) out[k] = Array.isArray(v) ? String(v[0]) : String(v);
  return out;
}

/**
 * `/triggers/webhook/{webhook_id}` (Dify's webhook trigger, every method): no API key — the id in
 * the URL is the credential. The route reads the body raw in a scope of its own (any content type;
 * a multipart form's files stream to the blob store under the upload limits) and hands the call to
 * `WebhookCalls` (src/triggers), which checks it against the node and starts the run.
 */
export const webhookTriggerRoutes: FastifyPluginAsync<{ runtime: WebhookRouteDeps }> = async (app, { runtime }) => {
  const maxBodyBytes = runtime.config.upload.fileBytes;
  const calls = new WebhookCalls({
    store: runtime.triggers.store,
    apps: runtime.apps,
    runs: runtime.runs,
    endUsers: runtime.endUsers,
    uploads: runtime.uploads,
    rateLimiter: runtime.rateLimiter,
    config: runtime.config.triggers,
    jsonMaxDepth: runtime.config.httpServer.maxJsonDepth,
    maxBodyBytes,
    tooDeep: tooDeepField,
  });
  const maxFiles = runtime.config.upload.workflowFileUploadLimit;

  await app.register(async (scope) => {
    // every body arrives as bytes, whatever its type; WebhookCalls reads it by the node's content type
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxBodyBytes }, (_request, body, done) => done(null, body));
    await scope.register(multipart, { limits: { fields: 100, fieldSize: 1024 * 1024, parts: 100 + maxFiles, fileSize: Number.MAX_SAFE_INTEGER }, throwFileSizeLimit: false });

    const targets = new WeakMap<FastifyRequest, WebhookTarget>();
    scope.route<{ Params: Static<typeof Params> }>({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'],
      url: '/triggers/webhook/:webhook_id',
      schema: { params: Params, hide: true },
      // before the body is read: an unknown or paused webhook, the rate limit and a declared length over the limit
      preParsing: async (request, _reply, payload) => {
        const id = (request.params as { webhook_id: string }).webhook_id;
        targets.set(request, await calls.target(id));
        await calls.admit(id);
        const length = Number(request.headers['content-length']);
        calls.checkLength(Number.isFinite(length) ? length : undefined);
        return payload;
      },
      handler: async (request, reply) => {
        const target = targets.get(request) ?? (await calls.target(request.params.webhook_id));
        const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        const base = { method: request.method, headers: headerMap(request), query: queryMap(request), contentType };
        let call: WebhookCall;
        if (request.isMultipart()) call = { ...base, form: await readForm(request, runtime, maxFiles) };
        else call = { ...base, raw: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0) };
        const answer = await calls.handle(target, call);
        return reply.code(answer.status).header('x-workflow-run-id', answer.runId).send(answer.body);
      },
    });
  });
};

/** A multipart form: text fields, and every file part received into the blob store (abandoned again on any failure). */
async function readForm(request: FastifyRequest, runtime: WebhookRouteDeps, maxFiles: number): Promise<{ fields: Record<string, string>; files: Record<string, PendingUpload> }> {
  const fields: Record<string, string> = {};
  const files: Record<string, PendingUpload> = {};
  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (typeof part.value === 'string' && !(part.fieldname in fields)) fields[part.fieldname] = part.value;
        continue;
      }
      if (part.fieldname in files || Object.keys(files).length >= maxFiles) {
        part.file.resume();
        if (!(part.fieldname in files)) throw invalidParam(`A webhook call may carry at most ${maxFiles} files (WORKFLOW_FILE_UPLOAD_LIMIT).`);
        continue;
      }
      files[part.fieldname] = await runtime.uploads.receive({ filename: part.filename || `${part.fieldname}.bin`, mimeType: part.mimetype || 'application/octet-stream', body: part.file });
    }
  } catch (err) {
    for (const p of Object.values(files)) await runtime.uploads.abandon(p);
    if (err instanceof ServiceError) throw err;
    const status = (err as { statusCode?: unknown } | undefined)?.statusCode;
    if (status === 413) throw webhookBodyTooLarge(runtime.config.upload.fileBytes);
    throw malformedMultipart(err);
  }
  return { fields, files };
}
