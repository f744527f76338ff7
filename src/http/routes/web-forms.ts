import type { FastifyPluginAsync } from 'fastify';
import { appSite } from '../../apps/parameters.js';
import { noFileUploaded } from '../../files/errors.js';
import { fileResponse } from '../../files/upload-service.js';
import { FormService } from '../../forms/form-service.js';
import { formNotFound } from '../../forms/errors.js';
import type { Runtime } from '../../runtime.js';
import { requireJson } from '../json-body.js';
import { submissionFields, submissionObject } from '../form-submission.js';
import { multipartRoutes, readUploadForm } from '../multipart-upload.js';
import { checkWebFormRate, pageSecurityHeaders } from '../web-form-access.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type WebFormRouteDeps = Pick<Runtime, 'apps' | 'config' | 'endUsers' | 'forms' | 'rateLimiter' | 'sites' | 'uploads'>;

interface TokenParams {
  token: string;
}

/**
 * Dify's web-app form API, unauthenticated on purpose (the token is the credential) and limited per
 * client address: `GET|POST /api/form/human_input/{token}` take web-app tokens and email
 * recipients' personal tokens. Plus `POST /api/form/human_input/{token}/files/upload` for file inputs.
 */
export const webFormRoutes: FastifyPluginAsync<{ runtime: WebFormRouteDeps }> = async (app, { runtime }) => {
  app.addHook('onRequest', async (request, reply) => {
    pageSecurityHeaders(reply);
    await checkWebFormRate(runtime, request);
  });

  app.get<{ Params: TokenParams }>('/api/form/human_input/:token', async (request) => {
    const form = await runtime.forms.getWebForm(request.params.token);
    const a = await runtime.apps.find(form.appId);
    if (!a) throw formNotFound();
    return {
      form_content: form.form_content,
      inputs: form.inputs,
      resolved_default_values: form.resolved_default_values,
      user_actions: form.user_actions,
      expiration_time: form.expiration_time,
      site: appSite((await runtime.sites.forApp(a)).settings),
    };
  });

  app.post<{ Params: TokenParams; Body: unknown }>('/api/form/human_input/:token', { preValidation: requireJson }, async (request) => {
    const { inputs, action } = submissionFields(submissionObject(request.body));
    await runtime.forms.submitWeb({ token: request.params.token, action, inputs });
    return {};
  });

  await multipartRoutes(app, (mp) =>
    mp.post<{ Params: TokenParams }>('/api/form/human_input/:token/files/upload', async (request, reply) => {
      const form = await runtime.forms.getWebForm(request.params.token);
      const a = await runtime.apps.find(form.appId);
      if (!a) throw formNotFound();
      const { pending } = await readUploadForm(request, runtime.uploads);
      if (!pending) throw noFileUploaded();
      try {
        const endUser = await runtime.endUsers.getOrCreate(a.id, FormService.webUser(form.formId));
        const uploaded = await runtime.uploads.commit(pending, { workspaceId: a.workspaceId, appId: a.id, createdBy: endUser.id, createdByRole: 'end_user' });
        return reply.code(201).send(fileResponse(uploaded));
      } catch (err) {
        await runtime.uploads.abandon(pending);
        throw err;
      }
    }),
  );
};
