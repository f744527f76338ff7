import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { App } from '../../apps/app-service.js';
import { DslError } from '../../apps/errors.js';
import { parseDsl } from '../../apps/dsl.js';
import { dslReferences } from '../../apps/dsl-references.js';
import { exportDsl } from '../../apps/dsl-export.js';
import { appBlockWithSite, SITE_LANGUAGES, type SiteSettings } from '../../apps/site-settings.js';
import type { Site } from '../../apps/site-service.js';
import { checkToolMap, deleteApp, revokeAppKey } from '../../console/app-lifecycle.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import type { Runtime } from '../../runtime.js';
import { requireJson } from '../json-body.js';
import { consoleMember, requireRole } from './console-auth.js';

/** The runtime members these routes use. */
export type ConsoleAppDeps = Pick<Runtime, 'apps' | 'appProviders' | 'appWarnings' | 'bus' | 'config' | 'datasets' | 'keys' | 'runs' | 'sites' | 'store' | 'triggers' | 'mcpServers'>;

/** An app in the console's lists (snake_case, as Dify's console). */
export function appItem(a: App) {
  return {
    id: a.id,
    name: a.name,
    mode: a.mode,
    description: a.description,
    icon: a.icon,
    version: a.version,
    enable_api: a.enableApi,
    created_at: Math.floor(a.createdAt / 1000),
    updated_at: Math.floor(a.updatedAt / 1000),
  };
}

/** Dify's embed snippets for a site: the chat bubble (`/embed.min.js`) for chat apps, an iframe for every app. */
function embedSnippets(baseUrl: string, site: Site, app: App, url: string): { iframe: string; script: string | null } {
  const iframe = `<iframe\n src="${url}"\n style="width: 100%; height: 100%; min-height: 700px"\n frameborder="0"\n allow="microphone">\n</iframe>`;
  const chat = app.mode === 'chat' || app.mode === 'advanced-chat' || app.mode === 'agent-chat';
  const script = chat
    ? `<script>\n window.difyChatbotConfig = {\n  token: '${site.code}',\n  baseUrl: '${baseUrl}'\n }\n</script>\n<script\n src="${baseUrl}/embed.min.js"\n id="${site.code}"\n defer>\n</script>`
    : null;
  return { iframe, script };
}

const IdMap = Type.Record(Type.String({ minLength: 1, maxLength: 255 }), Type.String({ minLength: 1, maxLength: 255 }), { maxProperties: 200 });

/**
 * The apps of the member's workspace, through the services the CLI uses: list and search; import
 * (`app import`: the DSL text with `datasets` / `tools` mappings; the warnings as `app import`
 * prints them), update (`app update`), export (`app export`), delete (`app delete`); keys (`key
 * create | list | revoke`, admins only: a viewer or editor does not even see the list); the site
 * (`app site`: on/off, new code, link, embed snippets); the model providers the app names and
 * whether each is configured (`app check`).
 */
