import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { completionApp } from '../helpers/apps.js';
import { memberClient, type ConsoleClient } from '../helpers/console.js';

/**
 * The console's apps over real HTTP (SQLite, or PostgreSQL with TEST_DATABASE_URL): import with the
 * CLI's warnings, update, export, delete; keys (admins only, shown once, masked, revoked: the
 * Service API refuses it); the site; the providers an app needs; roles and workspaces.
 */
let s: TestServer;
let owner: ConsoleClient;
let editor: ConsoleClient;
let viewer: ConsoleClient;
let stranger: ConsoleClient;

beforeAll(async () => {
  s = await startServer();
  owner = await memberClient(s, { name: 'Olive', email: 'olive@example.test', role: 'owner' });
  editor = await memberClient(s, { name: 'Eddie', email: 'eddie@example.test', role: 'editor' });
  viewer = await memberClient(s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
  stranger = await memberClient(s, { name: 'Otto', email: 'otto@example.test', role: 'owner', workspace: 'Other team' });
}, 120_000);
afterAll(async () => {
  await s?.close();
});

interface Imported {
  app: { id: string; name: string; mode: string; version: number };
  warnings: { node_id: string; part: string; setting: string | null; message: string }[];
}

describe('console apps', { timeout: 120_000 }, () => {
  let appId: string;

  it('an editor imports a DSL into the workspace and sees the warnings app import prints; a viewer may not import', async () => {
    const yaml = completionApp({ name: 'Deep writer', provider: 'deepseek', model: 'deepseek-chat' });
    const refused = await viewer.post('/apps/import', { yaml });
    expect(refused.status).toBe(403);
    const r = await editor.post<Imported>('/apps/import', { yaml });
    expect(r.status).toBe(200);
    appId = r.body.app.id;
    expect(r.body.app).toMatchObject({ name: 'Deep writer', mode: 'completion', version: 1 });
    // the same warning list `app import` / `app check` give (rt.appWarnings)
    const app = (await s.runtime.apps.find(appId))!;
    expect(r.body.warnings).toEqual(await s.runtime.appWarnings(app));
    expect(r.body.warnings).toContainEqual(expect.objectContaining({ part: 'model provider "deepseek"', setting: 'DEEPSEEK_API_KEY' }));

    const check = await viewer.get<{ providers: { provider: string; configured: boolean; setting: string | null }[] }>(`/apps/${appId}/check`);
    expect(check.body.providers).toEqual([{ provider: 'deepseek', configured: false, problem: expect.stringContaining('DEEPSEEK_API_KEY'), setting: 'DEEPSEEK_API_KEY' }]);

    const broken = await editor.post<{ code: string; message: string }>('/apps/import', { yaml: 'app: [' });
    expect(broken.status).toBe(400);
    expect(broken.body.message).toMatch(/^yaml: /);
    // another workspace does not see it
    expect((await stranger.get(`/apps/${appId}`)).status).toBe(404);
    expect((await stranger.delete(`/apps/${appId}`)).status).toBe(404);
  });

  it('preview lists the datasets a DSL names and this workspace\'s datasets to map them to; the mapping is applied', async () => {
    const ds = await s.runtime.datasets.create(await s.runtime.apps.workspaceId(), { name: 'Manuals', createdBy: 'test' });
    const yaml = `app:\n  mode: chat\n  name: Kb chat\nkind: app\nversion: 0.3.1\nmodel_config:\n  model:\n    provider: openai\n    name: gpt-4o-mini\n    mode: chat\n  pre_prompt: hi\n  dataset_configs:\n    retrieval_model: multiple\n    datasets:\n      datasets:\n        - dataset:\n            enabled: true\n            id: 0c5b1f0e-0000-4000-8000-000000000001\n`;
    const p = await editor.post<{ datasets: { id: string; exists: boolean }[]; available_datasets: { id: string; name: string }[] }>('/apps/import/preview', { yaml });
    expect(p.status).toBe(200);
    expect(p.body.datasets).toEqual([{ id: '0c5b1f0e-0000-4000-8000-000000000001', exists: false }]);
    expect(p.body.available_datasets).toEqual([{ id: ds.id, name: 'Manuals' }]);
    const bad = await editor.post<{ message: string }>('/apps/import', { yaml, datasets: { '0c5b1f0e-0000-4000-8000-000000000001': '0c5b1f0e-0000-4000-8000-00000000dead' } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^datasets: no dataset/);
    const r = await editor.post<Imported>('/apps/import', { yaml, datasets: { '0c5b1f0e-0000-4000-8000-000000000001': ds.id } });
    expect(r.status).toBe(200);
    expect(r.body.warnings.filter((w) => w.part.startsWith('dataset'))).toEqual([]);
    expect(JSON.stringify((await s.runtime.apps.find(r.body.app.id))!.dsl)).toContain(ds.id);
  });

  it('keys: admins only (a viewer or editor cannot even list them); created shown once, listed masked, revoked', async () => {
    expect((await viewer.get(`/apps/${appId}/keys`)).status).toBe(403);
    expect((await editor.get(`/apps/${appId}/keys`)).status).toBe(403);
    expect((await editor.post(`/apps/${appId}/keys`)).status).toBe(403);
    const made = await owner.post<{ id: string; token: string }>(`/apps/${appId}/keys`);
    expect(made.status).toBe(200);
    expect(made.body.token).toMatch(/^app-[A-Za-z0-9_-]{24,}$/);
    const params = await fetch(`${s.api}/parameters`, { headers: { authorization: `Bearer ${made.body.token}` } });
    expect(params.status).toBe(200);
    const list = await owner.get<{ data: { id: string; token: string }[] }>(`/apps/${appId}/keys`);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]!.token).not.toBe(made.body.token);
    expect(made.body.token.startsWith(list.body.data[0]!.token.replace('…', ''))).toBe(true);
    expect(JSON.stringify(list.body)).not.toContain(made.body.token);

    const revoked = await owner.delete(`/apps/${appId}/keys/${made.body.id}`);
    expect(revoked.status).toBe(200);
    expect((await fetch(`${s.api}/parameters`, { headers: { authorization: `Bearer ${made.body.token}` } })).status).toBe(401);
    expect((await owner.delete(`/apps/${appId}/keys/${made.body.id}`)).status).toBe(404);
  });

  it('the site: link and embed snippets for all; editors turn it off and draw a new code', async () => {
    const site = await viewer.get<{ code: string; enabled: boolean; url: string; embed: { iframe: string; script: string | null } }>(`/apps/${appId}/site`);
    expect(site.body.url).toBe(`${s.config.webForms.appWebUrl}/completion/${site.body.code}`);
    expect(site.body.embed.iframe).toContain(`src="${site.body.url}"`);
    expect(site.body.embed.script).toBeNull(); // the chat bubble is for chat apps
    expect((await viewer.request('PATCH', `/apps/${appId}/site`, { enabled: false })).status).toBe(403);
    const off = await editor.request<{ code: string; enabled: boolean }>('PATCH', `/apps/${appId}/site`, { enabled: false, reset_code: true });
    expect(off.body.enabled).toBe(false);
    expect(off.body.code).not.toBe(site.body.code);
    expect((await s.runtime.sites.ofApp(appId))!.enabled).toBe(false);
  });

  it('the site settings: all read them; an editor changes them through the service `app site` uses; a bad one is a 400 naming it', async () => {
    type SiteView = { settings: Record<string, unknown>; title: string };
    const before = await viewer.get<SiteView>(`/apps/${appId}/site`);
    expect(before.body.settings).toMatchObject({ title: 'Deep writer', default_language: 'en-US', show_workflow_steps: true });
    expect((await viewer.request('PATCH', `/apps/${appId}/site`, { title: 'Nope' })).status).toBe(403);

    const change = { title: 'The writer', description: 'Writes about a topic', icon: '🦊', icon_background: '#E0F2FE', default_language: 'ja-JP', copyright: '© Team', privacy_policy: 'https://example.test/privacy', custom_disclaimer: 'Answers may be wrong.', chat_color_theme: '#1C64F2', chat_color_theme_inverted: true, show_workflow_steps: false, use_icon_as_answer_icon: true, input_placeholder: 'Ask away' };
    const r = await editor.request<SiteView>('PATCH', `/apps/${appId}/site`, change);
    expect(r.status).toBe(200);
    expect(r.body.settings).toMatchObject(change);
    expect(r.body.title).toBe('The writer');
    // stored: the web app (`GET /api/site`), `/v1/site` and `app site` read the same row
    expect((await s.runtime.sites.ofApp(appId))!.settings).toMatchObject(change);
    // a partial change keeps the rest
    const partial = await editor.request<SiteView>('PATCH', `/apps/${appId}/site`, { copyright: '' });
    expect(partial.body.settings).toMatchObject({ ...change, copyright: '' });

    const bad: [Record<string, unknown>, RegExp][] = [
      [{ title: '  ' }, /^title must not be empty/],
      [{ title: 42 }, /^title must be a string/],
      [{ default_language: 'xx-XX' }, /^default_language must be one of en-US/],
      [{ icon_background: 'red' }, /^icon_background must be a colour/],
      [{ chat_color_theme: 'url(x)' }, /^chat_color_theme must be a colour/],
      [{ privacy_policy: 'javascript:alert(1)' }, /^privacy_policy must be an http/],
      [{ show_workflow_steps: 'yes' }, /^show_workflow_steps must be true or false/],
      [{ colour: '#fff' }, /^colour is not a web app setting/],
      [{ description: 'x'.repeat(s.config.webApp.siteSettingMaxChars + 1) }, /^description must be at most \d+ characters \(SITE_SETTING_MAX_CHARS\)/],
      [{ enabled: 'yes' }, /enabled/],
    ];
    for (const [body, message] of bad) {
      const refused = await editor.request<{ code: string; message: string; status: number }>('PATCH', `/apps/${appId}/site`, body);
      expect(refused.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(refused.body.code).toBe('invalid_param');
      expect(refused.body.message).toMatch(message);
    }
    // nothing of a refused change was stored
    expect((await s.runtime.sites.ofApp(appId))!.settings).toMatchObject({ ...change, copyright: '' });
  });

  it('update (a new version), export (a YAML download), then delete: a viewer cannot delete', async () => {
    const up = await editor.request<Imported>('PUT', `/apps/${appId}/dsl`, { yaml: completionApp({ name: 'Deep writer', provider: 'deepseek', model: 'deepseek-chat', prePrompt: 'Version two about {{topic}}' }) });
    expect(up.status).toBe(200);
    expect(up.body.app.version).toBe(2);
    const exp = await fetch(`${s.url}/console/api/apps/${appId}/export`, { headers: { cookie: editor.cookie } });
    expect(exp.status).toBe(200);
    expect(exp.headers.get('content-disposition')).toContain("filename*=UTF-8''Deep%20writer.yml");
    expect(await exp.text()).toContain('Version two about');

    const refused = await viewer.delete<{ code: string; message: string }>(`/apps/${appId}`);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('This needs the editor role or higher; your role is viewer.');
    expect((await editor.delete(`/apps/${appId}`, { csrf: false })).status).toBe(403);
    const del = await editor.delete(`/apps/${appId}`);
    expect(del.status).toBe(200);
    expect(await s.runtime.apps.find(appId)).toBeUndefined();
    expect((await editor.get(`/apps/${appId}`)).status).toBe(404);
  });

  it('forms waiting: an empty list for a workspace without paused runs', async () => {
    const r = await viewer.get<{ data: unknown[] }>('/forms');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([]);
  });
});
