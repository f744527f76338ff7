import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { notWorkflowApp } from '../../apps/errors.js';
import type { Runtime } from '../../runtime.js';
import { WORKFLOW_LOG_STATUSES } from '../../runs/workflow-logs.js';
import { requireApp } from '../auth.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type WorkflowLogRouteDeps = Pick<Runtime, 'workflowLogs'>;

const LogsQuery = Type.Object({
  keyword: Type.Optional(Type.String()),
  status: Type.Optional(Type.Union(WORKFLOW_LOG_STATUSES.map((s) => Type.Literal(s)))),
  page: Type.Integer({ minimum: 1, maximum: 99999, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  created_at__before: Type.Optional(Type.String()),
  created_at__after: Type.Optional(Type.String()),
  created_by_end_user_session_id: Type.Optional(Type.String()),
  created_by_account: Type.Optional(Type.String()),
});

/** `GET /workflows/logs` for workflow apps. */
export const workflowLogRoutes: FastifyPluginAsync<{ runtime: WorkflowLogRouteDeps }> = async (app, { runtime }) => {
  const logs = runtime.workflowLogs;
  app.get<{ Querystring: Static<typeof LogsQuery> }>('/workflows/logs', { schema: { querystring: LogsQuery } }, async (request) => {
    const a = requireApp(request);
    if (a.mode !== 'workflow') throw notWorkflowApp();
    const q = request.query;
    return logs.page(a.id, {
      keyword: q.keyword,
      status: q.status,
      page: q.page,
      limit: q.limit,
      createdBefore: q.created_at__before,
      createdAfter: q.created_at__after,
      endUserSessionId: q.created_by_end_user_session_id,
      account: q.created_by_account,
    });
  });
};
