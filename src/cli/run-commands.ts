import type { Command } from 'commander';
import { LIMIT_MAX, STATUSES } from './run-options.js';

/** `run list | show | events`: runs of every app mode, from the database. */
export function runCommands(program: Command): void {
  const runCmd = program.command('run').description('see runs (workflow and chatflow runs; messages of completion and chat apps) and their events');
  runCmd
    .command('list')
    .description('list runs, newest first')
    .option('--app <app_id>', 'only this app')
    .option('--status <status>', `only this status (${STATUSES.join(', ')})`)
    .option('--limit <n>', `at most this many (1 to ${LIMIT_MAX}, default 20)`)
    .option('--json', 'print one JSON array')
    .action(async (opts: { app?: string; status?: string; limit?: string; json?: boolean }, cmd: Command) => (await import('./run-actions.js')).runList(opts, cmd));
  runCmd
    .command('show')
    .description('show a run: status, inputs, outputs, usage')
    .argument('<run_id>', 'workflow run id (or message id of a completion / chat app)')
    .option('--json', 'print one JSON object')
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => (await import('./run-actions.js')).runShow(id, opts, cmd));
  runCmd
    .command('events')
    .description("print a run's logged events; on a terminal, follows a running run to its end with a progress line")
    .argument('<run_id>', 'workflow run id')
    .option('--follow', 'follow a running run until it finishes or pauses, also when not on a terminal')
    .option('--json', 'print one JSON array of the events logged so far (never follows)')
    .action(async (id: string, opts: { follow?: boolean; json?: boolean }, cmd: Command) => (await import('./run-actions.js')).runEventsCommand(id, opts, cmd));
}
