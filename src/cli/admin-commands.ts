import type { Command } from 'commander';
import { withCli, withRuntime, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { ServiceError } from '../infra/errors.js';
import { AccountService } from '../accounts/account-service.js';
import { systemClock } from '../infra/clock.js';
import { print } from './output.js';

/** `migrate`, `feedback add`, `dataset create`, `account create`. */
export function adminCommands(program: Command): void {
  program
    .command('account')
    .description('workspace members (admin feedback, Human Input email recipients)')
    .command('create')
    .requiredOption('--name <name>', 'account name (feedback --account uses it)')
    .option('--email <address>', 'where Human Input email to this member goes')
    .option('--json', 'print one JSON object')
    .action(async (opts: { name: string; email?: string; json?: boolean }, cmd: Command) =>
      // The database alone (not the whole runtime, which takes seconds to start): accounts need nothing else.
      withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store }) => {
        const a = await new AccountService(store.db, systemClock).create({ name: opts.name, email: opts.email }).catch((err: unknown) => {
          // The service names the field (`name …`, `email …`); on the command line that is the option.
          if (err instanceof ServiceError && err.code === 'invalid_param') throw new CliError(`--${err.message}`);
          throw err;
        });
        print(opts.json, { ...a }, `${a.id}  ${a.name}${a.email ? `  <${a.email}>` : ''}`);
      }),
    );

  program
    .command('migrate')
    .description('create (with --init) or upgrade the database schema')
    .option('--json', 'print one JSON object')
    .action(async (opts: { json?: boolean }, cmd: Command) =>
      withCli(cmd.optsWithGlobals<GlobalOptions>(), async () => print(opts.json, { status: 'up_to_date' }, 'database is up to date')),
    );

  program
    .command('feedback')
    .description('message feedback')
    .command('add')
    .description('leave admin feedback on a message (from_source "admin")')
    .requiredOption('--message <message_id>', 'message id')
    .requiredOption('--rating <rating>', 'like | dislike')
    .option('--content <text>', 'feedback text')
    .requiredOption('--account <name>', 'admin account name (created on first use)')
    .option('--json', 'print the feedback item as JSON')
    .action(async (opts: { message: string; rating: string; content?: string; account: string; json?: boolean }, cmd: Command) => {
      if (opts.rating !== 'like' && opts.rating !== 'dislike') throw new CliError(`--rating must be like or dislike, got "${opts.rating}"`);
      if (!opts.account.trim()) throw new CliError('--account must not be empty');
      const rating = opts.rating;
      await withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
        const { feedbackItem } = await import('../feedback/feedback-service.js');
        const f = await rt.feedback.addAdmin({ messageId: opts.message, rating, content: opts.content ?? null, account: opts.account });
        print(opts.json, feedbackItem(f), `feedback ${f.id}: ${f.rating} on message ${f.messageId} by ${opts.account}`);
      });
    });

  program
    .command('dataset')
    .description('manage knowledge bases')
    .command('create')
    .description('create a knowledge base and print its id')
    .requiredOption('--name <name>', 'knowledge base name (1 to 40 characters)')
    .option('--indexing-technique <technique>', 'economy | high_quality')
    .option('--json', 'print one JSON object')
    .action(async (opts: { name: string; indexingTechnique?: string; json?: boolean }, cmd: Command) =>
      withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
        const ds = await rt.datasets.create(await rt.apps.workspaceId(), { name: opts.name, indexingTechnique: opts.indexingTechnique, createdBy: 'cli' });
        print(opts.json, { dataset_id: ds.id }, ds.id);
      }),
    );
}
