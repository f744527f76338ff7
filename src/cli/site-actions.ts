/** The action of `app site` and the site lines of `app show` (app-commands.ts defines the options). */
import type { Command } from 'commander';
import type { App } from '../apps/app-service.js';
import { SiteService, type Site, type SiteEdit } from '../apps/site-service.js';
import type { SiteSettings } from '../apps/site-settings.js';
import { systemClock } from '../infra/clock.js';
import { ServiceError } from '../infra/errors.js';
import { withCli, type CliContext, type GlobalOptions } from './cli-context.js';
import { CliError } from './cli-error.js';
import { findApp } from './find-app.js';
import { print } from './output.js';

/** The sites of the CLI's database; share links start with `APP_WEB_URL`. */
export function cliSites(ctx: Pick<CliContext, 'store' | 'config'>): SiteService {
  return new SiteService(ctx.store.db, systemClock, ctx.config.webForms.appWebUrl, ctx.config.webApp.siteSettingMaxChars);
}

/** `site: {code, enabled, url}` as `app show --json` prints it. */
export function siteSummary(sites: SiteService, app: App, site: Site): { code: string; enabled: boolean; url: string } {
  return { code: site.code, enabled: site.enabled, url: sites.url(site, app.mode) };
}

/** String options of `app site` → the setting each sets. */
const STRING_FLAGS = {
  title: 'title',
  description: 'description',
  icon: 'icon',
  iconBackground: 'icon_background',
  defaultLanguage: 'default_language',
  copyright: 'copyright',
  privacyPolicy: 'privacy_policy',
  customDisclaimer: 'custom_disclaimer',
  inputPlaceholder: 'input_placeholder',
  chatColorTheme: 'chat_color_theme',
} as const satisfies Record<string, keyof SiteSettings>;
const BOOLEAN_FLAGS = {
  chatColorThemeInverted: ['chat_color_theme_inverted', '--chat-color-theme-inverted'],
  showWorkflowSteps: ['show_workflow_steps', '--show-workflow-steps'],
  useIconAsAnswerIcon: ['use_icon_as_answer_icon', '--use-icon-as-answer-icon'],
} as const satisfies Record<string, readonly [keyof SiteSettings, string]>;

/** The change `app site`'s options ask for. */
export function siteEdit(opts: Record<string, string | boolean | undefined>): SiteEdit {
  if (opts.enable && opts.disable) throw new CliError('--enable and --disable cannot be given together');
  const settings: Record<string, string | boolean> = {};
  for (const [flag, key] of Object.entries(STRING_FLAGS)) if (typeof opts[flag] === 'string') settings[key] = opts[flag];
  for (const [flag, [key, name]] of Object.entries(BOOLEAN_FLAGS)) {
    const v = opts[flag];
    if (v === undefined) continue;
    if (v !== 'true' && v !== 'false') throw new CliError(`${name} must be true or false, got "${String(v)}"`);
    settings[key] = v === 'true';
  }
  return {
    enabled: opts.enable ? true : opts.disable ? false : undefined,
    resetCode: opts.resetCode === true,
    settings: Object.keys(settings).length > 0 ? (settings as Partial<SiteSettings>) : undefined,
  };
}

export const appSite = async (ref: string, opts: Record<string, string | boolean | undefined>, cmd: Command) =>
  withCli(cmd.optsWithGlobals<GlobalOptions>(), async (ctx) => {
    const app = await findApp(ctx.apps, ref);
    const sites = cliSites(ctx);
    const edit = siteEdit(opts);
    let site: Site;
    try {
      site = await sites.change(app, edit);
    } catch (err) {
      if (err instanceof ServiceError) throw new CliError(err.message);
      throw err;
    }
    const obj = { app_id: app.id, ...siteSummary(sites, app, site), ...site.settings };
    const text = [`code:    ${site.code}`, `enabled: ${site.enabled}`, `url:     ${sites.url(site, app.mode)}`, ...Object.entries(site.settings).map(([k, v]) => `${k}: ${v === null ? '' : String(v)}`)].join('\n');
    print(opts.json === true, obj, text);
  });
