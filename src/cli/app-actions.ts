/** The actions of `app …` commands (app-commands.ts defines their options). */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import type { AppService } from '../apps/app-service.js';
import { withCli, withRuntime, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { print } from './output.js';
import { findApp } from './find-app.js';
import { parseDatasetMap } from '../apps/dataset-map.js';
import type { ImportWarning } from '../engine/types.js';

/** Reads a DSL file the user named; a missing file is one line naming it. */
export function readDslFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** Asks on a terminal; refuses (false) when stdin is not one. */
async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** One warning as a line: `warning: node X (llm): … [setting: DEEPSEEK_API_KEY]`. */
function warningLine(w: ImportWarning): string {
  return w.setting ? `warning: ${w.message} [setting: ${w.setting}]` : `warning: ${w.message}`;
}

function printWarnings(warnings: readonly ImportWarning[]): void {
  for (const w of warnings) process.stderr.write(`${warningLine(w)}\n`);
}


/** `--tool` pairs, each target checked to be a workflow app of this server. */
async function toolMap(apps: AppService, pairs: readonly string[]): Promise<Map<string, string>> {
  const [{ parseToolMap }, { checkToolMap }, { ServiceError }] = await Promise.all([import('../apps/workflow-tool-map.js'), import('../console/app-lifecycle.js'), import('../infra/errors.js')]);
  const map = parseToolMap(pairs);
  await checkToolMap(apps, map, undefined, '--tool').catch((err: unknown) => {
    throw err instanceof ServiceError ? new CliError(err.message) : err;
  });
  return map;
}

export const appImport = async (file: string, opts: { json?: boolean; dataset: string[]; tool: string[] }, cmd: Command) => {
  const text = readDslFile(file);
  const datasets = parseDatasetMap(opts.dataset);
  // the warnings ask the runtime's providers, datasets, tools and code executor
  await withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const app = await rt.apps.importDsl(text, { datasets, tools: await toolMap(rt.apps, opts.tool) });
    const { apiKey } = await rt.keys.create('app', app.workspaceId, app.id);
    const warnings = await rt.appWarnings(app);
    printWarnings(warnings);
    print(opts.json, { app_id: app.id, mode: app.mode, name: app.name, api_key: apiKey, warnings }, `app_id: ${app.id}\nmode: ${app.mode}\nname: ${app.name}\napi_key: ${apiKey}`);
  });
};

export const appCheck = async (ref: string, opts: { json?: boolean }, cmd: Command) =>
  withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const app = await findApp(rt.apps, ref);
    const warnings = await rt.appWarnings(app);
    if (opts.json) print(true, { app_id: app.id, warnings }, '');
    else if (warnings.length === 0) process.stdout.write(`${app.id}: nothing missing\n`);
    else process.stdout.write(warnings.map((w) => `${warningLine(w)}\n`).join(''));
  });

export const appList = async (opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ apps }) => {
    const list = await apps.list();
    print(opts.json, list.map((a) => ({ app_id: a.id, mode: a.mode, name: a.name })), list.map((a) => `${a.id}  ${a.mode.padEnd(14)} ${a.name}\n`).join(''));
  });

export const appTools = async (opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ apps }) => {
    const { workflowToolParameters } = await import('../tools/workflow/workflow-tools.js');
    const list = (await apps.list()).filter((a) => a.mode === 'workflow');
    const rows = list.map((a) => ({
      app_id: a.id,
      name: a.name,
      description: a.description,
      parameters: workflowToolParameters(a).map((p) => ({ name: p.name, type: p.type, required: p.required, ...(p.options ? { options: p.options } : {}) })),
    }));
    const text = rows.map((r) => `${r.app_id}  ${r.name}  (${r.parameters.map((p) => `${p.name}: ${p.type}${p.required ? '' : '?'}`).join(', ')})\n`).join('');
    print(opts.json, rows, text);
  });

