import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { requireUser } from '../user-arg.js';
import { submissionFields, submissionObject } from '../form-submission.js';
import { FormSubmitBody } from '../knowledge-schemas.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type HumanInputFormRouteDeps = Pick<Runtime, 'forms'>;

interface TokenParams {
  form_token: string;
}

/** `GET|POST /form/human_input/{form_token}` — fetch and submit a paused run's form. */
export const humanInputFormRoutes: FastifyPluginAsync<{ runtime: HumanInputFormRouteDeps }> = async (app, { runtime }) => {
  app.get<{ Params: TokenParams }>('/form/human_input/:form_token', async (request) => {
    const a = requireApp(request);
    return runtime.forms.getForm(a.id, request.params.form_token);
  });

  app.post<{ Params: TokenParams; Body: unknown }>(
    '/form/human_input/:form_token',
    { preValidation: requireJson, schema: { body: FormSubmitBody } },
    async (request) => {
      const a = requireApp(request);
      const body = submissionObject(request.body);
      const user = requireUser(body.user);
      const { inputs, action } = submissionFields(body);
      await runtime.forms.submit({
        appId: a.id,
        workspaceId: a.workspaceId,
        token: request.params.form_token,
        action,
        inputs,
        user,
      });
      return {};
    },
  );
};
