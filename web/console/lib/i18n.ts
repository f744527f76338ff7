import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import * as core from '../i18n/core.js';
import * as monitoring from '../i18n/monitoring.js';
import * as annotations from '../i18n/annotations.js';
import * as knowledge from '../i18n/knowledge.js';
import * as logs from '../i18n/logs.js';
import * as members from '../i18n/members.js';
import * as site from '../i18n/site.js';

/**
 * The console's words: each feature's `web/console/i18n/<feature>.ts` exports
 * `messages = { en, 'zh-Hans', ja }`; they are merged here (add one import line to FEATURE_MESSAGES).
 * A key missing in a language falls back to English, then to the key itself.
 */
export type ConsoleLang = 'en' | 'zh-Hans' | 'ja';
export const LANGS: readonly { id: ConsoleLang; label: string }[] = [
  { id: 'en', label: 'English' },
  { id: 'zh-Hans', label: '简体中文' },
  { id: 'ja', label: '日本語' },
];

type Messages = Record<ConsoleLang, Record<string, string>>;
const FEATURE_MESSAGES: readonly Messages[] = [core.messages, monitoring.messages, logs.messages, annotations.messages, knowledge.messages, members.messages, site.messages];

const merged: Messages = { en: {}, 'zh-Hans': {}, ja: {} };
for (const m of FEATURE_MESSAGES) for (const lang of Object.keys(merged) as ConsoleLang[]) Object.assign(merged[lang], m[lang]);

export type T = (key: string, vars?: Record<string, string | number>) => string;

export function translator(lang: ConsoleLang): T {
  return (key, vars) => {
    let s = merged[lang][key] ?? merged.en[key] ?? key;
    if (vars) for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v));
    return s;
  };
}

const STORAGE_KEY = 'dovetail:console-lang';

function supported(tag: string | null | undefined): ConsoleLang | null {
  if (!tag) return null;
  const t = tag.toLowerCase();
  if (t === 'zh' || t.startsWith('zh-hans') || t === 'zh-cn' || t === 'zh-sg') return 'zh-Hans';
  if (t.startsWith('ja')) return 'ja';
  if (t.startsWith('en')) return 'en';
  return null;
}

/** The person's choice (kept in this browser), else the browser's first supported language, else English. */
export function initialLang(): ConsoleLang {
  try {
    const saved = supported(localStorage.getItem(STORAGE_KEY));
    if (saved) return saved;
  } catch {
    // storage blocked
  }
  for (const tag of navigator.languages ?? [navigator.language]) {
    const l = supported(tag);
    if (l) return l;
  }
  return 'en';
}

export function saveLang(lang: ConsoleLang): void {
  try {
    localStorage.setItem(STORAGE_KEY, lang);
  } catch {
    // storage blocked: for this page only
  }
  document.documentElement.lang = lang;
}

export const LangContext = createContext<{ lang: ConsoleLang; setLang: (l: ConsoleLang) => void }>({ lang: 'en', setLang: () => undefined });

/** `t('key', {vars})` in the console's current language. */
export function useT(): T {
  const { lang } = useContext(LangContext);
  return translator(lang);
}

/** Dates and numbers as the current language writes them. */
export function useFormat() {
  const { lang } = useContext(LangContext);
  return {
    dateTime: (seconds: number) => new Date(seconds * 1000).toLocaleString(lang),
    date: (seconds: number) => new Date(seconds * 1000).toLocaleDateString(lang),
    number: (n: number, digits?: number) => n.toLocaleString(lang, digits === undefined ? undefined : { maximumFractionDigits: digits }),
  };
}
