import type { AccountCreateOptions, DatasetCreateOptions } from './admin-actions.js';
import type { Command } from 'commander';

/** `migrate`, `feedback add`, `dataset list | create`, `account create | set-password`. */
export function adminCommands(program: Command): void {
  const account = program.command('account').description('workspace members (admin feedback, Human Input email recipients, console log-ins)');
  account
    .command('create')
    .description('create a workspace member (or change an existing one of that name) and print its id')
    .requiredOption('--name <name>', 'account name (feedback --account uses it)')
    .option('--email <address>', 'where Human Input email to this member goes; the console log-in')
    .option('--role <role>', 'console role: owner, admin, editor or viewer (a new account: viewer)')
    .option('--password-stdin', 'read the console password from standard input (one line)')
    .option('--workspace <name>', 'the workspace a new account joins, created when none has that name (default: the first workspace)')
    .option('--json', 'print one JSON object')
    .action(async (opts: AccountCreateOptions, cmd: Command) => (await import('./admin-actions.js')).accountCreate(opts, cmd));
  account
    .command('set-password')
    .description("set a member's console password, read from standard input, and end its console sessions")
    .argument('<name>', 'account name')
    .option('--password-stdin', 'read the password from standard input (the only way: it never appears in the process list)')
    .option('--json', 'print one JSON object')
    .action(async (name: string, opts: { passwordStdin?: boolean; json?: boolean }, cmd: Command) => (await import('./admin-actions.js')).accountSetPassword(name, opts, cmd));

  program
    .command('migrate')
    .description('create (with --init) or upgrade the database schema')
    .option('--json', 'print one JSON object')
    .action(async (opts: { json?: boolean }, cmd: Command) => (await import('./admin-actions.js')).migrate(opts, cmd));

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
    .action(async (opts: { message: string; rating: string; content?: string; account: string; json?: boolean }, cmd: Command) => (await import('./admin-actions.js')).feedbackAdd(opts, cmd));

  const datasetCmd = program.command('dataset').description('manage knowledge bases');
  datasetCmd
    .command('list')
    .description('list knowledge bases, newest first: id, name, indexing technique')
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }, cmd: Command) => (await import('./admin-actions.js')).datasetList(opts, cmd));
  datasetCmd
    .command('create')
    .description('create a knowledge base and print its id')
    .requiredOption('--name <name>', 'knowledge base name (1 to 40 characters)')
    .option('--indexing-technique <technique>', 'economy | high_quality')
    .option('--external', "an external knowledge base: retrieval goes to Dify's External Knowledge API at --endpoint")
    .option('--endpoint <url>', 'external: the API base URL (retrieval is POST {endpoint}/retrieval)')
    .option('--api-key <key>', 'external: the bearer key the API expects')
    .option('--knowledge-id <id>', 'external: the knowledge base id on the external side')
    .option('--top-k <n>', 'external: records per retrieval (default 2)')
    .option('--score-threshold <x>', 'external: lowest score kept, 0 to 1 (default: none)')
    .option('--no-check', 'external: do not call the endpoint at creation (by default it is checked as Dify checks it)')
    .option('--pipeline <file>', "a knowledge base filled by a knowledge pipeline: Dify's kind: rag_pipeline DSL file (docs/knowledge-pipeline.md)")
    .option('--json', 'print one JSON object')
    .action(async (opts: DatasetCreateOptions, cmd: Command) => (await import('./admin-actions.js')).datasetCreate(opts, cmd));
  const pipelineCmd = datasetCmd.command('pipeline').description("a knowledge base's knowledge pipeline");
  pipelineCmd
    .command('export <dataset>')
    .description('print the pipeline DSL (YAML) of a knowledge base')
    .action(async (dataset: string, _o: unknown, cmd: Command) => (await import('./admin-actions.js')).datasetPipelineExport(dataset, cmd));
  pipelineCmd
    .command('update <dataset> <file>')
    .description("replace a knowledge base's pipeline with a kind: rag_pipeline DSL file (its documents stay)")
    .option('--json', 'print one JSON object')
    .action(async (dataset: string, file: string, opts: { json?: boolean }, cmd: Command) => (await import('./admin-actions.js')).datasetPipelineUpdate(dataset, file, opts, cmd));
}
