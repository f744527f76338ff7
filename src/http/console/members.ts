import type { FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { consoleMember, requireRole } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleMemberDeps = Pick<Runtime, 'accounts'>;

/** `GET /console/api/members`: the workspace's accounts with their roles (admin and owner: they manage accounts). */
export const consoleMemberRoutes: FastifyPluginAsync<{ runtime: ConsoleMemberDeps }> = async (app, { runtime }) => {
  app.get('/members', { preHandler: requireRole('admin') }, async (request) => {
    const members = await runtime.accounts.members(consoleMember(request).workspaceId);
    const data = members.map((m) => ({ id: m.id, name: m.name, email: m.email, role: m.role, has_password: m.passwordHash !== null }));
    return { data, has_more: false, limit: data.length, page: 1, total: data.length };
  });
};
