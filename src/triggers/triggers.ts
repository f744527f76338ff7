import type { App, AppService } from '../apps/app-service.js';
import type { DslDocument } from '../apps/dsl.js';
import { DslError } from '../apps/errors.js';
import type { EndUserService } from '../apps/end-users.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import type { Queue } from '../infra/queue/queue.js';
import type { RunService } from '../runs/run-service.js';
import { triggerPluginName } from '../engine/nodes/trigger-plugin.js';
import type { GraphNode } from '../engine/types.js';
import { checkedSchedule, nextTick, nextTicks, ScheduleError } from './schedule.js';
import type { TriggerConfig } from './trigger-config.js';
import { TriggerStore, type AppTrigger, type TriggerKind, type TriggerStatus, type WantedTrigger } from './trigger-store.js';

/** The job kind of the schedule poller: a repeatable job (one worker per tick) that fires due schedules. */
export const SCHEDULE_JOB = 'trigger.schedule';
/** Most schedules one poll fires; the rest wait for the next poll (a poll never runs for long). */
const DUE_BATCH = 100;
/** The end user (`user`) trigger runs belong to (Dify's runs of `InvokeFrom.TRIGGER`). */
export const TRIGGER_USER = 'trigger';

const KIND_OF: Readonly<Record<string, TriggerKind>> = { 'trigger-webhook': 'webhook', 'trigger-schedule': 'schedule', 'trigger-plugin': 'plugin' };

/** The trigger nodes of a workflow graph (top level), in graph order. */
export function triggerNodes(doc: DslDocument): { id: string; kind: TriggerKind; data: Readonly<Record<string, unknown>> }[] {
  if (doc.app.mode !== 'workflow' || !doc.workflow) return [];
  const out: { id: string; kind: TriggerKind; data: Readonly<Record<string, unknown>> }[] = [];
  for (const n of doc.workflow.graph.nodes) {
    const kind = typeof n.data.type === 'string' ? KIND_OF[n.data.type] : undefined;
    if (kind && !n.parentId) out.push({ id: n.id, kind, data: n.data });
  }
  return out;
}

/** The import-time check of schedule nodes (the cron expression's values and the zone, which the engine cannot check without the library). */
export function scheduleGraphValidator(doc: DslDocument): void {
  for (const n of triggerNodes(doc)) {
    if (n.kind !== 'schedule') continue;
    try {
      checkedSchedule(n.data);
    } catch (err) {
      if (err instanceof ScheduleError) throw new DslError(`node ${n.id} (trigger-schedule): ${err.message}`);
      throw err;
    }
  }
}

/** Makes the app's trigger rows match its current graph; `warn` hears of a schedule that cannot be computed. */
export async function syncTriggers(store: TriggerStore, app: App, now: number, warn: (nodeId: string, message: string) => void): Promise<void> {
  const wanted: WantedTrigger[] = [];
  for (const n of triggerNodes(app.dsl)) {
    if (n.kind !== 'schedule') {
      wanted.push({ nodeId: n.id, kind: n.kind });
      continue;
    }
    try {
      const spec = checkedSchedule(n.data);
      wanted.push({ nodeId: n.id, kind: 'schedule', cronExpression: spec.cron, timezone: spec.timezone });
    } catch (err) {
      // imported before this check existed: the schedule does not fire, and says why
      warn(n.id, (err as Error).message);
    }
  }
  await store.sync(app.id, wanted, (cron, tz) => nextTick(cron, tz, now), now);
}

/** The URL of a webhook id under `TRIGGER_URL`. */
export function webhookUrl(triggerUrl: string, webhookId: string): string {
  return `${triggerUrl}/triggers/webhook/${webhookId}`;
}

/** The app's triggers as `dovetail app show` prints them, each schedule with its next `count` ticks. */
export function triggerViews(rows: readonly AppTrigger[], app: App, triggerUrl: string, now: number, count = 3): TriggerView[] {
  const nodes = new Map(triggerNodes(app.dsl).map((n) => [n.id, n] as const));
  return rows.map((r): TriggerView => {
    const base = { node_id: r.nodeId, kind: r.kind, status: r.status };
    const data = nodes.get(r.nodeId)?.data ?? {};
    if (r.kind === 'webhook') {
      return {
        ...base,
        url: webhookUrl(triggerUrl, r.webhookId!),
        method: String(data.method ?? 'get').toUpperCase(),
        content_type: String(data.content_type ?? 'application/json'),
        async_mode: data.async_mode !== false,
      };
    }
    if (r.kind === 'schedule') {
      const first = r.nextFireAt ?? now;
      const next = r.status === 'enabled' && r.cronExpression && r.timezone ? [first, ...nextTicks(r.cronExpression, r.timezone, Math.max(first, now), count - 1)] : [];
      return {
        ...base,
        cron_expression: r.cronExpression ?? '',
        timezone: r.timezone ?? 'UTC',
        next_fire_times: next.slice(0, count).map((t) => new Date(t).toISOString()),
        last_fired_at: r.lastFiredAt === null ? null : new Date(r.lastFiredAt).toISOString(),
      };
    }
    const node: GraphNode = { id: r.nodeId, type: 'trigger-plugin', title: r.nodeId, data };
    return { ...base, plugin: triggerPluginName(node) };
  });
}

