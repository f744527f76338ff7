import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dropSchema } from '../../src/store/db.js';

/**
 * The operator's side of triggers through the real CLI (bin/dovetail.js): `app import` prints the
 * plugin trigger's warning, `app show` prints webhook URLs and next fire times, `app trigger`
 * rotates a webhook's URL (the running server refuses the old one) and pauses and resumes.
 */

const exec = promisify(execFile);
const pgUrl = process.env.TEST_DATABASE_URL;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-trigger-cli-'));
const schema = pgUrl ? `t_trg_${Math.random().toString(36).slice(2, 10)}` : undefined;
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  DOVETAIL_DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  TRIGGER_URL: 'https://hooks.example.com/',
  ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema! } : { DATABASE_URL: '' }),
  REDIS_URL: '',
};
delete env.DOVETAIL_CONFIG;
const fixture = (name: string) => path.join(PROJECT_ROOT, 'test/fixtures/dsl', name);

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: dataDir });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let s: TestServer;
let pluginApp: string;
let scheduleApp: string;

beforeAll(async () => {
  const plugin = await cli('--init', 'app', 'import', fixture('trigger-plugin-workflow.yml'), '--json');
  expect(plugin.code).toBe(0);
  expect(plugin.stderr).toContain('warning: node 1763000000001 (trigger-plugin) is started by the trigger plugin langgenius/github_trigger (event push)');
  pluginApp = (JSON.parse(plugin.stdout) as { app_id: string }).app_id;
  const schedule = await cli('app', 'import', fixture('trigger-schedule-workflow.yml'), '--json');
  expect(schedule.code).toBe(0);
  scheduleApp = (JSON.parse(schedule.stdout) as { app_id: string }).app_id;
  s = await startServer({ reuse: { dataDir, schema } });
}, 120_000);
afterAll(async () => {
  await s?.stop();
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('dovetail app show / app trigger', () => {
  it('app show prints the webhook URL under TRIGGER_URL and the plugin; --rotate makes a new URL and the old one answers 404', async () => {
    const shown = await cli('app', 'show', pluginApp, '--json');
    expect(shown.code).toBe(0);
    const triggers = (JSON.parse(shown.stdout) as { triggers: { kind: string; url?: string; plugin?: string }[] }).triggers;
    expect(triggers.map((t) => t.kind)).toEqual(['plugin', 'webhook']);
    expect(triggers[0]!.plugin).toBe('langgenius/github_trigger');
    const url = triggers[1]!.url!;
    expect(url).toMatch(/^https:\/\/hooks\.example\.com\/triggers\/webhook\/[A-Za-z0-9_-]{24}$/);
    const local = (u: string) => `${s.url}${new URL(u).pathname}`;
    expect((await fetch(local(url))).status).toBe(200);

    const text = await cli('app', 'show', pluginApp);
    expect(text.stdout).toContain(`triggers: 1763000000001 plugin: langgenius/github_trigger`);
    expect(text.stdout).toContain(`1763000000002 webhook enabled: GET ${url}`);

    const rotated = await cli('app', 'trigger', pluginApp, '--rotate', '--json');
    expect(rotated.code).toBe(0);
    const fresh = (JSON.parse(rotated.stdout) as { triggers: { kind: string; url?: string }[] }).triggers.find((t) => t.kind === 'webhook')!.url!;
    expect(fresh).not.toBe(url);
    expect((await fetch(local(url))).status).toBe(404);
    expect((await fetch(local(fresh))).status).toBe(200);
  });

  it('app show prints a schedule with its next fire times; --pause clears them and --resume brings them back', async () => {
    const shown = JSON.parse((await cli('app', 'show', scheduleApp, '--json')).stdout) as { triggers: { kind: string; status: string; cron_expression: string; timezone: string; next_fire_times: string[] }[] };
    const t = shown.triggers[0]!;
    expect(t).toMatchObject({ kind: 'schedule', status: 'enabled', cron_expression: '* * * * *', timezone: 'Europe/Berlin' });
    expect(t.next_fire_times).toHaveLength(3);
    const times = t.next_fire_times.map((x) => Date.parse(x));
    expect(times[1]! - times[0]!).toBe(60_000);
    expect(times[2]! - times[1]!).toBe(60_000);

    const paused = await cli('app', 'trigger', scheduleApp, '--pause');
    expect(paused.code).toBe(0);
    expect(paused.stdout).toContain('1762000000001 schedule paused: * * * * * Europe/Berlin; paused: no next fire time');
    const resumed = await cli('app', 'trigger', scheduleApp, '--resume', '--json');
    expect((JSON.parse(resumed.stdout) as { triggers: { status: string; next_fire_times: string[] }[] }).triggers[0]).toMatchObject({ status: 'enabled', next_fire_times: expect.any(Array) });

    const bad = await cli('app', 'trigger', scheduleApp, '--rotate');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('has no webhook trigger');
    const unknown = await cli('app', 'trigger', scheduleApp, '--node', 'nope', '--pause');
    expect(unknown.stderr).toContain('has no trigger node nope (its triggers: 1762000000001)');
  });
});