export const consoleAppRoutes: FastifyPluginAsync<{ runtime: ConsoleAppDeps }> = async (app, { runtime }) => {
  const { listMax, dslMaxBytes } = runtime.config.console;
  const bodyLimit = dslMaxBytes * 2 + 64 * 1024;
  const baseUrl = runtime.config.webForms.appWebUrl;

  /** The app of the path, in the member's workspace; 404 otherwise (another workspace's app is as if it did not exist). */
  const appOf = async (request: FastifyRequest<{ Params: { app_id: string } }>): Promise<App> => {
    const a = await runtime.apps.findIn(consoleMember(request).workspaceId, request.params.app_id);
    if (!a) throw notFound('App not found.');
    return a;
  };

  /** The DSL text of a request, parsed with its mappings checked; a DSL that cannot be imported is a 400 naming `yaml`. */
  const dslOf = async (request: FastifyRequest, body: { yaml: string; datasets?: Record<string, string>; tools?: Record<string, string> }) => {
    if (Buffer.byteLength(body.yaml) > dslMaxBytes) throw invalidParam(`yaml must be at most ${dslMaxBytes / (1024 * 1024)} MB (CONSOLE_DSL_MAX_MB)`);
    const workspaceId = consoleMember(request).workspaceId;
    const datasets = new Map(Object.entries(body.datasets ?? {}));
    const missing = datasets.size > 0 ? await runtime.datasets.missing(workspaceId, [...datasets.values()]) : [];
    if (missing.length > 0) throw invalidParam(`datasets: no dataset ${missing.join(', ')} in this workspace`);
    const tools = new Map(Object.entries(body.tools ?? {}));
    await checkToolMap(runtime.apps, tools, workspaceId, 'tools');
    return { datasets, tools, workspaceId };
  };
  const dslFailure = (err: unknown): never => {
    if (err instanceof DslError) throw invalidParam(`yaml: ${err.message.replace(/^--dataset\b/, 'datasets').replace(/^--tool\b/, 'tools')}`);
    throw err;
  };

  const ListQuery = Type.Object({
    page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
    limit: Type.Integer({ minimum: 1, maximum: listMax, default: 30 }),
    keyword: Type.Optional(Type.String({ maxLength: 255 })),
    mode: Type.Optional(Type.String({ maxLength: 20 })),
  });
  app.get<{ Querystring: { page: number; limit: number; keyword?: string; mode?: string } }>('/apps', { schema: { querystring: ListQuery } }, async (request) => {
    const { page, limit, mode } = request.query;
    const keyword = request.query.keyword?.trim().toLowerCase() ?? '';
    const all = (await runtime.apps.listIn(consoleMember(request).workspaceId)).filter((a) => (keyword === '' || a.name.toLowerCase().includes(keyword)) && (!mode || a.mode === mode));
    all.reverse(); // newest first
    const data = all.slice((page - 1) * limit, page * limit).map(appItem);
    return { data, has_more: page * limit < all.length, limit, page, total: all.length };
  });

  app.get<{ Params: { app_id: string } }>('/apps/:app_id', async (request) => {
    const a = await appOf(request);
    const site = await runtime.sites.forApp(a);
    return { ...appItem(a), site: { code: site.code, enabled: site.enabled, url: runtime.sites.url(site, a.mode) } };
  });

  /** What the app still lacks (`app check`), and the model providers it names with whether each is configured. */
  app.get<{ Params: { app_id: string } }>('/apps/:app_id/check', async (request) => {
    const a = await appOf(request);
    const warnings = await runtime.appWarnings(a);
    const providers = runtime.appProviders(a).map((p) => ({ provider: p.provider, configured: p.problem === null, problem: p.problem, setting: p.setting }));
    return { warnings, providers };
  });

  const DslText = Type.String({ minLength: 1 });
  /** A DSL file before it is imported: its name and mode, the ids it points at, and what this workspace has to map them to. */
  app.post<{ Body: { yaml: string } }>('/apps/import/preview', { bodyLimit, preValidation: requireJson, preHandler: requireRole('editor'), schema: { body: Type.Object({ yaml: DslText }) } }, async (request) => {
    if (Buffer.byteLength(request.body.yaml) > dslMaxBytes) throw invalidParam(`yaml must be at most ${dslMaxBytes / (1024 * 1024)} MB (CONSOLE_DSL_MAX_MB)`);
    let doc;
    try {
      doc = parseDsl(request.body.yaml);
    } catch (err) {
      return dslFailure(err);
    }
    const workspaceId = consoleMember(request).workspaceId;
    const refs = dslReferences(doc);
    const missingHere = new Set(refs.datasetIds.length > 0 ? await runtime.datasets.missing(workspaceId, refs.datasetIds) : []);
    const { rows } = await runtime.datasets.list(workspaceId, 1, listMax);
    const workflowApps = (await runtime.apps.listIn(workspaceId)).filter((x) => x.mode === 'workflow');
    return {
      name: doc.app.name,
      mode: doc.app.mode,
      // the ids that name nothing here need a mapping (the others already name this workspace's datasets)
      datasets: refs.datasetIds.map((id) => ({ id, exists: !missingHere.has(id) })),
      tools: refs.workflowToolIds.map((id) => ({ id, exists: workflowApps.some((w) => w.id === id) })),
      available_datasets: rows.map((d) => ({ id: d.id, name: d.name })),
      available_workflow_apps: workflowApps.map((w) => ({ id: w.id, name: w.name })),
    };
  });

  const ImportBody = Type.Object({ yaml: DslText, datasets: Type.Optional(IdMap), tools: Type.Optional(IdMap) });
  app.post<{ Body: { yaml: string; datasets?: Record<string, string>; tools?: Record<string, string> } }>(
    '/apps/import',
    { bodyLimit, preValidation: requireJson, preHandler: requireRole('editor'), schema: { body: ImportBody } },
    async (request) => {
      const { datasets, tools, workspaceId } = await dslOf(request, request.body);
      const a = await runtime.apps.importDsl(request.body.yaml, { datasets, tools, workspaceId }).catch(dslFailure);
      return { app: appItem(a), warnings: await runtime.appWarnings(a) };
    },
  );

  app.put<{ Params: { app_id: string }; Body: { yaml: string; datasets?: Record<string, string>; tools?: Record<string, string> } }>(
    '/apps/:app_id/dsl',
    { bodyLimit, preValidation: requireJson, preHandler: requireRole('editor'), schema: { body: ImportBody } },
    async (request) => {
      const a = await appOf(request);
      const { datasets, tools } = await dslOf(request, request.body);
      const updated = await runtime.apps.update(a.id, request.body.yaml, { datasets, tools }).catch(dslFailure);
      if (!updated) throw notFound('App not found.');
      return { app: appItem(updated), warnings: await runtime.appWarnings(updated) };
    },
  );

  /** `app export`: the DSL as a YAML download, secret values left out (as Dify's export by default). */
  app.get<{ Params: { app_id: string } }>('/apps/:app_id/export', { preHandler: requireRole('editor') }, async (request, reply) => {
    const a = await appOf(request);
    const site = await runtime.sites.forApp(a);
    const yaml = exportDsl({ ...a.dsl, app: appBlockWithSite(a.dsl.app, site.settings) });
    const file = `${a.name.replace(/[^\p{L}\p{N} ._-]+/gu, '_').trim() || 'app'}.yml`;
    return reply
      .type('application/x-yaml; charset=utf-8')
      .header('content-disposition', `attachment; filename="app.yml"; filename*=UTF-8''${encodeURIComponent(file)}`)
      .send(yaml);
  });

  app.delete<{ Params: { app_id: string } }>('/apps/:app_id', { preHandler: requireRole('editor') }, async (request) => {
    const a = await appOf(request);
    const { deleted, runsStopped } = await deleteApp({ apps: runtime.apps, runs: runtime.runs, store: runtime.store, bus: runtime.bus, triggers: runtime.triggers, mcpServers: runtime.mcpServers }, a, false);
    if (!deleted) throw notFound('App not found.');
    return { result: 'success', runs_stopped: runsStopped };
  });

  // keys: admins and the owner only (a key is the app's credential)
  const keyItem = (k: { id: string; hint: string; createdAt: number; lastUsedAt: number | null }) => ({
    id: k.id,
    token: k.hint,
    created_at: Math.floor(k.createdAt / 1000),
    last_used_at: k.lastUsedAt === null ? null : Math.floor(k.lastUsedAt / 1000),
  });
  app.get<{ Params: { app_id: string } }>('/apps/:app_id/keys', { preHandler: requireRole('admin') }, async (request) => {
    const a = await appOf(request);
    const data = (await runtime.keys.list()).filter((k) => k.appId === a.id).map(keyItem);
    return { data, has_more: false, limit: data.length, page: 1, total: data.length };
  });
  app.post<{ Params: { app_id: string } }>('/apps/:app_id/keys', { preHandler: requireRole('admin') }, async (request) => {
    const a = await appOf(request);
    const { id, apiKey } = await runtime.keys.create('app', a.workspaceId, a.id);
    const info = (await runtime.keys.list()).find((k) => k.id === id)!;
    // the whole key, this once: only its hash is kept
    return { ...keyItem(info), token: apiKey };
  });
  app.delete<{ Params: { app_id: string; key_id: string } }>('/apps/:app_id/keys/:key_id', { preHandler: requireRole('admin') }, async (request) => {
    const a = await appOf(request);
    if (!(await revokeAppKey({ keys: runtime.keys, bus: runtime.bus }, a.id, request.params.key_id))) throw notFound('API key not found.');
    return { result: 'success' };
  });

  // the site (the web app): its link, settings and embed snippets for everyone; on/off, a new code and the settings for editors
  const siteBody = (a: App, site: Site) => {
    const url = runtime.sites.url(site, a.mode);
    return { code: site.code, enabled: site.enabled, url, embed: embedSnippets(baseUrl, site, a, url), title: site.settings.title, settings: site.settings, mode: a.mode, languages: SITE_LANGUAGES };
  };
  app.get<{ Params: { app_id: string } }>('/apps/:app_id/site', async (request) => {
    const a = await appOf(request);
    return siteBody(a, await runtime.sites.forApp(a));
  });
  // `enabled`, `reset_code`, and any of the settings (`title`, `description`, …) at the top level, as Dify's `POST /apps/{id}/site`;
  // the settings are checked by the service `dovetail app site` uses, which names a bad one
  app.patch<{ Params: { app_id: string }; Body: { enabled?: boolean; reset_code?: boolean } & Record<string, unknown> }>(
    '/apps/:app_id/site',
    { preValidation: requireJson, preHandler: requireRole('editor'), schema: { body: Type.Object({ enabled: Type.Optional(Type.Boolean()), reset_code: Type.Optional(Type.Boolean()) }, { maxProperties: 40 }) } },
    async (request) => {
      const a = await appOf(request);
      const { enabled, reset_code, ...rest } = request.body;
      const settings = Object.keys(rest).length > 0 ? (rest as Partial<SiteSettings>) : undefined;
      const site = await runtime.sites.change(a, { enabled, resetCode: reset_code === true, settings });
      return siteBody(a, site);
    },
  );
};
