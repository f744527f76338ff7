import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { AppTriggerTable, Database } from '../store/schema.js';
import { newId } from '../infra/ids.js';

export type TriggerKind = 'webhook' | 'schedule' | 'plugin';
export type TriggerStatus = 'enabled' | 'paused';

/** One trigger node of an app's current graph. */
export interface AppTrigger {
  readonly id: string;
  readonly appId: string;
  readonly nodeId: string;
  readonly kind: TriggerKind;
  readonly webhookId: string | null;
  readonly status: TriggerStatus;
  readonly cronExpression: string | null;
  readonly timezone: string | null;
  readonly nextFireAt: number | null;
  readonly lastFiredAt: number | null;
}

/** What a sync wants of one trigger node (its kind and, for a schedule, its expression and zone). */
export interface WantedTrigger {
  readonly nodeId: string;
  readonly kind: TriggerKind;
  readonly cronExpression?: string;
  readonly timezone?: string;
}

/** Dify's `generate_webhook_id`: `token_urlsafe(18)[:24]`, 24 URL-safe characters from the CSPRNG (144 bits). */
export function newWebhookId(): string {
  return randomBytes(18).toString('base64url').slice(0, 24);
}

function toTrigger(r: AppTriggerTable): AppTrigger {
  return {
    id: r.id,
    appId: r.app_id,
    nodeId: r.node_id,
    kind: r.kind as TriggerKind,
    webhookId: r.webhook_id,
    status: r.status === 'paused' ? 'paused' : 'enabled',
    cronExpression: r.cron_expression,
    timezone: r.timezone,
    nextFireAt: r.next_fire_at === null ? null : Number(r.next_fire_at),
    lastFiredAt: r.last_fired_at === null ? null : Number(r.last_fired_at),
  };
}

type Executor = Kysely<Database> | Transaction<Database>;

