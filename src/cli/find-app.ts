import type { App, AppService } from '../apps/app-service.js';
import { CliError } from './cli-error.js';

/** The app named by id, or by its exact name when one app has it. */
export async function findApp(apps: AppService, ref: string): Promise<App> {
  const byId = await apps.find(ref);
  if (byId) return byId;
  const named = (await apps.list()).filter((a) => a.name === ref);
  if (named.length === 1) return named[0]!;
  throw new CliError(named.length > 1 ? `${named.length} apps are named "${ref}"; use the app id (app list)` : `no app with id or name ${ref}`);
}
