import { randomInt } from 'node:crypto';
import type { AppMode, DslDocument } from './dsl.js';

/**
 * The web-app settings Dify keeps per app (its `sites` row), as `GET /v1/site` and the web app's
 * `GET /api/site` answer them.
 */
export interface SiteSettings {
  readonly title: string;
  readonly chat_color_theme: string;
  readonly chat_color_theme_inverted: boolean;
  readonly icon_type: string;
  readonly icon: string;
  readonly icon_background: string;
  readonly icon_url: string | null;
  readonly description: string;
  readonly copyright: string;
  readonly privacy_policy: string;
  readonly input_placeholder: string | null;
  readonly custom_disclaimer: string;
  readonly default_language: string;
  readonly prompt_public: boolean;
  readonly show_workflow_steps: boolean;
  readonly use_icon_as_answer_icon: boolean;
}

/** The languages Dify's console offers for a site's `default_language` (its `constants/languages.py`). */
export const SITE_LANGUAGES = [
  'en-US', 'zh-Hans', 'zh-Hant', 'pt-BR', 'es-ES', 'fr-FR', 'de-DE', 'ja-JP', 'ko-KR', 'ru-RU', 'it-IT',
  'uk-UA', 'vi-VN', 'pl-PL', 'ro-RO', 'tr-TR', 'fa-IR', 'sl-SI', 'th-TH', 'id-ID', 'hi-IN', 'ar-TN',
] as const;

/** Settings whose value is a string (the rest are booleans, and `icon_url` / `input_placeholder` may be null). */
export const SITE_STRING_SETTINGS = ['title', 'chat_color_theme', 'icon_type', 'icon', 'icon_background', 'description', 'copyright', 'privacy_policy', 'custom_disclaimer', 'default_language'] as const;
export const SITE_NULLABLE_SETTINGS = ['icon_url', 'input_placeholder'] as const;
export const SITE_BOOLEAN_SETTINGS = ['chat_color_theme_inverted', 'prompt_public', 'show_workflow_steps', 'use_icon_as_answer_icon'] as const;

/** The icon kinds Dify's sites know (`icon_type`). */
export const SITE_ICON_TYPES = ['emoji', 'image', 'link'] as const;

const COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;
const SETTING_NAMES: ReadonlySet<string> = new Set([...SITE_STRING_SETTINGS, ...SITE_NULLABLE_SETTINGS, ...SITE_BOOLEAN_SETTINGS]);

/**
 * Checks a change of settings (from `dovetail app site` or the console) before it is stored: each
 * setting of its type, text at most `maxChars` characters, a non-empty title, a known language and
 * icon type, colours as `#RGB` / `#RRGGBB` / `#RRGGBBAA` (the chat colour may be empty: the default),
 * the privacy policy an http(s) link or empty. The message of the first fault names the setting;
 * undefined when all is well.
 */
export function siteSettingsFault(change: Readonly<Record<string, unknown>>, maxChars: number): string | undefined {
  for (const [k, v] of Object.entries(change)) {
    if (v === undefined) continue;
    if (!SETTING_NAMES.has(k)) return `${k} is not a web app setting`;
    if ((SITE_BOOLEAN_SETTINGS as readonly string[]).includes(k)) {
      if (typeof v !== 'boolean') return `${k} must be true or false`;
      continue;
    }
    if (v === null && (SITE_NULLABLE_SETTINGS as readonly string[]).includes(k)) continue;
    if (typeof v !== 'string') return `${k} must be a string`;
    if (v.length > maxChars) return `${k} must be at most ${maxChars} characters (SITE_SETTING_MAX_CHARS)`;
  }
  const c = change as Partial<Record<keyof SiteSettings, string>>;
  if (c.title !== undefined && c.title.trim() === '') return 'title must not be empty';
  if (c.default_language !== undefined && !(SITE_LANGUAGES as readonly string[]).includes(c.default_language)) {
    return `default_language must be one of ${SITE_LANGUAGES.join(', ')}, got "${c.default_language.slice(0, 64)}"`;
  }
  if (c.icon_type !== undefined && !(SITE_ICON_TYPES as readonly string[]).includes(c.icon_type)) return `icon_type must be one of ${SITE_ICON_TYPES.join(', ')}`;
  if (c.icon_background !== undefined && !COLOR.test(c.icon_background)) return 'icon_background must be a colour such as #FFEAD5';
  if (c.chat_color_theme !== undefined && c.chat_color_theme !== '' && !COLOR.test(c.chat_color_theme)) return 'chat_color_theme must be a colour such as #1C64F2, or empty';
  if (c.privacy_policy !== undefined && c.privacy_policy !== '' && !/^https?:\/\/\S+$/i.test(c.privacy_policy)) return 'privacy_policy must be an http:// or https:// link, or empty';
  return undefined;
}

