/** The actions of admin-commands.ts, loaded only when their command runs. */
import type { Command } from 'commander';
import { withCli, withRuntime, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { ServiceError } from '../infra/errors.js';
import { AccountService } from '../accounts/account-service.js';
import { systemClock } from '../infra/clock.js';
import { print } from './output.js';

/** `account create`'s options. */
export interface AccountCreateOptions {
  name: string;
  email?: string;
  role?: string;
  passwordStdin?: boolean;
  workspace?: string;
  json?: boolean;
}

/** The password on standard input: its first line (a trailing newline is not part of it). */
async function passwordFromStdin(maxLength: number): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password: ');
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin) {
    const b = chunk as Buffer;
    chunks.push(b);
    bytes += b.length;
    // enough for the longest allowed password in any encoding; more is refused below
    if (bytes > maxLength * 4 + 2 || b.includes(10)) break;
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const line = text.split(/\r?\n/)[0]!;
  if (line === '') throw new CliError('--password-stdin: standard input held no password');
  return line;
}

const accountJson = (a: { id: string; name: string; email: string | null; role: string; workspaceId: string; passwordHash: string | null }) => ({
  id: a.id,
  name: a.name,
  email: a.email,
  role: a.role,
  workspace_id: a.workspaceId,
  has_password: a.passwordHash !== null,
});

export const accountCreate = async (opts: AccountCreateOptions, cmd: Command) =>
  // The database alone (not the whole runtime, which takes seconds to start): accounts need nothing else.
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store, apps, config }) => {
    const rules = { minLength: config.console.passwordMinLength, maxLength: config.console.passwordMaxLength };
    const password = opts.passwordStdin ? await passwordFromStdin(rules.maxLength) : undefined;
    if (opts.workspace !== undefined && opts.workspace.trim() === '') throw new CliError('--workspace must not be empty');
    const workspaceId = opts.workspace === undefined ? await apps.workspaceId() : (await apps.workspaceNamed(opts.workspace.trim(), true))!.id;
    const a = await new AccountService(store.db, systemClock, rules)
      .createMember({ name: opts.name, email: opts.email, role: opts.role, password, workspaceId })
      .catch((err: unknown) => {
        // The service names the field (`name …`, `email …`, `role …`, `password …`); on the command line that is the option.
        if (err instanceof ServiceError && err.code === 'invalid_param') throw new CliError(`--${err.message.replace(/^password\b/, 'password-stdin: password')}`);
        throw err;
      });
    print(opts.json, accountJson(a), `${a.id}  ${a.name}${a.email ? `  <${a.email}>` : ''}  ${a.role}${a.passwordHash ? '' : '  (no console password)'}`);
  });

export const accountSetPassword = async (name: string, opts: { passwordStdin?: boolean; json?: boolean }, cmd: Command) => {
  if (!opts.passwordStdin) throw new CliError('pass --password-stdin and the password on standard input (a password is never an argument: it would show in the process list)');
  await withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store, apps, config }) => {
    const rules = { minLength: config.console.passwordMinLength, maxLength: config.console.passwordMaxLength };
    const password = await passwordFromStdin(rules.maxLength);
    const a = await new AccountService(store.db, systemClock, rules).setPassword(name, password, await apps.workspaceId()).catch((err: unknown) => {
      if (err instanceof ServiceError && err.code === 'invalid_param') throw new CliError(`--password-stdin: ${err.message}`);
      if (err instanceof ServiceError && err.code === 'not_found') throw new CliError(err.message);
      throw err;
    });
    // a new password ends the sessions made with the old one
    const { ConsoleSessionStore } = await import('../console/console-session-store.js');
    await new ConsoleSessionStore(store.db).deleteOfAccount(a.id);
    print(opts.json, accountJson(a), `password set for ${a.name} (${a.role}); its console sessions ended`);
  });
};

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

/** `dataset create`'s options. */
export interface DatasetCreateOptions {
  name: string;
  indexingTechnique?: string;
  external?: boolean;
  endpoint?: string;
  apiKey?: string;
  knowledgeId?: string;
  topK?: string;
  scoreThreshold?: string;
  /** `--no-check` sets it false: the endpoint is not called at creation. */
  check?: boolean;
  pipeline?: string;
  json?: boolean;
}

/** Import warnings on stderr, one a line. */
function warn(warnings: readonly { message: string }[]): void {
  for (const w of warnings) process.stderr.write(`warning: ${w.message}\n`);
}

async function readDsl(file: string): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/** The service's invalid_param as a CLI error (the message names the DSL field). */
function dslError(err: unknown): never {
  if (err instanceof ServiceError && (err.code === 'invalid_param' || err.code === 'not_found' || err.code === 'dataset_name_duplicate')) throw new CliError(err.message);
  throw err;
}

