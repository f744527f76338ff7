import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { App } from '../../apps/app-service.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { CONVERSATION_LOG_SORTS, LOG_FEEDBACK_FILTERS } from '../../messages/message-logs.js';
import { WORKFLOW_LOG_STATUSES } from '../../runs/workflow-logs.js';
import { consoleMember, requireRole } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleLogDeps = Pick<Runtime, 'apps' | 'messageLogs' | 'workflowLogs' | 'runTraces' | 'config'>;

const CHAT_MODES = new Set(['chat', 'agent-chat', 'advanced-chat']);

const Id = Type.String({ minLength: 1, maxLength: 64 });
const when = (field: string) => Type.Optional(Type.String({ maxLength: 40, description: `${field}: ISO 8601 (a date or a date and time)` }));

/** `start` / `end` as epoch ms (`end` a date: through the end of that day, UTC). */
function range(q: { start?: string; end?: string }): { createdAfter?: number; createdBefore?: number } {
  const parse = (field: string, v: string | undefined, endOfDay: boolean): number | undefined => {
    if (v === undefined || v === '') return undefined;
    const ms = Date.parse(v);
    if (Number.isNaN(ms)) throw invalidParam(`${field} must be an ISO 8601 date or timestamp, got "${v.slice(0, 40)}"`);
    return endOfDay && /^\d{4}-\d{2}-\d{2}$/.test(v) ? ms + 86_400_000 : ms;
  };
  const createdAfter = parse('start', q.start, false);
  const createdBefore = parse('end', q.end, true);
  return { ...(createdAfter !== undefined ? { createdAfter } : {}), ...(createdBefore !== undefined ? { createdBefore } : {}) };
}

/**
 * The console's logs (issue #44, viewer and up): `GET /console/api/apps/{app_id}/conversations`
 * (chat-type apps), `…/conversations/{conversation_id}`, `…/messages` (completion apps), `…/runs`
 * (workflow apps), `…/runs/{run_id}/trace` (any run of the app, `after_seq` for what is new) and
 * `…/runs/{run_id}/nodes/{execution_id}`. An app of another workspace answers 404.
 */
export const consoleLogRoutes: FastifyPluginAsync<{ runtime: ConsoleLogDeps }> = async (app, { runtime }) => {
  const max = runtime.config.consoleLogs.maxLimit;
  const Page = {
    page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
    limit: Type.Integer({ minimum: 1, maximum: max, default: 20, description: `at most ${max} (CONSOLE_LOG_MAX_LIMIT)` }),
  };
  const ListQuery = Type.Object({
    ...Page,
    start: when('start'),
    end: when('end'),
    feedback: Type.Optional(Type.Union(LOG_FEEDBACK_FILTERS.map((f) => Type.Literal(f)))),
    keyword: Type.Optional(Type.String({ maxLength: 1000 })),
  });
  const ConversationsQuery = Type.Object({ ...ListQuery.properties, sort_by: Type.Optional(Type.Union(CONVERSATION_LOG_SORTS.map((s) => Type.Literal(s)))) });
  const RunsQuery = Type.Object({ ...Page, start: when('start'), end: when('end'), status: Type.Optional(Type.Union(WORKFLOW_LOG_STATUSES.map((s) => Type.Literal(s)))), keyword: Type.Optional(Type.String({ maxLength: 1000 })) });
  const TraceQuery = Type.Object({ after_seq: Type.Integer({ minimum: 0, default: 0 }) });
  const viewer = { preHandler: requireRole('viewer') };

  const appOf = async (request: FastifyRequest, appId: string): Promise<App> => {
    const a = await runtime.apps.findIn(consoleMember(request).workspaceId, appId);
    if (!a) throw notFound('App not found.');
    return a;
  };

  app.get<{ Params: { app_id: string }; Querystring: Static<typeof ConversationsQuery> }>('/apps/:app_id/conversations', { ...viewer, schema: { params: Type.Object({ app_id: Id }), querystring: ConversationsQuery } }, async (request) => {
    const a = await appOf(request, request.params.app_id);
    if (!CHAT_MODES.has(a.mode)) throw invalidParam(`app_id: a ${a.mode} app has no conversations (its log is …/${a.mode === 'workflow' ? 'runs' : 'messages'})`);
    const q = request.query;
    return runtime.messageLogs.conversations({ appId: a.id, page: q.page, limit: q.limit, ...range(q), ...(q.feedback ? { feedback: q.feedback } : {}), ...(q.keyword ? { keyword: q.keyword } : {}), ...(q.sort_by ? { sort: q.sort_by } : {}) });
  });

  app.get<{ Params: { app_id: string; conversation_id: string }; Querystring: { page: number; limit: number } }>(
    '/apps/:app_id/conversations/:conversation_id',
    { ...viewer, schema: { params: Type.Object({ app_id: Id, conversation_id: Id }), querystring: Type.Object(Page) } },
    async (request) => {
      const a = await appOf(request, request.params.app_id);
      const c = await runtime.messageLogs.conversation(a.id, request.params.conversation_id, request.query);
      if (!c) throw notFound('Conversation not found.');
      return c;
    },
  );

  app.get<{ Params: { app_id: string }; Querystring: Static<typeof ListQuery> }>('/apps/:app_id/messages', { ...viewer, schema: { params: Type.Object({ app_id: Id }), querystring: ListQuery } }, async (request) => {
    const a = await appOf(request, request.params.app_id);
    const q = request.query;
    return runtime.messageLogs.messages({ appId: a.id, page: q.page, limit: q.limit, ...range(q), ...(q.feedback ? { feedback: q.feedback } : {}), ...(q.keyword ? { keyword: q.keyword } : {}) });
  });

  app.get<{ Params: { app_id: string }; Querystring: Static<typeof RunsQuery> }>('/apps/:app_id/runs', { ...viewer, schema: { params: Type.Object({ app_id: Id }), querystring: RunsQuery } }, async (request) => {
    const a = await appOf(request, request.params.app_id);
    const q = request.query;
    return runtime.workflowLogs.consolePage(a.id, { page: q.page, limit: q.limit, ...range(q), ...(q.status ? { status: q.status } : {}), ...(q.keyword ? { keyword: q.keyword } : {}) }, runtime.config.consoleLogs.countLimit);
  });

  app.get<{ Params: { app_id: string; run_id: string }; Querystring: { after_seq: number } }>(
    '/apps/:app_id/runs/:run_id/trace',
    { ...viewer, schema: { params: Type.Object({ app_id: Id, run_id: Id }), querystring: TraceQuery } },
    async (request) => {
      const a = await appOf(request, request.params.app_id);
      const run = await runtime.runTraces.run(a.id, request.params.run_id);
      if (!run) throw notFound('Run not found.');
      return runtime.runTraces.trace(run, { afterSeq: request.query.after_seq });
    },
  );

  app.get<{ Params: { app_id: string; run_id: string; execution_id: string } }>(
    '/apps/:app_id/runs/:run_id/nodes/:execution_id',
    { ...viewer, schema: { params: Type.Object({ app_id: Id, run_id: Id, execution_id: Id }) } },
    async (request) => {
      const a = await appOf(request, request.params.app_id);
      const run = await runtime.runTraces.run(a.id, request.params.run_id);
      if (!run) throw notFound('Run not found.');
      const node = await runtime.runTraces.node(run, request.params.execution_id);
      if (!node) throw notFound('Node execution not found.');
      return node;
    },
  );
};
