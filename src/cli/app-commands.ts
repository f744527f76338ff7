import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { withCli, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { print } from './output.js';

/** Reads a DSL file the user named; a missing file is one line naming it. */
export function readDslFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** `app import | list | show | update | export | delete`. */
export function appCommands(program: Command): void {
  const appCmd = program.command('app').description('manage apps');
  appCmd
    .command('import')
    .argument('<file>', 'Dify DSL YAML file')
    .option('--json', 'print one JSON object')
    .description('create an app from a Dify DSL file and print a new API key')
    .action(async (file: string, opts: { json?: boolean }, cmd: Command) => {
      const text = readDslFile(file);
      await withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ apps, keys }) => {
        const app = await apps.importDsl(text);
        const { apiKey } = await keys.create('app', app.workspaceId, app.id);
        print(opts.json, { app_id: app.id, mode: app.mode, name: app.name, api_key: apiKey }, `app_id: ${app.id}\nmode: ${app.mode}\nname: ${app.name}\napi_key: ${apiKey}`);
      });
    });
  appCmd
    .command('list')
    .description('list apps')
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }, cmd: Command) =>
      withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ apps }) => {
        const list = await apps.list();
        print(opts.json, list.map((a) => ({ app_id: a.id, mode: a.mode, name: a.name })), list.map((a) => `${a.id}  ${a.mode.padEnd(14)} ${a.name}\n`).join(''));
      }),
    );
}
