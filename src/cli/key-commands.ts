import type { Command } from 'commander';

/** `key create | list | revoke`. */
export function keyCommands(program: Command): void {
  const keyCmd = program.command('key').description('manage API keys');
  keyCmd
    .command('create')
    .description('create an API key and print it (shown only this once)')
    .option('--app <app_id>', 'create an app key for this app')
    .option('--dataset', 'create a knowledge key (reaches every dataset)')
    .option('--json', 'print one JSON object')
    .action(async (opts: { app?: string; dataset?: boolean; json?: boolean }, cmd: Command) => (await import('./key-actions.js')).keyCreate(opts, cmd));
  keyCmd
    .command('list')
    .description('list API keys (their hints; the keys themselves are not stored)')
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }, cmd: Command) => (await import('./key-actions.js')).keyList(opts, cmd));
  keyCmd
    .command('revoke')
    .description('delete an API key; every server instance refuses it at once')
    .argument('<key_id>', 'id shown by `key list`')
    .option('--json', 'print one JSON object')
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => (await import('./key-actions.js')).keyRevoke(id, opts, cmd));
}
