import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useT } from '../lib/i18n.js';

/** A row of filters (a search box, a time range, selects); wraps on a narrow screen. */
export function FiltersBar({ children, label }: { children: ComponentChildren; label: string }) {
  return (
    <div class="filters-bar" role="search" aria-label={label}>
      {children}
    </div>
  );
}

/** A search box that reports on Enter or the button (not on every key). */
export function SearchBox({ value, onSearch, label }: { value: string; onSearch: (v: string) => void; label: string }) {
  const t = useT();
  const [text, setText] = useState(value);
  return (
    <form
      class="search-box"
      onSubmit={(e) => {
        e.preventDefault();
        onSearch(text.trim());
      }}
    >
      <label class="sr-only" for="console-search">
        {label}
      </label>
      <input id="console-search" type="search" value={text} placeholder={label} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      <button type="submit" class="btn small">
        {t('console.search')}
      </button>
    </form>
  );
}

export interface TimeRange {
  /** `YYYY-MM-DD`, inclusive; '' = open. */
  from: string;
  to: string;
}

/** A from/to date pair (native date inputs: keyboard and screen readers know them). */
export function TimeRangePicker({ value, onChange }: { value: TimeRange; onChange: (r: TimeRange) => void }) {
  const t = useT();
  return (
    <fieldset class="time-range">
      <legend class="sr-only">
        {t('console.from')} / {t('console.to')}
      </legend>
      <label>
        {t('console.from')} <input type="date" value={value.from} max={value.to || undefined} onChange={(e) => onChange({ ...value, from: (e.target as HTMLInputElement).value })} />
      </label>
      <label>
        {t('console.to')} <input type="date" value={value.to} min={value.from || undefined} onChange={(e) => onChange({ ...value, to: (e.target as HTMLInputElement).value })} />
      </label>
    </fieldset>
  );
}
