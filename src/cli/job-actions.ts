/** The actions of job-commands.ts, loaded only when their command runs. */
import type { Command } from 'commander';
import { withCli, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { print } from './output.js';

const iso = (ms: number) => new Date(ms).toISOString();

export const jobList = async (opts: { failed?: boolean; limit: string; json?: boolean }, cmd: Command) => {
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new CliError(`--limit must be an integer from 1 to 10000, got "${opts.limit}"`);
  await withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
    const list = await (await ctx.queue()).list({ failedOnly: !!opts.failed, limit });
    const rows = list.map((j) => ({ id: j.id, kind: j.kind, status: j.status, attempts: j.attempts, max_attempts: j.maxAttempts, last_error: j.lastError, run_at: iso(j.runAt), created_at: iso(j.createdAt) }));
    const text = list.map((j) => `${j.id}  ${j.status.padEnd(7)} ${j.kind.padEnd(22)} ${j.attempts}/${j.maxAttempts}  ${iso(j.createdAt)}${j.lastError ? `  ${j.lastError.split('\n')[0]}` : ''}\n`).join('');
    print(opts.json, rows, text || (opts.failed ? 'no failed jobs\n' : 'no jobs\n'));
  });
};

export const jobRetry = async (id: string, opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
    if (!(await (await ctx.queue()).retry(id))) throw new CliError(`no failed job with id ${id}`);
    print(opts.json, { id, retried: true }, `queued ${id} again`);
  });