export const datasetPipelineExport = async (dataset: string, cmd: Command) =>
  withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const ds = await rt.datasets.get(await rt.apps.workspaceId(), dataset).catch(dslError);
    process.stdout.write(await rt.pipelines.export(ds).catch(dslError));
  });

export const datasetPipelineUpdate = async (dataset: string, file: string, opts: { json?: boolean }, cmd: Command) => {
  const yaml = await readDsl(file);
  await withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const ds = await rt.datasets.get(await rt.apps.workspaceId(), dataset).catch(dslError);
    const { pipeline, warnings } = await rt.pipelines.update(ds, yaml).catch(dslError);
    warn(warnings);
    print(opts.json, { dataset_id: ds.id, pipeline_id: pipeline.id, warnings }, `pipeline ${pipeline.id} of ${ds.id} updated`);
  });
};

export const datasetCreate = async (opts: DatasetCreateOptions, cmd: Command) => {
  const external = opts.external === true;
  if (opts.pipeline !== undefined) {
    if (external) throw new CliError('--pipeline and --external are different kinds of knowledge base');
    if (opts.indexingTechnique !== undefined) throw new CliError("--indexing-technique does not apply to --pipeline (the pipeline's knowledge-index node sets it)");
    const yaml = await readDsl(opts.pipeline);
    await withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
      const { dataset, pipeline, warnings } = await rt.pipelines.create(await rt.apps.workspaceId(), yaml, { name: opts.name, createdBy: 'cli' }).catch(dslError);
      warn(warnings);
      print(opts.json, { dataset_id: dataset.id, pipeline_id: pipeline.id, warnings }, dataset.id);
    });
    return;
  }
  if (!external) {
    for (const [flag, v] of [['--endpoint', opts.endpoint], ['--api-key', opts.apiKey], ['--knowledge-id', opts.knowledgeId], ['--top-k', opts.topK], ['--score-threshold', opts.scoreThreshold]] as const) {
      if (v !== undefined) throw new CliError(`${flag} needs --external`);
    }
    if (opts.check === false) throw new CliError('--no-check needs --external');
  } else {
    if (opts.indexingTechnique !== undefined) throw new CliError('--indexing-technique does not apply to --external (the external side indexes)');
    for (const [flag, v] of [['--endpoint', opts.endpoint], ['--api-key', opts.apiKey], ['--knowledge-id', opts.knowledgeId]] as const) {
      if (!v) throw new CliError(`--external needs ${flag}`);
    }
  }
  const num = (flag: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new CliError(`${flag} must be a number, got "${v}"`);
    return n;
  };
  const topK = num('--top-k', opts.topK);
  const scoreThreshold = num('--score-threshold', opts.scoreThreshold);
  await withRuntime(cmd.optsWithGlobals<GlobalOptions>(), async (rt) => {
    const workspaceId = await rt.apps.workspaceId();
    const ds = external
      ? await rt.datasets
          .createExternal(workspaceId, {
            name: opts.name,
            endpoint: opts.endpoint,
            apiKey: opts.apiKey,
            knowledgeId: opts.knowledgeId,
            topK,
            scoreThreshold,
            createdBy: 'cli',
            ...(opts.check === false ? {} : { check: (endpoint: string, key: string) => rt.external.check(endpoint, key) }),
          })
          .catch((err: unknown) => {
            // The service names the field; on the command line that is the option.
            if (err instanceof ServiceError && err.code === 'invalid_param') throw new CliError(err.message.replace(/^(api_key|external_knowledge_id|top_k|score_threshold|endpoint)\b/, (f) => `--${{ api_key: 'api-key', external_knowledge_id: 'knowledge-id', top_k: 'top-k', score_threshold: 'score-threshold', endpoint: 'endpoint' }[f]}`));
            throw err;
          })
      : await rt.datasets.create(workspaceId, { name: opts.name, indexingTechnique: opts.indexingTechnique, createdBy: 'cli' });
    print(opts.json, { dataset_id: ds.id }, ds.id);
  });
};

export const datasetList = async (opts: { json?: boolean }, cmd: Command) =>
  // the database alone: listing needs no embedder or index
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store, apps }) => {
    const { DatasetStore } = await import('../knowledge/dataset-store.js');
    const { rows } = await new DatasetStore(store.db).page(await apps.workspaceId(), 1, Number.MAX_SAFE_INTEGER, undefined, undefined);
    const list = rows.map((d) => ({ dataset_id: d.id, name: d.name, indexing_technique: d.indexing_technique, created_at: Math.floor(d.created_at / 1000) }));
    print(opts.json, list, list.length === 0 ? 'no knowledge bases\n' : list.map((d) => `${d.dataset_id}  ${(d.indexing_technique ?? '-').padEnd(13)} ${d.name}\n`).join(''));
  });
