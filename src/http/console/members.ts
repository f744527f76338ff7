import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { ConsoleAccount } from '../../accounts/account-service.js';
import type { Runtime } from '../../runtime.js';
import { consoleMember, requireRole } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleMemberDeps = Pick<Runtime, 'accounts'>;

const memberJson = (m: ConsoleAccount) => ({ id: m.id, name: m.name, email: m.email, role: m.role, has_password: m.passwordHash !== null });

const RoleBody = Type.Object({ role: Type.String() });

/**
 * `GET /console/api/members`: the workspace's accounts with their roles; `PATCH
 * /console/api/members/{id}` `{role}` changes one (admin and owner: they manage accounts; the rules
 * are `AccountService.changeRole`'s).
 */
export const consoleMemberRoutes: FastifyPluginAsync<{ runtime: ConsoleMemberDeps }> = async (app, { runtime }) => {
  app.get('/members', { preHandler: requireRole('admin') }, async (request) => {
    const data = (await runtime.accounts.members(consoleMember(request).workspaceId)).map(memberJson);
    return { data, has_more: false, limit: data.length, page: 1, total: data.length };
  });
  app.patch<{ Params: { member_id: string }; Body: Static<typeof RoleBody> }>('/members/:member_id', { preHandler: requireRole('admin'), schema: { body: RoleBody } }, async (request) =>
    memberJson(await runtime.accounts.changeRole(consoleMember(request), request.params.member_id, request.body.role)),
  );
};
