import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { App } from '../../apps/app-service.js';
import { notFound } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { consoleMember } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleAppDeps = Pick<Runtime, 'apps'>;

/** An app in the console's lists (snake_case, as Dify's console). */
export function appItem(a: App) {
  return {
    id: a.id,
    name: a.name,
    mode: a.mode,
    description: a.description,
    icon: a.icon,
    version: a.version,
    enable_api: a.enableApi,
    created_at: Math.floor(a.createdAt / 1000),
    updated_at: Math.floor(a.updatedAt / 1000),
  };
}

const ListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 30 }),
  keyword: Type.Optional(Type.String({ maxLength: 255 })),
});

/** The apps of the member's workspace: `GET /console/api/apps` (search by name) and `GET /console/api/apps/{app_id}`. */
export const consoleAppRoutes: FastifyPluginAsync<{ runtime: ConsoleAppDeps }> = async (app, { runtime }) => {
  app.get<{ Querystring: { page: number; limit: number; keyword?: string } }>('/apps', { schema: { querystring: ListQuery } }, async (request) => {
    const { page, limit } = request.query;
    const keyword = request.query.keyword?.trim().toLowerCase() ?? '';
    const all = (await runtime.apps.listIn(consoleMember(request).workspaceId)).filter((a) => keyword === '' || a.name.toLowerCase().includes(keyword));
    all.reverse(); // newest first
    const data = all.slice((page - 1) * limit, page * limit).map(appItem);
    return { data, has_more: page * limit < all.length, limit, page, total: all.length };
  });

  app.get<{ Params: { app_id: string } }>('/apps/:app_id', async (request) => {
    const a = await runtime.apps.findIn(consoleMember(request).workspaceId, request.params.app_id);
    if (!a) throw notFound('App not found.');
    return appItem(a);
  });
};
