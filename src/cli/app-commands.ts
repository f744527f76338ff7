import type { Command } from 'commander';

/** Repeatable options: `--dataset A=B --dataset C=D`. */
const collect = (v: string, prev: string[]) => [...prev, v];

const DATASET_FLAG = ['--dataset <OLD_ID=NEW_ID>', 'use dataset NEW_ID of this server where the export names OLD_ID (repeatable)'] as const;
const TOOL_FLAG = ['--tool <OLD_PROVIDER_ID=APP_ID>', 'run workflow app APP_ID of this server where the export names workflow tool provider OLD_PROVIDER_ID (repeatable; app tools lists them)'] as const;

/**
 * `app import | check | list | tools | show | site | update | export | delete`: the options here, each
 * action in app-actions.ts, loaded only when its command runs (a command loads nothing it does not use).
 */
export function appCommands(program: Command): void {
  const appCmd = program.command('app').description('manage apps');
  appCmd
    .command('import')
    .argument('<file>', 'Dify DSL YAML file')
    .option('--json', 'print one JSON object')
    .option(...DATASET_FLAG, collect, [] as string[])
    .option(...TOOL_FLAG, collect, [] as string[])
    .description('create an app from a Dify DSL file and print a new API key; what it cannot serve yet is listed as warnings')
    .action(async (file: string, opts: { json?: boolean; dataset: string[]; tool: string[] }, cmd: Command) => (await import('./app-actions.js')).appImport(file, opts, cmd));
  appCmd
    .command('check')
    .argument('<app>', 'app id or name')
    .option('--json', 'print one JSON object')
    .description('list what the app names that this server cannot serve yet (the import warnings, as of now)')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => (await import('./app-actions.js')).appCheck(ref, opts, cmd));
  appCmd
    .command('list')
    .description('list apps')
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }, cmd: Command) => (await import('./app-actions.js')).appList(opts, cmd));
  appCmd
    .command('tools')
    .description('list the workflow apps of this server that tool nodes can run (app import --tool OLD_PROVIDER_ID=APP_ID), with their input parameters')
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }, cmd: Command) => (await import('./app-actions.js')).appTools(opts, cmd));
  appCmd
    .command('show')
    .description('show an app: mode, version, keys, web app (site), MCP server, triggers (webhook URLs, next fire times)')
    .argument('<app>', 'app id (or its unique name)')
    .option('--json', 'print one JSON object')
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => (await import('./app-actions.js')).appShow(ref, opts, cmd));
  appCmd
    .command('trigger')
    .description("show a workflow's triggers (webhook URLs, schedules with their next fire times); give webhooks a new URL or pause and resume triggers")
    .argument('<app>', 'app id (or its unique name)')
    .option('--node <node_id>', 'only this trigger node (default: all of the app)')
    .option('--rotate', 'a new webhook URL (the old one answers 404 at once)')
    .option('--pause', 'stop the triggers: webhooks answer 404, schedules do not fire')
    .option('--resume', 'start them again (a schedule fires next at its first tick after now)')
    .option('--json', 'print one JSON object')
    .action(async (ref: string, opts: { node?: string; rotate?: boolean; pause?: boolean; resume?: boolean; json?: boolean }, cmd: Command) => (await import('./trigger-actions.js')).appTrigger(ref, opts, cmd));
  appCmd
    .command('update')
    .description('store a new version of an app from a Dify DSL file: same id, same keys; running and paused runs keep their version; what it cannot serve yet is listed as warnings')
    .argument('<app>', 'app id (or its unique name)')
    .argument('<file>', 'Dify DSL YAML file')
    .option('--json', 'print one JSON object')
    .option(...DATASET_FLAG, collect, [] as string[])
    .option(...TOOL_FLAG, collect, [] as string[])
    .action(async (ref: string, file: string, opts: { json?: boolean; dataset: string[]; tool: string[] }, cmd: Command) => (await import('./app-actions.js')).appUpdate(ref, file, opts, cmd));
  appCmd
    .command('export')
    .description("print an app's DSL (YAML, as Dify exports it, with its web app's settings in the app block) on stdout")
    .argument('<app>', 'app id (or its unique name)')
    .option('--include-secret', 'keep the values of secret environment variables')
    .action(async (ref: string, opts: { includeSecret?: boolean }, cmd: Command) => (await import('./app-actions.js')).appExport(ref, opts, cmd));
  appCmd
    .command('site')
    .description("show or change an app's web app (its share link): on/off, a new code, and the settings /v1/site and the web app show")
    .argument('<app>', 'app id (or its unique name)')
    .option('--enable', 'open the web app (the default for a new app)')
    .option('--disable', 'close the web app: no passport, and its tokens answer "Site is disabled."')
    .option('--reset-code', 'draw a new code: the old share link and its tokens stop working')
    .option('--title <text>', 'the title')
    .option('--description <text>', 'the description')
    .option('--icon <emoji>', 'the icon (an emoji)')
    .option('--icon-background <color>', "the icon's background, e.g. #FFEAD5")
    .option('--default-language <lang>', 'the default language, e.g. en-US, zh-Hans, ja-JP')
    .option('--copyright <text>', 'the copyright line')
    .option('--privacy-policy <url>', 'the privacy policy link')
    .option('--custom-disclaimer <text>', 'the disclaimer under the chat input')
    .option('--input-placeholder <text>', "the chat input's placeholder")
    .option('--chat-color-theme <color>', "the chat's color, e.g. #1C64F2")
    .option('--chat-color-theme-inverted <bool>', 'light text on the chat color (true or false)')
    .option('--show-workflow-steps <bool>', "show a workflow's steps in the web app (true or false)")
    .option('--use-icon-as-answer-icon <bool>', "show the app's icon beside answers (true or false)")
    .option('--json', 'print one JSON object')
    .action(async (ref: string, opts: Record<string, string | boolean | undefined>, cmd: Command) => (await import('./site-actions.js')).appSite(ref, opts, cmd));
  appCmd
    .command('mcp')
    .description('publish the app as an MCP server (Dify\'s "publish as MCP"): POST /mcp/server/{server_code}/mcp, the app as one tool; disabled until --enable; without options, show its settings')
    .argument('<app>', 'app id (or its unique name)')
    .option('--enable', 'serve the MCP server (a server code is made the first time)')
    .option('--disable', 'stop serving it (its URL answers 404)')
    .option('--description <text>', "the tool's description (and the server's instructions)")
    .option('--param <NAME=DESCRIPTION>', "describe the app's input NAME in the tool's input schema (repeatable)", collect, [] as string[])
    .option('--rotate', 'make a new server code (the old URL answers 404)')
    .option('--json', 'print one JSON object')
    .action(async (ref: string, opts: { enable?: boolean; disable?: boolean; description?: string; param: string[]; rotate?: boolean; json?: boolean }, cmd: Command) => (await import('./mcp-actions.js')).appMcp(ref, opts, cmd));
  appCmd
    .command('delete')
    .description('delete an app and its API keys; its runs, messages and other data stay unless --purge')
    .argument('<app>', 'app id (or its unique name)')
    .option('--yes', 'do not ask (needed when not on a terminal)')
    .option('--purge', "also delete the app's runs, messages, conversations, feedback, annotations and end users")
    .option('--json', 'print one JSON object')
    .action(async (ref: string, opts: { yes?: boolean; purge?: boolean; json?: boolean }, cmd: Command) => (await import('./app-actions.js')).appDelete(ref, opts, cmd));
}