export const appShow = async (ref: string, opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
    const { apps, keys, store, config } = ctx;
    const app = await findApp(apps, ref);
    const appKeys = (await keys.list()).filter((k) => k.appId === app.id);
    const { cliSites, siteSummary } = await import('./site-actions.js');
    const sites = cliSites(ctx);
    const site = siteSummary(sites, app, await sites.forApp(app));
    const [{ McpServerStore }, { mcpServerView }] = await Promise.all([import('../publish/mcp-server-store.js'), import('./mcp-view.js')]);
    const mcp = mcpServerView(await new McpServerStore(store.db).byApp(app.id), config.webForms.appWebUrl);
    const { appTriggerViews, triggerLine } = await import('./trigger-actions.js');
    const triggers = app.mode === 'workflow' ? await appTriggerViews(ctx, app) : [];
    const obj = {
      app_id: app.id,
      name: app.name,
      mode: app.mode,
      description: app.description,
      version: app.version,
      created_at: Math.floor(app.createdAt / 1000),
      updated_at: Math.floor(app.updatedAt / 1000),
      keys: appKeys.map((k) => ({ id: k.id, hint: k.hint, created_at: Math.floor(k.createdAt / 1000), last_used_at: k.lastUsedAt === null ? null : Math.floor(k.lastUsedAt / 1000) })),
      site,
      mcp,
      triggers,
    };
    const text = [
      `app_id:  ${app.id}`,
      `name:    ${app.name}`,
      `mode:    ${app.mode}`,
      `version: ${app.version} (updated ${iso(app.updatedAt)}, created ${iso(app.createdAt)})`,
      `keys:    ${appKeys.length === 0 ? '(none)' : appKeys.map((k) => `${k.id} ${k.hint}`).join('\n         ')}`,
      `site:    ${site.url} (${site.enabled ? 'enabled' : 'disabled'})`,
      `mcp:     ${mcp.status}${mcp.url ? ` ${mcp.url}` : ''}`,
      ...(triggers.length ? [`triggers: ${triggers.map(triggerLine).join('\n          ')}`] : []),
    ].join('\n');
    print(opts.json, obj, text);
  });

export const appUpdate = async (ref: string, file: string, opts: { json?: boolean; dataset: string[]; tool: string[] }, cmd: Command) => {
  const text = readDslFile(file);
  const datasets = parseDatasetMap(opts.dataset);
  // the same mappings and warnings as `app import`: the warnings ask the runtime
  await withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const app = await findApp(rt.apps, ref);
    const updated = await rt.apps.update(app.id, text, { datasets, tools: await toolMap(rt.apps, opts.tool) });
    if (!updated) throw new CliError(`no app with id ${app.id}`);
    const warnings = await rt.appWarnings(updated);
    printWarnings(warnings);
    print(opts.json, { app_id: updated.id, mode: updated.mode, name: updated.name, version: updated.version, warnings }, `app_id: ${updated.id}\nname: ${updated.name}\nversion: ${updated.version}`);
  });
};

export const appExport = async (ref: string, opts: { includeSecret?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
    const [{ exportDsl }, { appBlockWithSite }, { cliSites }] = await Promise.all([import('../apps/dsl-export.js'), import('../apps/site-settings.js'), import('./site-actions.js')]);
    const app = await findApp(ctx.apps, ref);
    const site = await cliSites(ctx).forApp(app);
    process.stdout.write(exportDsl({ ...app.dsl, app: appBlockWithSite(app.dsl.app, site.settings) }, { includeSecret: opts.includeSecret }));
  });

export const appDelete = async (ref: string, opts: { yes?: boolean; purge?: boolean; json?: boolean }, cmd: Command) =>
  withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const app = await findApp(rt.apps, ref);
    const keyCount = (await rt.keys.list()).filter((k) => k.appId === app.id).length;
    const what = `app "${app.name}" (${app.id}), its ${keyCount} API key(s)${opts.purge ? ' and all its data' : ''}`;
    if (!opts.yes) {
      if (!process.stdin.isTTY) throw new CliError(`app delete would delete ${what}; pass --yes to confirm (not on a terminal, so not asking)`);
      if (!(await confirm(`Delete ${what}?`))) throw new CliError('not deleted');
    }
    const { deleteApp } = await import('../console/app-lifecycle.js');
    const { deleted, runsStopped } = await deleteApp({ apps: rt.apps, runs: rt.runs, store: rt.store, bus: rt.bus, triggers: rt.triggers, mcpServers: rt.mcpServers }, app, opts.purge === true);
    if (!deleted) throw new CliError(`no app with id ${app.id}`);
    print(opts.json, { app_id: app.id, deleted: true, keys_deleted: keyCount, runs_stopped: runsStopped, data: opts.purge ? 'purged' : 'kept' }, `deleted ${what}${runsStopped ? `; stopped ${runsStopped} run(s)` : ''}`);
  });