/** Keys of the DSL's `app` block that Dify's export writes and that are also site settings. */
const DIFY_APP_KEYS = ['icon_type', 'icon', 'icon_background', 'description', 'use_icon_as_answer_icon'] as const;

const CODE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const SITE_CODE_LENGTH = 16;

/** A new site code: 16 letters and digits, as Dify's `Site.generate_code(16)`. */
export function newSiteCode(): string {
  let code = '';
  for (let i = 0; i < SITE_CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** Whether `code` has the shape of a site code (checked before any lookup). */
export function isSiteCode(code: string): boolean {
  return code.length === SITE_CODE_LENGTH && /^[A-Za-z0-9]+$/.test(code);
}

/**
 * A site's settings from an app's DSL: Dify's defaults, the `app` block's keys Dify exports
 * (`icon_type`, `icon`, `icon_background`, `description`, `use_icon_as_answer_icon`), the title from
 * the app's name, then `app.site` (Dovetail's export of the other settings) where its values have
 * the setting's type. Anything else is left out.
 */
export function siteSettingsFromDsl(doc: Pick<DslDocument, 'app'>): SiteSettings {
  const a = doc.app as Record<string, unknown>;
  const base: Record<string, unknown> = {
    title: typeof a.name === 'string' ? a.name : '',
    chat_color_theme: '',
    chat_color_theme_inverted: false,
    icon_type: 'emoji',
    icon: '🤖',
    icon_background: '#FFEAD5',
    icon_url: null,
    description: '',
    copyright: '',
    privacy_policy: '',
    input_placeholder: null,
    custom_disclaimer: '',
    default_language: 'en-US',
    prompt_public: false,
    show_workflow_steps: true,
    use_icon_as_answer_icon: false,
  };
  for (const k of DIFY_APP_KEYS) if (a[k] !== undefined && a[k] !== null) base[k] = a[k];
  const site = a.site !== null && typeof a.site === 'object' && !Array.isArray(a.site) ? (a.site as Record<string, unknown>) : {};
  Object.assign(base, site);
  return cleanSettings(base);
}

/** `raw` with each setting of the right type kept and the others at their default (an unknown language: en-US). */
function cleanSettings(raw: Record<string, unknown>): SiteSettings {
  const out: Record<string, unknown> = {};
  for (const k of SITE_STRING_SETTINGS) out[k] = typeof raw[k] === 'string' ? raw[k] : k === 'icon_type' ? 'emoji' : k === 'default_language' ? 'en-US' : '';
  if (!(SITE_LANGUAGES as readonly string[]).includes(out.default_language as string)) out.default_language = 'en-US';
  for (const k of SITE_NULLABLE_SETTINGS) out[k] = typeof raw[k] === 'string' ? raw[k] : null;
  for (const k of SITE_BOOLEAN_SETTINGS) out[k] = typeof raw[k] === 'boolean' ? raw[k] : k === 'show_workflow_steps';
  return out as unknown as SiteSettings;
}

/** Reads stored settings (JSON text), tolerating a row written by an older version. */
export function parseSiteSettings(text: string): SiteSettings {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    raw = {};
  }
  return cleanSettings(raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : {});
}

/**
 * The DSL `app` block of an export with the site's settings: Dify's keys at their place, the
 * others under `app.site` (Dify's importer ignores it; Dovetail's reads it back).
 */
export function appBlockWithSite(app: DslDocument['app'], s: SiteSettings): DslDocument['app'] {
  const { icon_type, icon, icon_background, description, use_icon_as_answer_icon, ...rest } = s;
  return { ...app, icon_type, icon, icon_background, description, use_icon_as_answer_icon, site: rest };
}

/** The page path of an app's web app by its mode, as Dify's share links. */
export function sitePath(mode: AppMode): 'chat' | 'completion' | 'workflow' {
  return mode === 'completion' ? 'completion' : mode === 'workflow' ? 'workflow' : 'chat';
}
