/** The actions of run-commands.ts, loaded only when their command runs. */
import type { Command } from 'commander';
import { listRuns, runEvents, showRun, type LoggedRunEvent } from '../runs/run-queries.js';
import { isTerminal } from '../runs/run-events.js';
import { withCli, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { recipientsOfRun } from '../forms/form-recipients.js';
import { print } from './output.js';
import { FormStore } from '../forms/form-store.js';
import { formLink } from '../mail/form-mail.js';
import { LIMIT_MAX, STATUSES } from './run-options.js';

const PAGE = 500;
const POLL_MS = 300;

function limitOf(raw: string | undefined): number {
  if (raw === undefined) return 20;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > LIMIT_MAX) throw new CliError(`--limit must be an integer from 1 to ${LIMIT_MAX}, got "${raw}"`);
  return n;
}

/** One event as a line for people. */
function eventLine(e: LoggedRunEvent): string {
  const d = (e.payload.data ?? {}) as Record<string, unknown>;
  const seq = String(e.seq).padStart(5);
  switch (e.event) {
    case 'node_started':
      return `${seq} ${e.event.padEnd(22)} ${d.title} (${d.node_type})`;
    case 'node_finished':
      return `${seq} ${e.event.padEnd(22)} ${d.title} (${d.node_type}) ${d.status}${d.error ? `: ${d.error}` : ''} ${d.elapsed_time}s`;
    case 'text_chunk':
      return `${seq} ${e.event.padEnd(22)} ${JSON.stringify(d.text)}`;
    case 'message':
      return `${seq} ${e.event.padEnd(22)} ${JSON.stringify(e.payload.answer)}`;
    case 'workflow_finished':
      return `${seq} ${e.event.padEnd(22)} ${d.status}${d.error ? `: ${d.error}` : ''} (${d.total_steps} steps, ${d.total_tokens} tokens, ${d.elapsed_time}s)`;
    default:
      return `${seq} ${e.event}`;
  }
}

export const runList = async (opts: { app?: string; status?: string; limit?: string; json?: boolean }, cmd: Command) => {
  if (opts.status !== undefined && !(STATUSES as readonly string[]).includes(opts.status)) throw new CliError(`--status must be one of ${STATUSES.join(', ')}, got "${opts.status}"`);
  const limit = limitOf(opts.limit);
  await withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store }) => {
    const runs = await listRuns(store.db, { appId: opts.app, status: opts.status, limit });
    const text = runs
      .map((r) => `${r.id}  ${r.mode.padEnd(14)} ${r.status.padEnd(17)} ${new Date(r.created_at * 1000).toISOString()}  ${r.total_steps ?? '-'} steps  ${r.app_id}  ${r.app_name ?? '(deleted app)'}\n`)
      .join('');
    print(opts.json, runs, text);
  });
};

export const runShow = async (id: string, opts: { json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store, box, config }) => {
    const run = await showRun(store.db, id);
    if (!run) throw new CliError(`no run or message with id ${id}`);
    // the Human Input emails of the run: each recipient's delivery status, attempts and last error
    const deliveries = run.kind === 'message' ? [] : await recipientsOfRun(store.db, id);
    const waiting = run.status === 'paused' ? await new FormStore(store.db).waitingOfRun(id) : [];
    const lines = Object.entries(run).map(([k, v]) => `${`${k}:`.padEnd(17)} ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`);
    for (const d of deliveries) lines.push(`email ${d.email} (${d.type}, node ${d.node_id}): ${d.status}, ${d.attempts} attempt(s)${d.last_error ? `, last error: ${d.last_error}` : ''}`);
    // Each waiting form's page. The link is a credential (whoever has it submits the form): it goes
    // to the operator's terminal only — the text output, or stderr beside --json — never into the
    // JSON document, which may be kept or logged.
    const links: string[] = [];
    for (const f of waiting) {
      const where = `form of node ${f.nodeId} (waiting until ${new Date(f.expirationTime).toISOString()})`;
      links.push(f.token === null ? `${where}: email only, no web page` : `${where}: ${formLink(config.webForms.appWebUrl, await box.open(f.token))}`);
    }
    if (opts.json) {
      print(true, { ...run, email_deliveries: deliveries, waiting_forms: waiting.map((f) => ({ node_id: f.nodeId, expiration_time: Math.floor(f.expirationTime / 1000), web_page: f.token !== null })) }, '');
      for (const l of links) process.stderr.write(`${l}\n`);
    } else print(false, null, [...lines, ...links].join('\n'));
  });

export const runEventsCommand = async (id: string, opts: { follow?: boolean; json?: boolean }, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async ({ store }) => {
    const run = await showRun(store.db, id);
    if (!run) throw new CliError(`no run with id ${id}`);
    if (run.kind === 'message') throw new CliError(`${id} is a message of a ${run.mode} app; those keep no event log (run show prints its answer)`);
    const follow = !opts.json && (opts.follow || process.stdout.isTTY) && (run.status === 'running' || run.status === 'paused');
    const all: LoggedRunEvent[] = [];
    let after = 0;
    let ended = false;
    let steps = 0;
    const started = Date.now();
    const tty = process.stderr.isTTY;
    for (;;) {
      const page = await runEvents(store.db, id, after, PAGE);
      for (const e of page) {
        after = e.seq;
        if (opts.json) all.push(e);
        else process.stdout.write(`${eventLine(e)}\n`);
        if (e.event === 'node_started') steps++;
        if (isTerminal(e.event)) ended = true;
      }
      if (page.length === PAGE) continue;
      if (!follow || ended) break;
      if (tty) process.stderr.write(`\r\x1b[2K… running: ${steps} nodes started, ${((Date.now() - started) / 1000).toFixed(1)}s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    if (follow && tty) process.stderr.write('\r\x1b[2K');
    if (opts.json) print(true, all.map((e) => ({ seq: e.seq, ...e.payload })), '');
  });
