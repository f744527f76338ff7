import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { invalidParam } from '../infra/errors.js';
import type { AppMode, DslDocument } from './dsl.js';
import { SiteStore, type Site } from './site-store.js';
import { newSiteCode, sitePath, siteSettingsFault, siteSettingsFromDsl, type SiteSettings } from './site-settings.js';

export type { Site } from './site-store.js';

/** The app fields a site is made from. */
export interface SiteApp {
  readonly id: string;
  readonly mode: AppMode;
  readonly dsl: Pick<DslDocument, 'app'>;
  readonly createdAt: number;
}

/** A change asked for by `dovetail app site` or the console's Web app page. */
export interface SiteEdit {
  readonly enabled?: boolean;
  readonly resetCode?: boolean;
  readonly settings?: Partial<SiteSettings>;
}

const CODE_ATTEMPTS = 5;

/** A new site for an app: a fresh code, enabled (Dify's default), settings from its DSL. */
export function newSite(app: SiteApp, at: number): Site {
  return { appId: app.id, code: newSiteCode(), enabled: true, settings: siteSettingsFromDsl(app.dsl), createdAt: at, updatedAt: at };
}

/** Every app's web app (Dify's sites): its code, whether it answers, its settings and public URL. */
export class SiteService {
  readonly #store: SiteStore;
  readonly #clock: Clock;
  readonly #baseUrl: string;
  readonly #maxChars: number;

  /** `baseUrl` is `APP_WEB_URL`, the public base of the share links; `maxChars` is `SITE_SETTING_MAX_CHARS`. */
  constructor(db: Kysely<Database>, clock: Clock, baseUrl: string, maxChars: number) {
    this.#store = new SiteStore(db);
    this.#clock = clock;
    this.#baseUrl = baseUrl;
    this.#maxChars = maxChars;
  }

  /** The app's site; one is made for an app that has none (an app stored before sites existed gets its own here, on first use). */
  async forApp(app: SiteApp): Promise<Site> {
    const found = await this.#store.ofApp(app.id);
    if (found) return found;
    for (let i = 0; i < CODE_ATTEMPTS; i++) {
      await this.#store.insert(newSite(app, this.#clock.now()));
      const site = await this.#store.ofApp(app.id);
      if (site) return site;
    }
    throw new Error(`no site could be stored for app ${app.id}`);
  }

  /** The site with this code, if any (enabled or not). */
  byCode(code: string): Promise<Site | undefined> {
    return this.#store.byCode(code);
  }

  /** The site of an app id, without making one. */
  ofApp(appId: string): Promise<Site | undefined> {
    return this.#store.ofApp(appId);
  }

  /** The share link of a site: `{APP_WEB_URL}/chat|completion|workflow/{code}` by the app's mode, as Dify's. */
  url(site: Site, mode: AppMode): string {
    return `${this.#baseUrl}/${sitePath(mode)}/${site.code}`;
  }

  /** Applies a change (`dovetail app site`, the console); a bad setting is refused naming it (`siteSettingsFault`). */
  async change(app: SiteApp, edit: SiteEdit): Promise<Site> {
    const fault = edit.settings ? siteSettingsFault(edit.settings, this.#maxChars) : undefined;
    if (fault) throw invalidParam(fault);
    const cur = await this.forApp(app);
    const given = edit.settings ? Object.fromEntries(Object.entries(edit.settings).filter(([, v]) => v !== undefined)) : undefined;
    const settings = given ? { ...cur.settings, ...given } : undefined;
    for (let i = 0; ; i++) {
      const code = edit.resetCode ? newSiteCode() : undefined;
      try {
        await this.#store.update(app.id, { code, enabled: edit.enabled, settings, updatedAt: this.#clock.now() });
        break;
      } catch (err) {
        // a new code another site already has (the unique index): draw again
        if (code === undefined || i + 1 >= CODE_ATTEMPTS) throw err;
      }
    }
    return (await this.#store.ofApp(app.id))!;
  }
}
