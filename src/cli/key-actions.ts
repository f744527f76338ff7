/** The actions of key-commands.ts, loaded only when their command runs. */
import type { Command } from 'commander';
import { withCli, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { print } from './output.js';
import { KEYS_REVOKED_CHANNEL } from '../apps/key-service.js';

export const keyCreate = async (opts: { app?: string; dataset?: boolean; json?: boolean }, cmd: Command) => {
  if (!!opts.app === !!opts.dataset) throw new CliError('key create needs exactly one of --app APP_ID or --dataset');
  await withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ apps, keys }) => {
    if (opts.app) {
      const app = await apps.find(opts.app);
      if (!app) throw new CliError(`no app with id ${opts.app}`);
      const { apiKey } = await keys.create('app', app.workspaceId, app.id);
      print(opts.json, { api_key: apiKey }, apiKey);
    } else {
      const { apiKey } = await keys.create('dataset', await apps.workspaceId(), null);
      print(opts.json, { api_key: apiKey }, apiKey);
    }
  });
};

export const keyList = async (opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ keys }) => {
    const list = await keys.list();
    const rows = list.map((k) => ({ id: k.id, type: k.type, app_id: k.appId, hint: k.hint }));
    print(opts.json, rows, list.map((k) => `${k.id}  ${k.type.padEnd(8)} ${k.hint.padEnd(16)} ${k.appId ?? '(all datasets)'}\n`).join(''));
  });

export const keyRevoke = async (id: string, opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
    if (!(await ctx.keys.revoke(id))) throw new CliError(`no key with id ${id}`);
    // Instances that cache keys (those sharing a Redis bus) drop it before this command returns.
    await (await ctx.bus())?.publish(KEYS_REVOKED_CHANNEL, id);
    print(opts.json, { id, revoked: true }, `revoked ${id}`);
  });
