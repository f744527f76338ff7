import type { ComponentChildren } from 'preact';
import { useT } from '../lib/i18n.js';

export interface Column<T> {
  /** The column's heading (already translated). */
  header: string;
  cell: (row: T) => ComponentChildren;
  /** A narrow column of numbers, right-aligned. */
  numeric?: boolean;
  class?: string;
}

/**
 * A table of rows with a caption for screen readers; on a narrow screen each row becomes a card
 * (the headings repeated as labels: `data-label`). `rowKey` keeps rows stable across reloads.
 */
export function DataTable<T>({ caption, columns, rows, rowKey, empty }: { caption: string; columns: readonly Column<T>[]; rows: readonly T[]; rowKey: (row: T) => string; empty?: ComponentChildren }) {
  if (rows.length === 0 && empty) return <>{empty}</>;
  return (
    <div class="table-wrap">
      <table class="data-table">
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={[c.numeric ? 'num' : '', c.class ?? ''].join(' ').trim() || undefined}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={rowKey(r)}>
              {columns.map((c) => (
                <td data-label={c.header} class={[c.numeric ? 'num' : '', c.class ?? ''].join(' ').trim() || undefined}>
                  {c.cell(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Previous / next with "page X of Y" between (a nav landmark named for what it pages). */
export function Pagination({ page, limit, total, onPage, label }: { page: number; limit: number; total: number; onPage: (page: number) => void; label: string }) {
  const t = useT();
  const pages = Math.max(1, Math.ceil(total / limit));
  if (total <= limit && page === 1) return null;
  return (
    <nav class="pagination" aria-label={label}>
      <button type="button" class="btn small" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        {t('console.previous')}
      </button>
      <span aria-live="polite">{t('console.pageOf', { page, pages })}</span>
      <button type="button" class="btn small" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        {t('console.next')}
      </button>
    </nav>
  );
}
