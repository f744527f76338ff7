import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { ConfigError } from './config.js';
import { DslError } from './apps/errors.js';
import { ServiceError } from './infra/errors.js';
import { CliError } from './cli/cli-error.js';
import { appCommands } from './cli/app-commands.js';
import { keyCommands } from './cli/key-commands.js';
import { adminCommands } from './cli/admin-commands.js';
import { runCommands } from './cli/run-commands.js';
import { jobCommands } from './cli/job-commands.js';
import { serve } from './cli/serve.js';

/** The package version (package.json, beside `src/` and `dist/` alike). */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

export function buildCli(): Command {
  const program = new Command('dovetail')
    .description('A self-hostable server for the Dify Service API')
    .version(version(), '-V, --version', 'print the version')
    .option('--init', 'create the database when there is none (commands refuse to otherwise)')
    .exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  program
    .command('serve')
    .description('start the HTTP server')
    .option('--role <role>', 'api (serve the API only), worker (run background jobs; serve only /health, /ready, /metrics) or all; default DOVETAIL_ROLE, else all')
    .action((opts: { role?: string }) => serve(opts));
  program
    .command('worker')
    .description('start a worker process: the same as `serve --role worker`')
    .action(() => serve({ role: 'worker' }));
  appCommands(program);
  keyCommands(program);
  runCommands(program);
  jobCommands(program);
  adminCommands(program);
  return program;
}

/** Runs the CLI; every failure is one line on stderr and a non-zero exit. */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    const known = err instanceof CliError || err instanceof DslError || err instanceof ConfigError || err instanceof ServiceError;
    process.stderr.write(`error: ${known ? (err as Error).message : String((err as Error).stack ?? err)}\n`);
    process.exitCode = 1;
    // A command that failed ends even when something it opened (a reconnecting Redis client, a
    // database pool, a worker thread of a server that failed to start) would hold the event loop.
    setTimeout(() => process.exit(1), FAILED_EXIT_GRACE_MS).unref();
  }
}

/** How long a failed command may take to flush its output before it is made to exit. */
const FAILED_EXIT_GRACE_MS = 500;

if (process.argv[1] && /cli\.(ts|js)$/.test(process.argv[1])) await main(process.argv);
