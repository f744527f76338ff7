import type { Command } from 'commander';
import { systemClock } from '../infra/clock.js';
import { McpServerStore } from '../publish/mcp-server-store.js';
import { mcpServerView } from './mcp-view.js';
import { findApp } from './find-app.js';
import { withCli, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { print } from './output.js';

export interface McpOptions {
  readonly enable?: boolean;
  readonly disable?: boolean;
  readonly description?: string;
  readonly param: string[];
  readonly rotate?: boolean;
  readonly json?: boolean;
}

/** `NAME=DESCRIPTION` pairs (the description may hold `=`). */
function parseParams(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new CliError(`--param takes NAME=DESCRIPTION, got "${p}"`);
    out[p.slice(0, i)] = p.slice(i + 1);
  }
  return out;
}

/**
 * `app mcp APP [--enable | --disable] [--description TEXT] [--param NAME=DESC] [--rotate]`: the app
 * published as an MCP server (Dify's "publish as MCP"). Without options it shows the settings.
 */
export const appMcp = async (ref: string, opts: McpOptions, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ apps, store, config }) => {
    if (opts.enable && opts.disable) throw new CliError('--enable and --disable exclude each other');
    const app = await findApp(apps, ref);
    const servers = new McpServerStore(store.db);
    const params = parseParams(opts.param);
    const unknown = Object.keys(params).filter((n) => !app.inputs.some((v) => v.variable === n));
    if (unknown.length > 0) throw new CliError(`--param names no input of the app: ${unknown.join(', ')} (its inputs: ${app.inputs.map((v) => v.variable).join(', ') || 'none'})`);
    const changes = opts.enable || opts.disable || opts.description !== undefined || opts.param.length > 0 || opts.rotate;
    const server = changes
      ? await servers.save(
          app.id,
          {
            ...(opts.enable ? { status: 'active' as const } : opts.disable ? { status: 'inactive' as const } : {}),
            ...(opts.description !== undefined ? { description: opts.description } : {}),
            ...(opts.param.length > 0 ? { parameters: params } : {}),
            rotate: opts.rotate === true,
          },
          systemClock.now(),
        )
      : await servers.byApp(app.id);
    const view = mcpServerView(server, config.webForms.appWebUrl);
    const text = [`mcp:         ${view.status}`, `url:         ${view.url ?? '(none yet: --enable makes one)'}`, `description: ${view.description || '(none)'}`].join('\n');
    print(opts.json, { app_id: app.id, ...view }, text);
  });
