import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { example, PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { dropSchema } from '../../src/store/db.js';

const exec = promisify(execFile);
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-lifecycle-'));
const schema = pgUrl ? `t_life_${Math.random().toString(36).slice(2, 10)}` : undefined;
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  DOVETAIL_DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema! } : { DATABASE_URL: '' }),
  ...(pgUrl && redisUrl ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `dovetail-lifecycle-${path.basename(dataDir)}:` } : { REDIS_URL: '' }),
};
delete env.DOVETAIL_CONFIG;

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
let appId: string;
let key: string;
const h = () => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

beforeAll(async () => {
  const file = path.join(dataDir, 'approval.yml');
  writeFileSync(file, example('workflow-approval.yml'));
  const r = await cli('--init', 'app', 'import', file, '--json');
  expect(r.code).toBe(0);
  ({ app_id: appId, api_key: key } = JSON.parse(r.stdout) as { app_id: string; api_key: string });
  s = await startServer({ reuse: { dataDir, schema }, env: pgUrl && redisUrl ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: env.REDIS_KEY_PREFIX! } : {} });
}, 120_000);
afterAll(async () => {
  await s?.stop();
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

/** Starts a run and returns it paused at the review form. */
async function pausedRun(draft: string): Promise<{ runId: string; token: string }> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: h(), body: JSON.stringify({ inputs: { draft }, response_mode: 'streaming', user: 'erin' }) });
  const events = dataFrames(parseSse(await r.text()));
  expect(events.at(-1)!.event).toBe('workflow_paused');
  return { runId: String(events[0]!.workflow_run_id), token: String((events.at(-2)!.data as { form_token: string }).form_token) };
}

async function approve(run: { runId: string; token: string }): Promise<Record<string, unknown>> {
  const submit = await fetch(`${s.api}/form/human_input/${run.token}`, { method: 'POST', headers: h(), body: JSON.stringify({ inputs: { comment: 'ok' }, action: 'approve', user: 'erin' }) });
  expect(submit.status).toBe(200);
  let body: Record<string, unknown> = {};
  for (let i = 0; i < 300; i++) {
    body = (await (await fetch(`${s.api}/workflows/run/${run.runId}`, { headers: h() })).json()) as Record<string, unknown>;
    if (body.status === 'succeeded' || body.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return body;
}

describe('app show / update / export / delete', { timeout: 120_000 }, () => {
  it('update: same id and key, a new version; a paused run resumes on the version it started with', async () => {
    const before = await pausedRun('v1 draft');
    const v2 = path.join(dataDir, 'approval-v2.yml');
    writeFileSync(v2, example('workflow-approval.yml').replace("'approved: {{ comment }}'", "'approved in v2: {{ comment }}'").replace('name: Draft approval', 'name: Draft approval v2'));
    const u = await cli('app', 'update', appId, v2, '--json');
    expect(u.code).toBe(0);
    expect(JSON.parse(u.stdout)).toEqual({ app_id: appId, mode: 'workflow', name: 'Draft approval v2', version: 2, warnings: [] });

    // the paused run keeps version 1; a new run takes version 2, with the same key
    expect(await approve(before)).toMatchObject({ status: 'succeeded', outputs: { decision: 'approved: ok' } });
    expect(await approve(await pausedRun('v2 draft'))).toMatchObject({ status: 'succeeded', outputs: { decision: 'approved in v2: ok' } });
    expect((await (await fetch(`${s.api}/info`, { headers: h() })).json()).name).toBe('Draft approval v2');

    const shown = await cli('app', 'show', appId, '--json');
    const doc = JSON.parse(shown.stdout) as { version: number; keys: { id: string }[]; mode: string };
    expect(doc).toMatchObject({ app_id: appId, version: 2, mode: 'workflow' });
    expect(doc.keys).toHaveLength(1);
    expect(shown.stderr).toMatch(/^database: /);

    const mode = path.join(dataDir, 'chat.yml');
    writeFileSync(mode, example('workflow-approval.yml').replace('mode: workflow', 'mode: advanced-chat'));
    const bad = await cli('app', 'update', appId, mode);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/app\.mode must stay "workflow"/);
    expect(JSON.parse((await cli('app', 'show', appId, '--json')).stdout).version).toBe(2);
  });

  it('export prints the DSL as Dify exports it (kind, version, sorted keys), and it imports again', async () => {
    const r = await cli('app', 'export', appId);
    expect(r.code).toBe(0);
    const doc = parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual([...Object.keys(doc)].sort());
    expect(doc).toMatchObject({ kind: 'app', app: { name: 'Draft approval v2', mode: 'workflow' }, dependencies: [] });
    expect(r.stdout).toContain('approved in v2: {{ comment }}');
    const again = path.join(dataDir, 'exported.yml');
    writeFileSync(again, r.stdout);
    const imported = await cli('app', 'import', again, '--json');
    expect(imported.code).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ mode: 'workflow', name: 'Draft approval v2' });
  });

  it('delete asks for --yes off a terminal; deletes the app and its keys at once, keeping its runs unless --purge', async () => {
    const refused = await cli('app', 'delete', appId);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/pass --yes to confirm/);
    expect((await fetch(`${s.api}/info`, { headers: h() })).status).toBe(200);

    const d = await cli('app', 'delete', appId, '--yes', '--json');
    expect(d.code).toBe(0);
    expect(JSON.parse(d.stdout)).toMatchObject({ app_id: appId, deleted: true, keys_deleted: 1, data: 'kept' });
    const gone = await fetch(`${s.api}/info`, { headers: h() });
    expect(gone.status).toBe(401);
    expect((await cli('app', 'show', appId)).stderr).toMatch(/no app with id or name/);
    const runs = await s.runtime.store.db.selectFrom('workflow_runs').select('id').where('app_id', '=', appId).execute();
    expect(runs).toHaveLength(2);

    const other = JSON.parse((await cli('app', 'list', '--json')).stdout) as { app_id: string }[];
    expect(other).toHaveLength(1);
    const otherKey = JSON.parse((await cli('key', 'create', '--app', other[0]!.app_id, '--json')).stdout).api_key as string;
    key = otherKey;
    await approve(await pausedRun('to purge'));
    const p = await cli('app', 'delete', other[0]!.app_id, '--yes', '--purge', '--json');
    expect(JSON.parse(p.stdout)).toMatchObject({ deleted: true, data: 'purged' });
    const left = await s.runtime.store.db.selectFrom('workflow_runs').select('id').where('app_id', '=', other[0]!.app_id).execute();
    expect(left).toHaveLength(0);
    expect((await cli('app', 'list', '--json')).stdout).toBe('[]\n');
  });
});
