import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { formLink } from '../../mail/form-mail.js';
import type { Runtime } from '../../runtime.js';
import { consoleMember, roleAtLeast } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleFormDeps = Pick<Runtime, 'apps' | 'config' | 'forms'>;

/**
 * `GET /console/api/forms`: the runs of this workspace paused on Human Input, one row per form
 * still waiting, the soonest deadline first, optionally of one app. The form's link is a credential
 * (whoever has it answers the form): editors and above get it; a viewer sees that it waits and
 * until when.
 */
export const consoleFormRoutes: FastifyPluginAsync<{ runtime: ConsoleFormDeps }> = async (app, { runtime }) => {
  const { listMax } = runtime.config.console;
  const Query = Type.Object({ app_id: Type.Optional(Type.String({ maxLength: 64 })), limit: Type.Integer({ minimum: 1, maximum: listMax, default: listMax }) });
  app.get<{ Querystring: { app_id?: string; limit: number } }>('/forms', { schema: { querystring: Query } }, async (request) => {
    const member = consoleMember(request);
    const apps = (await runtime.apps.listIn(member.workspaceId)).filter((a) => !request.query.app_id || a.id === request.query.app_id);
    const names = new Map(apps.map((a) => [a.id, a.name]));
    const forms = await runtime.forms.waitingInApps([...names.keys()], request.query.limit);
    const withLinks = roleAtLeast(member.role, 'editor');
    const data = forms.map((f) => ({
      id: f.id,
      app_id: f.appId,
      app_name: names.get(f.appId) ?? '',
      workflow_run_id: f.runId,
      node_id: f.nodeId,
      node_title: f.nodeTitle,
      web_page: f.token !== null,
      link: withLinks && f.token !== null ? formLink(runtime.config.webForms.appWebUrl, f.token) : null,
      expiration_time: Math.floor(f.expirationTime / 1000),
      created_at: Math.floor(f.createdAt / 1000),
    }));
    return { data, has_more: data.length === request.query.limit, limit: request.query.limit, page: 1, total: data.length };
  });
};
