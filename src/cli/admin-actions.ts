/** The actions of admin-commands.ts, loaded only when their command runs. */
import type { Command } from 'commander';
import { withCli, withRuntime, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { ServiceError } from '../infra/errors.js';
import { AccountService } from '../accounts/account-service.js';
import { systemClock } from '../infra/clock.js';
import { print } from './output.js';

export const accountCreate = async (opts: { name: string; email?: string; json?: boolean }, cmd: Command) =>
  // The database alone (not the whole runtime, which takes seconds to start): accounts need nothing else.
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store }) => {
    const a = await new AccountService(store.db, systemClock).create({ name: opts.name, email: opts.email }).catch((err: unknown) => {
      // The service names the field (`name …`, `email …`); on the command line that is the option.
      if (err instanceof ServiceError && err.code === 'invalid_param') throw new CliError(`--${err.message}`);
      throw err;
    });
    print(opts.json, { ...a }, `${a.id}  ${a.name}${a.email ? `  <${a.email}>` : ''}`);
  });

export const migrate = async (opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async () => print(opts.json, { status: 'up_to_date' }, 'database is up to date'));

export const feedbackAdd = async (opts: { message: string; rating: string; content?: string; account: string; json?: boolean }, cmd: Command) => {
  if (opts.rating !== 'like' && opts.rating !== 'dislike') throw new CliError(`--rating must be like or dislike, got "${opts.rating}"`);
  if (!opts.account.trim()) throw new CliError('--account must not be empty');
  const rating = opts.rating;
  await withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const { feedbackItem } = await import('../feedback/feedback-service.js');
    const f = await rt.feedback.addAdmin({ messageId: opts.message, rating, content: opts.content ?? null, account: opts.account });
    print(opts.json, feedbackItem(f), `feedback ${f.id}: ${f.rating} on message ${f.messageId} by ${opts.account}`);
  });
};

export const datasetCreate = async (opts: { name: string; indexingTechnique?: string; json?: boolean }, cmd: Command) =>
  withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const ds = await rt.datasets.create(await rt.apps.workspaceId(), { name: opts.name, indexingTechnique: opts.indexingTechnique, createdBy: 'cli' });
    print(opts.json, { dataset_id: ds.id }, ds.id);
  });

export const datasetList = async (opts: { json?: boolean }, cmd: Command) =>
  // the database alone: listing needs no embedder or index
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store, apps }) => {
    const { DatasetStore } = await import('../knowledge/dataset-store.js');
    const { rows } = await new DatasetStore(store.db).page(await apps.workspaceId(), 1, Number.MAX_SAFE_INTEGER, undefined, undefined);
    const list = rows.map((d) => ({ dataset_id: d.id, name: d.name, indexing_technique: d.indexing_technique, created_at: Math.floor(d.created_at / 1000) }));
    print(opts.json, list, list.length === 0 ? 'no knowledge bases\n' : list.map((d) => `${d.dataset_id}  ${(d.indexing_technique ?? '-').padEnd(13)} ${d.name}\n`).join(''));
  });
