import type { Command } from 'commander';

/** `jobs list | retry`: background jobs of the deployment's queue (embedded or BullMQ), failed ("dead") ones kept. */
export function jobCommands(program: Command): void {
  const jobs = program.command('jobs').description('list background jobs and retry failed ones');
  jobs
    .command('list')
    .description('list background jobs, newest first')
    .option('--failed', 'only failed ("dead") jobs')
    .option('--limit <n>', 'at most this many (1 to 10000)', '100')
    .option('--json', 'print one JSON array')
    .action(async (opts: { failed?: boolean; limit: string; json?: boolean }, cmd: Command) => (await import('./job-actions.js')).jobList(opts, cmd));
  jobs
    .command('retry')
    .description('queue a failed job again, with its attempts reset')
    .argument('<job_id>', 'id shown by `jobs list --failed`')
    .option('--json', 'print one JSON object')
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => (await import('./job-actions.js')).jobRetry(id, opts, cmd));
}
