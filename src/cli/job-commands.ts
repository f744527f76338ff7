import type { Command } from 'commander';
import { withCli, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { print } from './output.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** `jobs list | retry`: background jobs of the deployment's queue (embedded or BullMQ), failed ("dead") ones kept. */
export function jobCommands(program: Command): void {
  const jobs = program.command('jobs').description('list background jobs and retry failed ones');
  jobs
    .command('list')
    .description('list background jobs, newest first')
    .option('--failed', 'only failed ("dead") jobs')
    .option('--limit <n>', 'at most this many (default 100)', '100')
    .option('--json', 'print one JSON array')
    .action(async (opts: { failed?: boolean; limit: string; json?: boolean }, cmd: Command) => {
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new CliError(`--limit must be an integer from 1 to 10000, got "${opts.limit}"`);
      await withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
        const list = await (await ctx.queue()).list({ failedOnly: !!opts.failed, limit });
        const rows = list.map((j) => ({ id: j.id, kind: j.kind, status: j.status, attempts: j.attempts, max_attempts: j.maxAttempts, last_error: j.lastError, run_at: iso(j.runAt), created_at: iso(j.createdAt) }));
        const text = list.map((j) => `${j.id}  ${j.status.padEnd(7)} ${j.kind.padEnd(22)} ${j.attempts}/${j.maxAttempts}  ${iso(j.createdAt)}${j.lastError ? `  ${j.lastError.split('\n')[0]}` : ''}\n`).join('');
        print(opts.json, rows, text || (opts.failed ? 'no failed jobs\n' : 'no jobs\n'));
      });
    });
  jobs
    .command('retry')
    .description('queue a failed job again, with its attempts reset')
    .argument('<job_id>', 'id shown by `jobs list --failed`')
    .option('--json', 'print one JSON object')
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) =>
      withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
        if (!(await (await ctx.queue()).retry(id))) throw new CliError(`no failed job with id ${id}`);
        print(opts.json, { id, retried: true }, `queued ${id} again`);
      }),
    );
}
