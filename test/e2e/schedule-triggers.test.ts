import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, type TestServer } from '../helpers/server.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

/**
 * Schedule triggers (issue 45) on two workers sharing one database: on PostgreSQL with Redis the
 * job queue is BullMQ, otherwise the embedded queue. A cron schedule fires in its minute exactly
 * once, a paused one does not fire, ticks missed while no worker ran fire once; and a plugin
 * trigger imports with a warning while the app runs from its webhook.
 */

const FIXTURES = path.join(PROJECT_ROOT, 'test/fixtures/dsl');
const SCHEDULE = readFileSync(path.join(FIXTURES, 'trigger-schedule-workflow.yml'), 'utf8');
const PLUGIN = readFileSync(path.join(FIXTURES, 'trigger-plugin-workflow.yml'), 'utf8');
const redisUrl = process.env.TEST_REDIS_URL;
const onBullmq = Boolean(process.env.TEST_DATABASE_URL && redisUrl);

let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  const env: Record<string, string> = { SCHEDULE_POLL_SECONDS: '1', QUEUE_POLL_MS: '100', ...(onBullmq ? { QUEUE: 'bullmq', REDIS_URL: redisUrl! } : { QUEUE: 'embedded' }) };
  a = await startServer({ env });
  b = await startServer({ env, reuse: { dataDir: a.dataDir, schema: a.config.databaseSchema } });
  console.info(`[schedule-triggers] two workers on one database, queue: ${onBullmq ? 'BullMQ (Redis)' : 'embedded'}`);
});
afterAll(async () => {
  await b?.stop();
  await a?.close();
});

async function scheduleRuns(s: TestServer, appId: string): Promise<{ id: string; created_at: number; status: string }[]> {
  return s.runtime.store.db.selectFrom('workflow_runs').select(['id', 'created_at', 'status']).where('app_id', '=', appId).where('triggered_from', '=', 'schedule').execute();
}

async function triggerRow(s: TestServer, appId: string): Promise<{ next_fire_at: number | null; last_fired_at: number | null }> {
  return s.runtime.store.db.selectFrom('app_triggers').select(['next_fire_at', 'last_fired_at']).where('app_id', '=', appId).executeTakeFirstOrThrow();
}

/** Waits (polling) until `check` holds. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 200));
}

describe('schedule trigger on two workers', () => {
  it('a cron schedule fires within its minute exactly once; a paused one does not fire', { timeout: 120_000 }, async () => {
    const live = await a.importApp(SCHEDULE);
    const paused = await a.importApp(SCHEDULE.replace('name: Minute report', 'name: Paused report'));
    await a.runtime.triggers.setStatus(paused.appId, undefined, 'paused');
    const view = await a.runtime.triggers.view((await a.runtime.apps.find(live.appId))!);
    expect(view[0]).toMatchObject({ kind: 'schedule', status: 'enabled', cron_expression: '* * * * *', timezone: 'Europe/Berlin' });
    const tick = Date.parse(view[0]!.next_fire_times![0]!);
    expect(tick % 60_000).toBe(0);
    expect(Date.parse(view[0]!.next_fire_times![1]!) - tick).toBe(60_000);
    // the tick is claimed (its next tick moved on) and its run finished
    await until(async () => ((await triggerRow(a, live.appId)).next_fire_at ?? 0) > tick && (await scheduleRuns(a, live.appId)).some((r) => r.status === 'succeeded'));
    // both workers polled after the claim (several poll periods) and neither fired the tick again
    const claimedAt = Date.now();
    await until(async () => Date.now() - claimedAt > 3_000);
    const runs = (await scheduleRuns(b, live.appId)).filter((r) => Number(r.created_at) >= tick && Number(r.created_at) < tick + 60_000);
    expect(runs).toHaveLength(1);
    const out = await fetch(`${a.api}/workflows/run/${runs[0]!.id}`, { headers: { authorization: `Bearer ${live.apiKey}` } });
    expect(((await out.json()) as { outputs: Record<string, unknown> }).outputs).toEqual({ run_id: runs[0]!.id });
    expect(await scheduleRuns(a, paused.appId)).toEqual([]);
    expect(await a.runtime.triggers.view((await a.runtime.apps.find(paused.appId))!)).toMatchObject([{ status: 'paused', next_fire_times: [] }]);
  });

  it('ticks missed while no worker ran fire once, not once per tick', async () => {
    const app = await a.importApp(SCHEDULE.replace('name: Minute report', 'name: Missed report').replace("cron_expression: '* * * * *'", "cron_expression: '0 3 * * *'"));
    // as after five days without a worker: the stored next tick lies five ticks in the past
    const due = Date.now() - 5 * 86_400_000;
    await a.runtime.store.db.updateTable('app_triggers').set({ next_fire_at: due }).where('app_id', '=', app.appId).execute();
    await until(async () => ((await triggerRow(a, app.appId)).next_fire_at ?? 0) > Date.now());
    const claimedAt = Date.now();
    await until(async () => Date.now() - claimedAt > 3_000);
    expect(await scheduleRuns(a, app.appId)).toHaveLength(1);
    const row = await triggerRow(a, app.appId);
    // the next tick is the next 03:00 in Berlin after now
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' }).format(row.next_fire_at!)).toBe('03:00');
    expect(row.next_fire_at! - Date.now()).toBeLessThanOrEqual(86_400_000 + 3_600_000);
  });
});

describe('plugin trigger', () => {
  it('imports with a warning naming the plugin; the app runs from its webhook; a run from the plugin trigger fails naming node and plugin', async () => {
    const { appId, apiKey } = await a.importApp(PLUGIN);
    const app = (await a.runtime.apps.find(appId))!;
    const warnings = await a.runtime.appWarnings(app);
    expect(warnings).toEqual([
      expect.objectContaining({ node_id: '1763000000001', node_type: 'trigger-plugin', setting: null, message: expect.stringContaining('trigger plugin langgenius/github_trigger') }),
    ]);
    const views = await a.runtime.triggers.view(app);
    expect(views.map((v) => v.kind)).toEqual(['plugin', 'webhook']);
    const hook = `${a.url}${new URL(views.find((v) => v.kind === 'webhook')!.url!).pathname}`;
    const res = await fetch(hook);
    expect(res.status).toBe(200);
    const runId = res.headers.get('x-workflow-run-id')!;
    await until(async () => (await a.runtime.runs.find(runId))?.status !== 'running');
    expect((await a.runtime.runs.find(runId))?.status).toBe('succeeded');
    // the API starts a graph of triggers only at its first trigger: here the plugin's
    const api = await fetch(`${a.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, user: 'u', response_mode: 'blocking' }) });
    const body = (await api.json()) as { data: { status: string; error: string } };
    expect(body.data.status).toBe('failed');
    expect(body.data.error).toContain('node 1763000000001 (trigger-plugin)');
    expect(body.data.error).toContain('langgenius/github_trigger');
  });
});
