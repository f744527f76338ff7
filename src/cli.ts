import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from './config.js';
import { createRuntime, type Runtime } from './runtime.js';
import { buildServer } from './http/server.js';
import { DslError } from './apps/errors.js';
import { parseDatasetMap } from './apps/import-check.js';
import type { ImportWarning } from './engine/types.js';
import { ServiceError } from './infra/errors.js';
import { seedExamples } from './seed.js';
import { feedbackItem } from './feedback/feedback-service.js';

/** A CLI failure: printed as one line, exit code 1. */
class CliError extends Error {}

const EXAMPLES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'examples');

async function withRuntime<T>(fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, { logLevel: process.env.LOG_LEVEL ?? 'warn' });
  // One-shot commands never run background jobs; `serve` does.
  const rt = await createRuntime({ ...config, queue: { ...config.queue, worker: false } });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

/** One warning as a line: `warning: node X (llm): … [set DEEPSEEK_API_KEY]`. */
function warningLine(w: ImportWarning): string {
  return w.setting ? `warning: ${w.message} [setting: ${w.setting}]` : `warning: ${w.message}`;
}

function printWarnings(warnings: readonly ImportWarning[]): void {
  for (const w of warnings) process.stderr.write(`${warningLine(w)}\n`);
}

function print(json: boolean, obj: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(obj)}\n` : `${text}\n`);
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const runtime = await createRuntime(config);
  if (config.seedExamples) {
    const seeded = await seedExamples(runtime, EXAMPLES_DIR);
    if (seeded.length > 0) {
      process.stdout.write('\nImported the example apps. Their API keys are shown only this once:\n\n');
      for (const s of seeded) process.stdout.write(`  ${s.name.padEnd(32)} ${s.mode.padEnd(14)} ${s.apiKey}\n`);
      process.stdout.write('\n');
    }
  }
  const app = await buildServer(runtime);
  await app.listen({ port: config.port, host: config.host });
  process.stdout.write(`Dovetail is listening on http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${config.port}/v1\n`);
  const shutdown = async () => {
    await app.close();
    await runtime.close();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

export function buildCli(): Command {
  const program = new Command('dovetail').description('A self-hostable server for the Dify Service API').exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program.command('serve').description('start the HTTP server').action(serve);
  program
    .command('migrate')
    .description('create or upgrade the database schema')
    .action(() => withRuntime(async () => void process.stdout.write('database is up to date\n')));

  const appCmd = program.command('app').description('manage apps');
  appCmd
    .command('import')
    .argument('<file>', 'Dify DSL YAML file')
    .option('--json', 'print one JSON object')
    .option('--dataset <OLD_ID=NEW_ID>', 'use dataset NEW_ID of this server where the export names OLD_ID (repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .description('create an app from a Dify DSL file and print a new API key; what it cannot serve yet is listed as warnings')
    .action(async (file: string, opts: { json?: boolean; dataset: string[] }) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const datasets = parseDatasetMap(opts.dataset);
      await withRuntime(async (rt) => {
        const app = await rt.apps.importDsl(text, { datasets });
        const { apiKey } = await rt.keys.create('app', app.workspaceId, app.id);
        const warnings = await rt.appWarnings(app);
        printWarnings(warnings);
        print(!!opts.json, { app_id: app.id, mode: app.mode, name: app.name, api_key: apiKey, warnings }, `app_id: ${app.id}\nmode: ${app.mode}\nname: ${app.name}\napi_key: ${apiKey}`);
      });
    });
  appCmd
    .command('check')
    .argument('<app_id>', 'an imported app')
    .option('--json', 'print one JSON object')
    .description('list what the app names that this server cannot serve yet (the import warnings, as of now)')
    .action(async (appId: string, opts: { json?: boolean }) =>
      withRuntime(async (rt) => {
        const app = await rt.apps.find(appId);
        if (!app) throw new CliError(`no app with id ${appId}`);
        const warnings = await rt.appWarnings(app);
        if (opts.json) print(true, { app_id: app.id, warnings }, '');
        else if (warnings.length === 0) process.stdout.write(`${app.id}: nothing missing\n`);
        else for (const w of warnings) process.stdout.write(`${warningLine(w)}\n`);
      }),
    );
  appCmd
    .command('list')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withRuntime(async (rt) => {
        const apps = await rt.apps.list();
        if (opts.json) process.stdout.write(`${JSON.stringify(apps.map((a) => ({ app_id: a.id, mode: a.mode, name: a.name })))}\n`);
        else for (const a of apps) process.stdout.write(`${a.id}  ${a.mode.padEnd(14)} ${a.name}\n`);
      }),
    );

  const keyCmd = program.command('key').description('manage API keys');
  keyCmd
    .command('create')
    .option('--app <app_id>', 'create an app key for this app')
    .option('--dataset', 'create a knowledge key (reaches every dataset)')
    .option('--json', 'print one JSON object')
    .action(async (opts: { app?: string; dataset?: boolean; json?: boolean }) => {
      if (!!opts.app === !!opts.dataset) throw new CliError('key create needs exactly one of --app APP_ID or --dataset');
      await withRuntime(async (rt) => {
        if (opts.app) {
          const app = await rt.apps.find(opts.app);
          if (!app) throw new CliError(`no app with id ${opts.app}`);
          const { apiKey } = await rt.keys.create('app', app.workspaceId, app.id);
          print(!!opts.json, { api_key: apiKey }, apiKey);
        } else {
          const { apiKey } = await rt.keys.create('dataset', await rt.apps.workspaceId(), null);
          print(!!opts.json, { api_key: apiKey }, apiKey);
        }
      });
    });
  keyCmd
    .command('list')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withRuntime(async (rt) => {
        const keys = await rt.keys.list();
        if (opts.json) process.stdout.write(`${JSON.stringify(keys.map((k) => ({ id: k.id, type: k.type, app_id: k.appId, hint: k.hint })))}\n`);
        else for (const k of keys) process.stdout.write(`${k.id}  ${k.type.padEnd(8)} ${k.hint.padEnd(16)} ${k.appId ?? '(all datasets)'}\n`);
      }),
    );
  keyCmd
    .command('revoke')
    .argument('<key_id>', 'id shown by `key list`')
    .action(async (id: string) =>
      withRuntime(async (rt) => {
        if (!(await rt.keys.revoke(id))) throw new CliError(`no key with id ${id}`);
        process.stdout.write(`revoked ${id}\n`);
      }),
    );
  const feedbackCmd = program.command('feedback').description('message feedback');
  feedbackCmd
    .command('add')
    .description('leave admin feedback on a message (from_source "admin")')
    .requiredOption('--message <message_id>', 'message id')
    .requiredOption('--rating <rating>', 'like | dislike')
    .option('--content <text>', 'feedback text')
    .requiredOption('--account <name>', 'admin account name (created on first use)')
    .option('--json', 'print the feedback item as JSON')
    .action(async (opts: { message: string; rating: string; content?: string; account: string; json?: boolean }) => {
      if (opts.rating !== 'like' && opts.rating !== 'dislike') throw new CliError(`--rating must be like or dislike, got "${opts.rating}"`);
      if (!opts.account.trim()) throw new CliError('--account must not be empty');
      const rating = opts.rating;
      await withRuntime(async (rt) => {
        const f = await rt.feedback.addAdmin({ messageId: opts.message, rating, content: opts.content ?? null, account: opts.account });
        const item = feedbackItem(f);
        print(!!opts.json, item, `feedback ${f.id}: ${f.rating} on message ${f.messageId} by ${opts.account}`);
      });
    });

  const accountCmd = program.command('account').description('workspace members (admin feedback, Human Input email recipients)');
  accountCmd
    .command('create')
    .requiredOption('--name <name>', 'account name (feedback --account uses it)')
    .option('--email <address>', 'where Human Input email to this member goes')
    .option('--json', 'print one JSON object')
    .action(async (opts: { name: string; email?: string; json?: boolean }) =>
      withRuntime(async (rt) => {
        const a = await rt.accounts.create({ name: opts.name, email: opts.email });
        print(!!opts.json, { ...a }, `${a.id}  ${a.name}${a.email ? `  <${a.email}>` : ''}`);
      }),
    );

  const runCmd = program.command('run').description('workflow runs');
  runCmd
    .command('show')
    .argument('<run_id>', 'workflow run id')
    .option('--json', 'print one JSON object')
    .action(async (runId: string, opts: { json?: boolean }) =>
      withRuntime(async (rt) => {
        const run = await rt.runs.find(runId);
        if (!run) throw new CliError(`no run with id ${runId}`);
        const deliveries = await rt.formRecipients.ofRun(runId);
        if (opts.json) return print(true, { id: run.id, status: run.status, error: run.error, email_deliveries: deliveries }, '');
        process.stdout.write(`${run.id}  ${run.status}${run.error ? `  ${run.error}` : ''}\n`);
        for (const d of deliveries) {
          process.stdout.write(`  email ${d.email} (${d.type}, node ${d.node_id}): ${d.status}, ${d.attempts} attempt(s)${d.last_error ? `, last error: ${d.last_error}` : ''}\n`);
        }
      }),
    );

  const datasetCmd = program.command('dataset').description('manage knowledge bases');
  datasetCmd
    .command('create')
    .requiredOption('--name <name>', 'knowledge base name (1 to 40 characters)')
    .option('--indexing-technique <technique>', 'economy | high_quality')
    .option('--json', 'print one JSON object')
    .action(async (opts: { name: string; indexingTechnique?: string; json?: boolean }) =>
      withRuntime(async (rt) => {
        const ds = await rt.datasets.create(await rt.apps.workspaceId(), {
          name: opts.name,
          indexingTechnique: opts.indexingTechnique,
          createdBy: 'cli',
        });
        print(!!opts.json, { dataset_id: ds.id }, ds.id);
      }),
    );
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
  }
}

if (process.argv[1] && /cli\.(ts|js)$/.test(process.argv[1])) await main(process.argv);
