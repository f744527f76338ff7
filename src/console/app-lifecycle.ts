import type { App, AppService } from '../apps/app-service.js';
import { KEYS_REVOKED_CHANNEL, type KeyService } from '../apps/key-service.js';
import { invalidParam } from '../infra/errors.js';
import type { Bus } from '../infra/bus/bus.js';
import type { Store } from '../store/db.js';
import type { RunService } from '../runs/run-service.js';
import type { TriggerService } from '../triggers/triggers.js';
import type { McpServers } from '../publish/mcp-servers.js';

/**
 * What `dovetail app delete` and the console's delete do, in one place: runs still executing or
 * waiting stop (from any instance, through the durable stop flag), the app and its keys go (with
 * all its data when `purge`), its triggers and MCP server with it, and every instance drops its cached keys of the app.
 */
export async function deleteApp(deps: { apps: AppService; runs: RunService; store: Store; bus: Bus | undefined; triggers: Pick<TriggerService, 'store'>; mcpServers: Pick<McpServers, 'removeApp'> }, app: App, purge: boolean): Promise<{ deleted: boolean; runsStopped: number }> {
  const [{ RunStore }, { purgeAppData }] = await Promise.all([import('../runs/run-store.js'), import('./app-purge.js')]);
  const active = await new RunStore(deps.store.db).activeTaskIds(app.id);
  for (const taskId of active) await deps.runs.stopTask(app.id, taskId, { reason: 'The app was deleted.' });
  if (!(await deps.apps.delete(app.id, purge ? purgeAppData : undefined))) return { deleted: false, runsStopped: active.length };
  // its webhooks and its MCP server answer 404, and its schedules stop, at once
  await deps.triggers.store.deleteApp(app.id);
  await deps.mcpServers.removeApp(app.id);
  await deps.bus?.publish(KEYS_REVOKED_CHANNEL, app.id);
  return { deleted: true, runsStopped: active.length };
}

/** Revokes an app's key (`dovetail key revoke`); every instance sharing the bus drops it from its cache. False when the key is not the app's. */
export async function revokeAppKey(deps: { keys: KeyService; bus: Bus | undefined }, appId: string, keyId: string): Promise<boolean> {
  const key = (await deps.keys.list()).find((k) => k.id === keyId && k.appId === appId);
  if (!key) return false;
  if (!(await deps.keys.revoke(keyId))) return false;
  await deps.bus?.publish(KEYS_REVOKED_CHANNEL, keyId);
  return true;
}

/**
 * `--tool OLD=APP_ID` mappings checked as `app import` checks them: each target a workflow app (of
 * `workspaceId` when given: the console maps only to its own workspace's apps). `field` names the
 * option in the message (`--tool` on the command line, `tools` in the console).
 */
export async function checkToolMap(apps: AppService, map: ReadonlyMap<string, string>, workspaceId: string | undefined, field: string): Promise<void> {
  for (const [old, id] of map) {
    const target = workspaceId === undefined ? await apps.find(id) : await apps.findIn(workspaceId, id);
    if (!target) throw invalidParam(`${field} ${old}=${id}: no app with id ${id} (app tools lists the workflow apps)`);
    if (target.mode !== 'workflow') throw invalidParam(`${field} ${old}=${id}: app ${id} is a ${target.mode} app; only workflow apps run as tools`);
  }
}
