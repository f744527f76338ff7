import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { resolveRange } from '../../console/stats-range.js';
import type { StatsApp } from '../../console/app-stats.js';
import { consoleMember, requireRole } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleStatsDeps = Pick<Runtime, 'apps' | 'appStats' | 'config'>;

/** A range: local dates (or Dify's `YYYY-MM-DD HH:MM`) in an IANA time zone; `end` is exclusive. */
const RangeQuery = Type.Object({
  start: Type.String({ minLength: 1, maxLength: 16 }),
  end: Type.String({ minLength: 1, maxLength: 16 }),
  timezone: Type.String({ minLength: 1, maxLength: 64 }),
});
type Range = { start: string; end: string; timezone: string };

/**
 * The monitoring figures per local day (`src/console/app-stats.ts`), viewer and up:
 * `GET /console/api/apps/{app_id}/statistics` (one app) and `GET /console/api/statistics` (every app
 * of the member's workspace), `?start=YYYY-MM-DD&end=YYYY-MM-DD&timezone=Area/City`.
 */
export const consoleStatsRoutes: FastifyPluginAsync<{ runtime: ConsoleStatsDeps }> = async (app, { runtime }) => {
  const answer = async (apps: readonly StatsApp[], q: Range) => {
    const range = resolveRange(q, runtime.config.consoleStatsMaxDays);
    const r = await runtime.appStats.daily(apps, range);
    return { start: q.start, end: q.end, timezone: range.timezone, kinds: r.kinds, data: r.days };
  };

  app.get<{ Params: { app_id: string }; Querystring: Range }>('/apps/:app_id/statistics', { schema: { querystring: RangeQuery }, preHandler: requireRole('viewer') }, async (request) => {
    const a = await runtime.apps.findIn(consoleMember(request).workspaceId, request.params.app_id);
    if (!a) throw notFound('App not found.');
    return { app: { id: a.id, name: a.name, mode: a.mode }, ...(await answer([{ id: a.id, mode: a.mode }], request.query)) };
  });

  app.get<{ Querystring: Range }>('/statistics', { schema: { querystring: RangeQuery }, preHandler: requireRole('viewer') }, async (request) => {
    const apps = await runtime.apps.listIn(consoleMember(request).workspaceId);
    return { app: null, apps: apps.length, ...(await answer(apps.map((a) => ({ id: a.id, mode: a.mode })), request.query)) };
  });
};
