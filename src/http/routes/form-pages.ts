import type { Multipart } from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FormInput } from '../../forms/form-definition.js';
import { FormService, type WebFormView } from '../../forms/form-service.js';
import type { PendingUpload } from '../../files/upload-service.js';
import { notFound, ServiceError } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { FORM_CSS, FORM_JS } from '../../web/form-assets.js';
import { FIELD_PREFIX, formPage, messagePage, type MessagePage } from '../../web/form-page.js';
import { malformedMultipart, multipartRoutes } from '../multipart-upload.js';
import { checkWebFormRate, pageSecurityHeaders } from '../web-form-access.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type FormPageRouteDeps = Pick<Runtime, 'apps' | 'config' | 'endUsers' | 'forms' | 'rateLimiter' | 'uploads'>;

interface TokenParams {
  token: string;
}

const STATUS: Record<MessagePage, number> = { done: 200, submitted: 412, expired: 412, not_found: 404, rate_limited: 429 };

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return pageSecurityHeaders(reply).code(status).type('text/html; charset=utf-8').send(html);
}

function sendMessage(reply: FastifyReply, kind: MessagePage): FastifyReply {
  return sendPage(reply, STATUS[kind], messagePage(kind));
}

/** Text fields and the files of a posted page, files already streamed to the blob store (not yet recorded). */
interface PostedForm {
  readonly fields: Map<string, string>;
  readonly files: Map<string, PendingUpload[]>;
}

async function readPostedForm(request: FastifyRequest, runtime: Pick<Runtime, 'uploads'>): Promise<PostedForm> {
  const fields = new Map<string, string>();
  const files = new Map<string, PendingUpload[]>();
  if (!request.isMultipart()) return { fields, files };
  try {
    for await (const part of request.parts() as AsyncIterable<Multipart>) {
      if (part.type === 'field') {
        fields.set(part.fieldname, typeof part.value === 'string' ? part.value : String(part.value));
        continue;
      }
      // An empty file input still sends a part without a name; skip its (empty) body.
      if (!part.filename) {
        part.file.resume();
        continue;
      }
      const pending = await runtime.uploads.receive({ filename: part.filename, mimeType: part.mimetype || 'application/octet-stream', body: part.file });
      const list = files.get(part.fieldname) ?? [];
      list.push(pending);
      files.set(part.fieldname, list);
    }
  } catch (err) {
    for (const list of files.values()) for (const p of list) await runtime.uploads.abandon(p);
    throw err instanceof ServiceError ? err : malformedMultipart(err);
  }
  return { fields, files };
}

/** The submission the page's post stands for, in the API's shape (files recorded as the form's web user's uploads). */
async function toSubmission(runtime: Pick<Runtime, 'apps' | 'endUsers' | 'uploads'>, form: WebFormView, posted: PostedForm): Promise<Record<string, unknown>> {
  const a = await runtime.apps.find(form.appId);
  // the app was deleted while its form waited (its data kept): as the web form API, the form is gone
  if (!a) throw notFound('Form not found');
  const endUser = await runtime.endUsers.getOrCreate(a.id, FormService.webUser(form.formId));
  const inputs: Record<string, unknown> = {};
  for (const input of form.inputs as readonly FormInput[]) {
    const key = FIELD_PREFIX + input.output_variable_name;
    if (input.type === 'file' || input.type === 'file-list') {
      const refs = [];
      const pending = posted.files.get(key) ?? [];
      // Taken off the list before it is recorded, so the caller's clean-up never removes a recorded file.
      for (let p = pending.shift(); p; p = pending.shift()) {
        const f = await runtime.uploads.commit(p, { workspaceId: a.workspaceId, appId: a.id, createdBy: endUser.id, createdByRole: 'end_user' });
        refs.push({ transfer_method: 'local_file', upload_file_id: f.id, type: 'custom' });
      }
      if (input.type === 'file-list') inputs[input.output_variable_name] = refs;
      else if (refs.length > 0) inputs[input.output_variable_name] = refs[0];
    } else {
      const v = posted.fields.get(key);
      if (v === undefined) continue;
      if ((input.type as string) === 'number') inputs[input.output_variable_name] = v.trim() === '' ? v : Number(v);
      else inputs[input.output_variable_name] = input.type === 'select' && v === '' ? undefined : v;
    }
  }
  return inputs;
}

/**
 * The page a person answers a form on: `GET /form/{token}` (the form, or a page saying it was
 * already answered, has expired or does not exist) and `POST /form/{token}` (a plain multipart
 * form post, so it works without JavaScript; it answers with a result page, or the form again
 * with the API's error text). Same checks, texts and resume as the Service API submit.
 */
export const formPageRoutes: FastifyPluginAsync<{ runtime: FormPageRouteDeps }> = async (app, { runtime }) => {
  app.get('/form/-/form.css', async (_request, reply) => reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(FORM_CSS));
  app.get('/form/-/form.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(FORM_JS));

  app.get<{ Params: TokenParams }>('/form/:token', async (request, reply) => {
    if (!(await withinRate(request))) return sendMessage(reply, 'rate_limited');
    const s = await runtime.forms.webFormState(request.params.token);
    if (s.state !== 'open') return sendMessage(reply, s.state);
    return sendPage(reply, 200, formPage(request.params.token, s.form));
  });

  async function withinRate(request: FastifyRequest): Promise<boolean> {
    try {
      await checkWebFormRate(runtime, request);
      return true;
    } catch (err) {
      if (err instanceof ServiceError && err.status === 429) return false;
      throw err;
    }
  }

  await multipartRoutes(app, (mp) =>
    mp.post<{ Params: TokenParams }>('/form/:token', async (request, reply) => {
      if (!(await withinRate(request))) return sendMessage(reply, 'rate_limited');
      const token = request.params.token;
      const s = await runtime.forms.webFormState(token);
      if (s.state !== 'open') return sendMessage(reply, s.state);
      const posted = await readPostedForm(request, runtime);
      const values = Object.fromEntries([...posted.fields].filter(([k]) => k.startsWith(FIELD_PREFIX)).map(([k, v]) => [k.slice(FIELD_PREFIX.length), v]));
      try {
        const inputs = await toSubmission(runtime, s.form, posted);
        await runtime.forms.submitWeb({ token, action: posted.fields.get('action') ?? '', inputs });
      } catch (err) {
        if (!(err instanceof ServiceError)) throw err;
        if (err.code === 'human_input_form_submitted') return sendMessage(reply, 'submitted');
        if (err.code === 'human_input_form_expired') return sendMessage(reply, 'expired');
        if (err.code === 'not_found') return sendMessage(reply, 'not_found');
        return sendPage(reply, err.status, formPage(token, s.form, { values: { ...s.form.resolved_default_values, ...values }, error: err.message }));
      } finally {
        for (const list of posted.files.values()) for (const p of list) await runtime.uploads.abandon(p);
      }
      return sendMessage(reply, 'done');
    }),
  );
};