/** One trigger as `dovetail app show` prints it. */
export interface TriggerView {
  readonly node_id: string;
  readonly kind: TriggerKind;
  readonly status: TriggerStatus;
  /** Webhooks: the URL other systems call. */
  readonly url?: string;
  readonly method?: string;
  readonly content_type?: string;
  readonly async_mode?: boolean;
  /** Schedules: the expression, its zone and the next ticks (ISO 8601, UTC); none while paused. */
  readonly cron_expression?: string;
  readonly timezone?: string;
  readonly next_fire_times?: readonly string[];
  readonly last_fired_at?: string | null;
  /** Plugins: the plugin that would start it (Dovetail runs none). */
  readonly plugin?: string;
}

export interface TriggerDeps {
  readonly store: TriggerStore;
  readonly apps: AppService;
  readonly runs: RunService;
  readonly endUsers: EndUserService;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: TriggerConfig;
}

/**
 * An app's triggers: their rows follow its graph (a webhook id made at import, kept across
 * updates), webhook URLs, pause and resume, and the schedule poller that fires due ticks.
 *
 * The schedule rule (docs/triggers.md): each schedule row keeps its next tick (`next_fire_at`). A
 * poller job (repeatable, on the job queue) looks for due ticks every `SCHEDULE_POLL_SECONDS`; for
 * each, in one transaction, it moves `next_fire_at` to the first tick after now (compare-and-set
 * on the value it read) and creates the run with its `run.execute` job. Only the transaction that
 * wins the compare-and-set creates a run, so a tick fires once across all workers; the row and the
 * job are durable, so a restart loses nothing. Ticks missed while no worker ran collapse into one:
 * the first poll after they come back fires once and moves on to the next tick after now.
 */
export class TriggerService {
  readonly #d: TriggerDeps;

  constructor(deps: TriggerDeps) {
    this.#d = deps;
  }

  get store(): TriggerStore {
    return this.#d.store;
  }

  /** Makes the app's trigger rows match its current graph (at import and update: an app stored before trigger nodes were accepted has none). */
  async sync(app: App): Promise<void> {
    await syncTriggers(this.#d.store, app, this.#d.clock.now(), (nodeId, err) =>
      this.#d.logger.warn({ appId: app.id, nodeId, err }, 'a schedule trigger cannot be computed; it does not fire'),
    );
  }

  async view(app: App, count = 3): Promise<TriggerView[]> {
    return triggerViews(await this.#d.store.byApp(app.id), app, this.#d.config.triggerUrl, this.#d.clock.now(), count);
  }

  async rotate(appId: string, nodeId?: string): Promise<number> {
    return this.#d.store.rotate(appId, nodeId, this.#d.clock.now());
  }

  async setStatus(appId: string, nodeId: string | undefined, status: TriggerStatus): Promise<number> {
    const now = this.#d.clock.now();
    return this.#d.store.setStatus(appId, nodeId, status, (cron, tz) => nextTick(cron, tz, now), now);
  }

  /** Declares the poller on the queue (each process declares it; one worker runs each tick). */
  async schedulePoller(queue: Queue): Promise<void> {
    queue.register(SCHEDULE_JOB, { run: async () => void (await this.fireDue()) }, { concurrency: 1 });
    await queue.repeat(SCHEDULE_JOB, this.#d.config.schedulePollMs);
  }

  /** Fires every due schedule once (the poller's tick); returns the runs started. */
  async fireDue(): Promise<number> {
    const now = this.#d.clock.now();
    let fired = 0;
    for (const t of await this.#d.store.dueSchedules(now, DUE_BATCH)) {
      try {
        if (await this.#fire(t, now)) fired++;
      } catch (err) {
        this.#d.logger.error({ err, appId: t.appId, nodeId: t.nodeId }, 'firing a schedule trigger failed');
      }
    }
    return fired;
  }

  async #fire(t: AppTrigger, now: number): Promise<boolean> {
    const d = this.#d;
    const due = t.nextFireAt!;
    // the next tick after now: ticks missed while no worker ran collapse into this one
    const next = nextTick(t.cronExpression!, t.timezone!, now);
    const app = await d.apps.find(t.appId);
    if (!app || !triggerNodes(app.dsl).some((n) => n.id === t.nodeId && n.kind === 'schedule')) {
      // the app is gone or its graph no longer has the node: drop the tick (the next sync removes the row)
      await d.store.skipTick(t.id, due, next, now);
      return false;
    }
    const endUser = await d.endUsers.getOrCreate(app.id, TRIGGER_USER);
    let claimed = false;
    try {
      await d.runs.start({
        app,
        endUserId: endUser.id,
        user: TRIGGER_USER,
        inputs: {},
        files: [],
        rootNodeId: t.nodeId,
        triggeredFrom: 'schedule',
        beforeStart: async (_ids, tx) => {
          claimed = await d.store.claimTick(tx, t.id, due, next, now);
          // another worker fired this tick: roll the run back
          if (!claimed) throw new TickTaken();
        },
      });
    } catch (err) {
      if (err instanceof TickTaken) return false;
      throw err;
    }
    d.logger.info({ appId: app.id, nodeId: t.nodeId, due: new Date(due).toISOString(), next: next === null ? null : new Date(next).toISOString() }, 'schedule trigger fired');
    return claimed;
  }
}

class TickTaken extends Error {
  override name = 'TickTaken';
}