/** The `app_triggers` table. */
export class TriggerStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async byApp(appId: string): Promise<AppTrigger[]> {
    const rows = await this.#db.selectFrom('app_triggers').selectAll().where('app_id', '=', appId).orderBy('created_at').orderBy('node_id').execute();
    return rows.map(toTrigger);
  }

  async byWebhookId(webhookId: string): Promise<AppTrigger | undefined> {
    const row = await this.#db.selectFrom('app_triggers').selectAll().where('webhook_id', '=', webhookId).executeTakeFirst();
    return row ? toTrigger(row) : undefined;
  }

  /** Enabled schedules whose next tick is due at `now`, soonest first. */
  async dueSchedules(now: number, limit: number): Promise<AppTrigger[]> {
    const rows = await this.#db
      .selectFrom('app_triggers')
      .selectAll()
      .where('kind', '=', 'schedule')
      .where('status', '=', 'enabled')
      .where('next_fire_at', '<=', now)
      .orderBy('next_fire_at')
      .limit(limit)
      .execute();
    return rows.map(toTrigger);
  }

  /**
   * Makes the app's rows match its graph's trigger nodes in one transaction: rows of nodes no
   * longer there go; a new node gets a row (a webhook a new id); a schedule whose expression or
   * zone changed gets `nextFireAt(…)` as its next tick. A webhook keeps its id and every trigger its
   * status across updates.
   */
  async sync(appId: string, wanted: readonly WantedTrigger[], nextFireAt: (cron: string, timezone: string) => number | null, at: number): Promise<void> {
    await this.#db.transaction().execute(async (tx) => {
      const rows = (await tx.selectFrom('app_triggers').selectAll().where('app_id', '=', appId).execute()).map(toTrigger);
      const byNode = new Map(rows.map((r) => [r.nodeId, r] as const));
      const keep = new Set(wanted.map((w) => w.nodeId));
      const gone = rows.filter((r) => !keep.has(r.nodeId)).map((r) => r.id);
      if (gone.length) await tx.deleteFrom('app_triggers').where('id', 'in', gone).execute();
      for (const w of wanted) {
        const cur = byNode.get(w.nodeId);
        const cron = w.kind === 'schedule' ? (w.cronExpression ?? null) : null;
        const tz = w.kind === 'schedule' ? (w.timezone ?? 'UTC') : null;
        if (cur && cur.kind !== w.kind) await tx.deleteFrom('app_triggers').where('id', '=', cur.id).execute();
        if (!cur || cur.kind !== w.kind) {
          await tx
            .insertInto('app_triggers')
            .values({
              id: newId(),
              app_id: appId,
              node_id: w.nodeId,
              kind: w.kind,
              webhook_id: w.kind === 'webhook' ? newWebhookId() : null,
              status: 'enabled',
              cron_expression: cron,
              timezone: tz,
              next_fire_at: cron !== null && tz !== null ? nextFireAt(cron, tz) : null,
              last_fired_at: null,
              created_at: at,
              updated_at: at,
            })
            .execute();
        } else if (cur.kind === 'schedule' && (cur.cronExpression !== cron || cur.timezone !== tz)) {
          await tx
            .updateTable('app_triggers')
            .set({ cron_expression: cron, timezone: tz, next_fire_at: cron !== null && tz !== null ? nextFireAt(cron, tz) : null, updated_at: at })
            .where('id', '=', cur.id)
            .execute();
        }
      }
    });
  }

  /** A new webhook id for the app's webhook triggers (all, or the one of `nodeId`); the old ids stop working at once. */
  async rotate(appId: string, nodeId: string | undefined, at: number): Promise<number> {
    const rows = (await this.byApp(appId)).filter((r) => r.kind === 'webhook' && (nodeId === undefined || r.nodeId === nodeId));
    for (const r of rows) await this.#db.updateTable('app_triggers').set({ webhook_id: newWebhookId(), updated_at: at }).where('id', '=', r.id).execute();
    return rows.length;
  }

  /**
   * Pauses or resumes the app's triggers (all, or the one of `nodeId`). A resumed schedule's next
   * tick is computed from now (`nextFireAt`), so the ticks it missed while paused do not fire.
   */
  async setStatus(appId: string, nodeId: string | undefined, status: TriggerStatus, nextFireAt: (cron: string, timezone: string) => number | null, at: number): Promise<number> {
    const rows = (await this.byApp(appId)).filter((r) => nodeId === undefined || r.nodeId === nodeId);
    for (const r of rows) {
      const next = status === 'enabled' && r.kind === 'schedule' && r.cronExpression && r.timezone && r.status !== 'enabled' ? { next_fire_at: nextFireAt(r.cronExpression, r.timezone) } : {};
      await this.#db.updateTable('app_triggers').set({ status, ...next, updated_at: at }).where('id', '=', r.id).execute();
    }
    return rows.length;
  }

  /**
   * Claims a schedule's tick: moves `next_fire_at` from `due` (the value read) to `next`, in the
   * caller's transaction. Only one process wins a given tick; false for the others.
   */
  async claimTick(tx: Executor, id: string, due: number, next: number | null, at: number): Promise<boolean> {
    const res = await tx
      .updateTable('app_triggers')
      .set({ next_fire_at: next, last_fired_at: at, updated_at: at })
      .where('id', '=', id)
      .where('status', '=', 'enabled')
      .where('next_fire_at', '=', due)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Moves a schedule's next tick without firing it (a tick that cannot run: the app is gone or broken). */
  async skipTick(id: string, due: number, next: number | null, at: number): Promise<void> {
    await this.#db.updateTable('app_triggers').set({ next_fire_at: next, updated_at: at }).where('id', '=', id).where('next_fire_at', '=', due).execute();
  }

  async deleteApp(appId: string): Promise<void> {
    await this.#db.deleteFrom('app_triggers').where('app_id', '=', appId).execute();
  }
}
