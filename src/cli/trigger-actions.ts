import type { Command } from 'commander';
import { systemClock } from '../infra/clock.js';
import type { App } from '../apps/app-service.js';
import { TriggerStore } from '../triggers/trigger-store.js';
import { syncTriggers, triggerViews, type TriggerView } from '../triggers/triggers.js';
import { nextTick } from '../triggers/schedule.js';
import { findApp } from './find-app.js';
import { withCli, type CliContext, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { print } from './output.js';

export interface TriggerOptions {
  readonly node?: string;
  readonly rotate?: boolean;
  readonly pause?: boolean;
  readonly resume?: boolean;
  readonly json?: boolean;
}

/** One trigger as a line of `app show` / `app trigger`. */
export function triggerLine(t: TriggerView): string {
  if (t.kind === 'webhook') return `${t.node_id} webhook ${t.status}: ${t.method} ${t.url} (${t.content_type}${t.async_mode ? ', async' : ', waits for the run'})`;
  if (t.kind === 'schedule') {
    const next = t.status === 'enabled' ? `next ${t.next_fire_times!.join(', ') || '(none)'}` : 'paused: no next fire time';
    return `${t.node_id} schedule ${t.status}: ${t.cron_expression} ${t.timezone}; ${next}`;
  }
  return `${t.node_id} plugin: ${t.plugin} (Dovetail runs no plugins; this trigger never fires)`;
}

/** The app's triggers, their rows made to follow its graph first (an app imported before triggers existed gets them here). */
export async function appTriggerViews(ctx: Pick<CliContext, 'store' | 'config'>, app: App): Promise<TriggerView[]> {
  const store = new TriggerStore(ctx.store.db);
  await syncTriggers(store, app, systemClock.now(), (nodeId, message) => process.stderr.write(`warning: node ${nodeId} (trigger-schedule): ${message}; it does not fire\n`));
  return triggerViews(await store.byApp(app.id), app, ctx.config.triggers.triggerUrl, systemClock.now());
}

/**
 * `app trigger APP [--node NODE_ID] [--rotate | --pause | --resume]`: the app's triggers (webhook
 * URLs, schedules with their next fire times); `--rotate` gives webhooks a new URL (the old one
 * answers 404 at once), `--pause` / `--resume` stop and restart webhooks and schedules (a resumed
 * schedule fires next at its first tick after now).
 */
export const appTrigger = async (ref: string, opts: TriggerOptions, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
    if ([opts.rotate, opts.pause, opts.resume].filter(Boolean).length > 1) throw new CliError('--rotate, --pause and --resume exclude each other');
    const app = await findApp(ctx.apps, ref);
    let views = await appTriggerViews(ctx, app);
    if (views.length === 0) throw new CliError(`app ${app.id} has no trigger nodes (trigger-webhook, trigger-schedule, trigger-plugin)`);
    if (opts.node !== undefined && !views.some((v) => v.node_id === opts.node)) {
      throw new CliError(`app ${app.id} has no trigger node ${opts.node} (its triggers: ${views.map((v) => v.node_id).join(', ')})`);
    }
    const store = new TriggerStore(ctx.store.db);
    const now = systemClock.now();
    if (opts.rotate) {
      if (!views.some((v) => v.kind === 'webhook' && (opts.node === undefined || v.node_id === opts.node))) throw new CliError(`--rotate: app ${app.id} has no webhook trigger${opts.node ? ` ${opts.node}` : ''}`);
      await store.rotate(app.id, opts.node, now);
    } else if (opts.pause || opts.resume) {
      await store.setStatus(app.id, opts.node, opts.pause ? 'paused' : 'enabled', (cron, tz) => nextTick(cron, tz, now), now);
    }
    if (opts.rotate || opts.pause || opts.resume) views = triggerViews(await store.byApp(app.id), app, ctx.config.triggers.triggerUrl, systemClock.now());
    print(opts.json, { app_id: app.id, triggers: views }, views.map((v) => `${triggerLine(v)}\n`).join('').trimEnd());
  });
