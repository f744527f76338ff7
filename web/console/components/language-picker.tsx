import { useContext } from 'preact/hooks';
import { LangContext, LANGS, useT, type ConsoleLang } from '../lib/i18n.js';

/** The language select (English, 简体中文, 日本語), kept in this browser. */
export function LanguagePicker() {
  const t = useT();
  const { lang, setLang } = useContext(LangContext);
  return (
    <label class="lang-picker">
      <span class="sr-only">{t('console.language')}</span>
      <select value={lang} onChange={(e) => setLang((e.target as HTMLSelectElement).value as ConsoleLang)} aria-label={t('console.language')}>
        {LANGS.map((l) => (
          <option value={l.id} lang={l.id}>
            {l.label}
          </option>
        ))}
      </select>
    </label>
  );
}
