import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { appCommands } from './cli/app-commands.js';
import { keyCommands } from './cli/key-commands.js';
import { adminCommands } from './cli/admin-commands.js';
import { runCommands } from './cli/run-commands.js';
import { jobCommands } from './cli/job-commands.js';

// Only commander and the commands' options load here: each action imports what it uses when its
// command runs (`--version` and `--help` load nothing else; test/e2e/cli-startup.test.ts).

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
    .action(async (opts: { role?: string }) => (await import('./cli/serve.js')).serve(opts));
  program
    .command('worker')
    .description('start a worker process: the same as `serve --role worker`')
    .action(async () => (await import('./cli/serve.js')).serve({ role: 'worker' }));
  appCommands(program);
  keyCommands(program);
  runCommands(program);
  jobCommands(program);
  adminCommands(program);
  return program;
}

/**
 * Runs the CLI; every failure is one line on stderr and a non-zero exit. With `--json` the failure
 * is also one JSON document on stdout (`{"code","message","exit_code"}`), so that a program reading
 * stdout gets JSON whether the command worked or not.
 */
export async function main(argv: string[]): Promise<void> {
  const json = argv.slice(2).includes('--json');
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      if (json && process.exitCode !== 0) process.stdout.write((await import('./cli/cli-failure.js')).failureJson(err, 2, { code: err.code, message: err.message }));
      return;
    }
    const { knownError, failureJson } = await import('./cli/cli-failure.js');
    process.stderr.write(`error: ${knownError(err) ? err.message : String((err as Error).stack ?? err)}\n`);
    process.exitCode = 1;
    if (json) process.stdout.write(failureJson(err, 1));
    // A command that failed ends even when something it opened (a reconnecting Redis client, a
    // database pool, a worker thread of a server that failed to start) would hold the event loop.
    setTimeout(() => process.exit(1), FAILED_EXIT_GRACE_MS).unref();
  }
}

/** How long a failed command may take to flush its output before it is made to exit. */
const FAILED_EXIT_GRACE_MS = 500;

if (process.argv[1] && /cli\.(ts|js)$/.test(process.argv[1])) await main(process.argv);
