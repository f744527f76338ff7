import { WebApi } from '../lib/api.js';
import { chooseLang, translator, type Lang, type Translate } from '../lib/i18n.js';
import type { AppParameters, SiteInfo } from '../lib/types.js';
import { readUrlValues, type UrlValues } from '../lib/url-params.js';

/** What every page starts from: its app code (the path's last part), the URL's values, the API, the site and its parameters. */
export interface Boot {
  code: string;
  api: WebApi;
  url: UrlValues;
  site: SiteInfo;
  params: AppParameters;
  lang: Lang;
  t: Translate;
}

export function appCodeFromPath(pathname: string): string {
  const parts = pathname.split('/').filter(Boolean);
  return decodeURIComponent(parts[parts.length - 1] ?? '');
}

export async function boot(): Promise<Boot> {
  const code = appCodeFromPath(location.pathname);
  const url = await readUrlValues(location.search);
  const api = new WebApi(code, { userId: url.system.user_id });
  const [site, params] = await Promise.all([api.site(), api.parameters()]);
  const lang = chooseLang(navigator.languages ?? [navigator.language], site.site.default_language);
  document.documentElement.lang = lang;
  document.title = site.site.title || document.title;
  return { code, api, url, site, params, lang, t: translator(lang) };
}

/** The words for a page that failed before it knew its site (the browser's language). */
export function fallbackTranslator(): Translate {
  return translator(chooseLang(navigator.languages ?? [navigator.language], null));
}
