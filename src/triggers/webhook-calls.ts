import { Readable } from 'node:stream';
import type { App, AppService } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import { categoryOf } from '../files/file-types.js';
import type { PendingUpload, UploadService } from '../files/upload-service.js';
import { invalidParam, notFound } from '../infra/errors.js';
import type { RateLimiter } from '../infra/rate-limit.js';
import type { RunService } from '../runs/run-service.js';
import { VariablePool } from '../engine/variable-pool.js';
import { webhookConfig, webhookOutputs, type WebhookConfig, type WebhookData } from '../engine/nodes/trigger-webhook.js';
import { webhookBodyTooLarge, webhookRateLimited, webhookRunFailed, webhookRunPaused, webhookRunTimeout } from './errors.js';
import type { TriggerConfig } from './trigger-config.js';
import type { TriggerStore } from './trigger-store.js';
import { TRIGGER_USER } from './triggers.js';
import { checkMethodAndType, checkWebhookRequest, webhookResponseBody } from './webhook-request.js';

/** A webhook's app and node, found by the id in its URL. */
export interface WebhookTarget {
  readonly app: App;
  readonly nodeId: string;
  readonly config: WebhookConfig;
}

/** A call as the route read it: the body is raw bytes, or a multipart form with its files received (not yet recorded). */
export interface WebhookCall {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly query: Record<string, string>;
  readonly contentType: string;
  readonly raw?: Buffer;
  readonly form?: { readonly fields: Record<string, string>; readonly files: Record<string, PendingUpload> };
}

/** The answer the route sends. */
export interface WebhookAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly runId: string;
}

export interface WebhookCallDeps {
  readonly store: TriggerStore;
  readonly apps: AppService;
  readonly runs: RunService;
  readonly endUsers: EndUserService;
  readonly uploads: UploadService;
  readonly rateLimiter: RateLimiter;
  readonly config: TriggerConfig;
  readonly jsonMaxDepth: number;
  /** The upload limit a body is bounded by (`UPLOAD_FILE_SIZE_LIMIT`), bytes. */
  readonly maxBodyBytes: number;
  readonly tooDeep: (value: unknown, max: number) => string | undefined;
}

function firstValues(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of params) if (!(k in out)) out[k] = v;
  return out;
}

/**
 * `/triggers/webhook/{webhook_id}` (Dify's webhook controller): finds the webhook, counts the call
 * against its rate limit, reads and checks the request against the node, starts the run from the
 * node (marked `webhook`) and answers the node's `status_code` and `response_body` — at once
 * (`async_mode`, the default) or once the run has finished, with its variables in the template.
 */
export class WebhookCalls {
  readonly #d: WebhookCallDeps;

  constructor(deps: WebhookCallDeps) {
    this.#d = deps;
  }

  /** The webhook's app and node; 404 (Dify's messages) for an unknown id, a paused trigger, an app that is gone. */
  async target(webhookId: string): Promise<WebhookTarget> {
    const d = this.#d;
    const t = await d.store.byWebhookId(webhookId);
    if (!t) throw notFound(`Webhook not found: ${webhookId}`);
    if (t.status !== 'enabled') throw notFound(`Webhook trigger is disabled for webhook ${webhookId}`);
    const app = await d.apps.find(t.appId);
    const node = app?.dsl.workflow?.graph.nodes.find((n) => n.id === t.nodeId && n.data.type === 'trigger-webhook');
    if (!app || !node) throw notFound(`Workflow not found for webhook ${webhookId}`);
    return { app, nodeId: t.nodeId, config: webhookConfig(node.data) };
  }

