import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dropSchema } from '../../src/store/db.js';

/** Every app's site: made at import, shown and changed by the CLI, kept by update and export, gone with the app. */
const exec = promisify(execFile);
const pgUrl = process.env.TEST_DATABASE_URL;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-sites-'));
const schema = pgUrl ? `t_site_${Math.random().toString(36).slice(2, 10)}` : undefined;
const WEB = 'https://chat.example.com';
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  DOVETAIL_DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  APP_WEB_URL: `${WEB}/`,
  REDIS_URL: '',
  ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema! } : { DATABASE_URL: '' }),
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

const DSL = `app:
  mode: chat
  name: Site helper
  description: Answers questions
  icon: 🦊
  icon_background: '#E0F2FE'
  use_icon_as_answer_icon: true
kind: app
version: 0.3.1
model_config:
  model: { provider: mock, name: mock-echo, mode: chat }
  pre_prompt: ''
`;

let s: TestServer;
let appId: string;
let key: string;
const file = path.join(dataDir, 'site.yml');

beforeAll(async () => {
  writeFileSync(file, DSL);
  const r = await cli('--init', 'app', 'import', file, '--json');
  expect(r.code).toBe(0);
  ({ app_id: appId, api_key: key } = JSON.parse(r.stdout) as { app_id: string; api_key: string });
  s = await startServer({ reuse: { dataDir, schema }, env: { APP_WEB_URL: WEB } });
}, 120_000);
afterAll(async () => {
  await s?.stop();
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  rmSync(dataDir, { recursive: true, force: true });
});

const site = async () => (await (await fetch(`${s.api}/site`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<string, unknown>;

describe('sites', () => {
  it('an imported app has an enabled site with a 16-character code, its settings from the DSL app block', async () => {
    const r = await cli('app', 'show', appId, '--json');
    const shown = JSON.parse(r.stdout) as { site: { code: string; enabled: boolean; url: string } };
    expect(shown.site.code).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(shown.site).toEqual({ code: shown.site.code, enabled: true, url: `${WEB}/chat/${shown.site.code}` });
    const body = await site();
    expect(body).toMatchObject({ title: 'Site helper', icon: '🦊', icon_background: '#E0F2FE', description: 'Answers questions', use_icon_as_answer_icon: true, default_language: 'en-US', show_workflow_steps: true, copyright: '' });
    expect(body).not.toHaveProperty('prompt_public');
  });

  it('app site changes settings, turns the site off and on, and draws a new code; bad values are refused naming the option', async () => {
    const before = (JSON.parse((await cli('app', 'show', appId, '--json')).stdout) as { site: { code: string } }).site.code;
    const r = await cli('app', 'site', appId, '--disable', '--title', 'Fox desk', '--copyright', '© Fox', '--default-language', 'ja-JP', '--show-workflow-steps', 'false', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: before, enabled: false, title: 'Fox desk', copyright: '© Fox', default_language: 'ja-JP', show_workflow_steps: false });
    expect(await site()).toMatchObject({ title: 'Fox desk', copyright: '© Fox', default_language: 'ja-JP', show_workflow_steps: false, icon: '🦊' });
    const bad = await cli('app', 'site', appId, '--default-language', 'xx-YY');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('default_language must be one of');
    const badBool = await cli('app', 'site', appId, '--show-workflow-steps', 'maybe');
    expect(badBool.stderr).toContain('--show-workflow-steps must be true or false');
    const reset = JSON.parse((await cli('app', 'site', appId, '--enable', '--reset-code', '--json')).stdout) as { code: string; enabled: boolean; url: string };
    expect(reset.code).not.toBe(before);
    expect(reset.code).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(reset.enabled).toBe(true);
    expect(reset.url).toBe(`${WEB}/chat/${reset.code}`);
  }, 120_000);

  it('export writes the site settings into the app block; update keeps the site; a re-import restores the settings', async () => {
    const code = (JSON.parse((await cli('app', 'show', appId, '--json')).stdout) as { site: { code: string } }).site.code;
    const exported = await cli('app', 'export', appId);
    const doc = parse(exported.stdout) as { app: Record<string, unknown> };
    expect(doc.app).toMatchObject({ icon: '🦊', use_icon_as_answer_icon: true, site: { title: 'Fox desk', copyright: '© Fox', default_language: 'ja-JP' } });
    const out = path.join(dataDir, 'exported.yml');
    writeFileSync(out, exported.stdout);
    expect((await cli('app', 'update', appId, out)).code).toBe(0);
    const after = JSON.parse((await cli('app', 'show', appId, '--json')).stdout) as { site: { code: string; enabled: boolean } };
    expect(after.site).toMatchObject({ code, enabled: true });
    const again = JSON.parse((await cli('app', 'import', out, '--json')).stdout) as { app_id: string; api_key: string };
    const copy = (await (await fetch(`${s.api}/site`, { headers: { authorization: `Bearer ${again.api_key}` } })).json()) as Record<string, unknown>;
    expect(copy).toMatchObject({ title: 'Fox desk', copyright: '© Fox', default_language: 'ja-JP', icon: '🦊' });
    const copyCode = (JSON.parse((await cli('app', 'show', again.app_id, '--json')).stdout) as { site: { code: string } }).site.code;
    expect(copyCode).not.toBe(code);
    // deleting an app deletes its site: its code is no longer found
    expect((await cli('app', 'delete', again.app_id, '--yes')).code).toBe(0);
    expect(await s.runtime.sites.byCode(copyCode)).toBeUndefined();
    expect(await s.runtime.sites.byCode(code)).toBeDefined();
  }, 180_000);

  it('an app stored before sites existed gets one, with its settings from the DSL, when first asked for', async () => {
    const other = JSON.parse((await cli('app', 'import', file, '--json')).stdout) as { app_id: string; api_key: string };
    await s.runtime.store.db.deleteFrom('sites').where('app_id', '=', other.app_id).execute();
    expect(await s.runtime.sites.ofApp(other.app_id)).toBeUndefined();
    const site = (await (await fetch(`${s.api}/site`, { headers: { authorization: `Bearer ${other.api_key}` } })).json()) as Record<string, unknown>;
    expect(site).toMatchObject({ title: 'Site helper', icon: '🦊', use_icon_as_answer_icon: true });
    const made = await s.runtime.sites.ofApp(other.app_id);
    expect(made).toMatchObject({ enabled: true });
    expect(made!.code).toMatch(/^[A-Za-z0-9]{16}$/);
    const shown = JSON.parse((await cli('app', 'show', other.app_id, '--json')).stdout) as { site: { code: string } };
    expect(shown.site.code).toBe(made!.code);
  }, 60_000);
});