  /** Counts one call of the webhook (per webhook id, across the deployment when Redis is set). */
  async admit(webhookId: string): Promise<void> {
    const c = this.#d.config;
    if (!(await this.#d.rateLimiter.hit(`webhook:${webhookId}`, c.webhookRateLimitMax, c.webhookRateLimitWindowSeconds * 1000))) {
      throw webhookRateLimited(c.webhookRateLimitMax, c.webhookRateLimitWindowSeconds);
    }
  }

  /** The Content-Length check made before the body is read. */
  checkLength(contentLength: number | undefined): void {
    if (contentLength !== undefined && contentLength > this.#d.maxBodyBytes) throw webhookBodyTooLarge(this.#d.maxBodyBytes);
  }

  async handle(target: WebhookTarget, call: WebhookCall): Promise<WebhookAnswer> {
    const d = this.#d;
    const { app, nodeId, config } = target;
    const pending = Object.values(call.form?.files ?? {});
    const endUser = await d.endUsers.getOrCreate(app.id, TRIGGER_USER);
    let committed = false;
    let data: WebhookData;
    try {
      checkMethodAndType(config, call.method, call.contentType);
      const body = await this.#body(call, app, endUser.id);
      const files: Record<string, unknown> = {};
      for (const [field, p] of Object.entries(call.form?.files ?? {})) files[field] = fileValue(p);
      data = checkWebhookRequest(config, { method: call.method, headers: call.headers, query: call.query, contentType: call.contentType, body, files });
      for (const p of pending) await d.uploads.commit(p, { workspaceId: app.workspaceId, appId: app.id, createdBy: endUser.id, createdByRole: 'end_user' });
      committed = true;
    } finally {
      if (!committed) for (const p of pending) await d.uploads.abandon(p);
    }
    const inputs = { webhook_data: data, webhook_headers: data.headers, webhook_query_params: data.query_params, webhook_body: data.body };
    const started = await d.runs.start({ app, endUserId: endUser.id, user: TRIGGER_USER, inputs, files: [], rootNodeId: nodeId, triggeredFrom: 'webhook' });
    const sys = { workflow_run_id: started.runId, user_id: TRIGGER_USER, app_id: app.id, workflow_id: app.id };
    if (config.asyncMode) {
      // the run has not run yet: the template sees the request's variables (this node's) and the run's id
      const pool = new VariablePool({ sys, [nodeId]: webhookOutputs(config, data) });
      return { status: config.statusCode, body: responseBody(config.responseBody, pool), runId: started.runId };
    }
    const timeoutMs = config.timeoutSeconds * 1000;
    let timer: NodeJS.Timeout | undefined;
    const end = await Promise.race([started.done, new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)))]).finally(() => clearTimeout(timer));
    if (end === 'timeout' || end === undefined || end.status === 'handed-back') throw webhookRunTimeout(started.runId, config.timeoutSeconds);
    if (end.status === 'paused') throw webhookRunPaused(started.runId);
    if (end.status !== 'succeeded' && end.status !== 'partial-succeeded') throw webhookRunFailed(started.runId, end.status, end.error);
    const pool = new VariablePool({ ...end.state.pool, sys: { ...(end.state.pool.sys ?? {}), ...sys } });
    return { status: config.statusCode, body: responseBody(config.responseBody, pool), runId: started.runId };
  }

  /** The body by content type, as Dify's extractors read it (an octet-stream body becomes a stored file). */
  async #body(call: WebhookCall, app: App, endUserId: string): Promise<Record<string, unknown>> {
    const d = this.#d;
    if (call.form) return { ...call.form.fields };
    const raw = call.raw ?? Buffer.alloc(0);
    if (raw.length > d.maxBodyBytes) throw webhookBodyTooLarge(d.maxBodyBytes);
    switch (call.contentType) {
      case '':
      case 'application/json': {
        const text = raw.toString('utf8');
        if (text.trim() === '') return {};
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (err) {
          throw invalidParam(`Invalid JSON body: ${(err as Error).message}`);
        }
        if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidParam('The JSON body must be an object, whose fields are the body parameters');
        const deep = d.tooDeep(value, d.jsonMaxDepth);
        if (deep !== undefined) throw invalidParam(`${deep} is nested more than REQUEST_MAX_JSON_DEPTH (${d.jsonMaxDepth}) levels deep`);
        return value as Record<string, unknown>;
      }
      case 'application/x-www-form-urlencoded':
        return firstValues(new URLSearchParams(raw.toString('utf8')));
      case 'application/octet-stream': {
        if (raw.length === 0) return { raw: null };
        const p = await d.uploads.receive({ filename: 'webhook-body.bin', mimeType: 'application/octet-stream', body: Readable.from([raw]) });
        await d.uploads.commit(p, { workspaceId: app.workspaceId, appId: app.id, createdBy: endUserId, createdByRole: 'end_user' });
        return { raw: fileValue(p) };
      }
      default:
        // text/plain, and (as Dify) any other type is read as text; the content-type check then names the mismatch
        return { raw: raw.toString('utf8') };
    }
  }
}

/** A received file as a run's file variable (Dify's File mapping, a local upload). */
function fileValue(p: PendingUpload): Record<string, unknown> {
  return {
    dify_model_identity: '__dify__file__',
    id: p.id,
    type: categoryOf(p.extension),
    transfer_method: 'local_file',
    remote_url: null,
    related_id: p.id,
    upload_file_id: p.id,
    filename: p.name,
    extension: p.extension ? `.${p.extension}` : '',
    mime_type: p.mimeType,
    size: p.size,
  };
}

function responseBody(template: string, pool: VariablePool): unknown {
  return webhookResponseBody(template, (t) => pool.render(t));
}
