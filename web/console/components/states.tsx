import type { ComponentChildren } from 'preact';
import { useT } from '../lib/i18n.js';

/** What a list shows when it has nothing (a sentence, and what to do about it). */
export function EmptyState({ children, action }: { children: ComponentChildren; action?: ComponentChildren }) {
  return (
    <div class="empty-state">
      <p>{children}</p>
      {action}
    </div>
  );
}

/** An error the person should see (role="alert": read out when it appears), with an optional retry. */
export function ErrorBanner({ error, onRetry }: { error: { message: string } | string; onRetry?: () => void }) {
  const t = useT();
  const message = typeof error === 'string' ? error : error.message;
  return (
    <div class="error-banner" role="alert">
      <span>{t('console.error', { message })}</span>
      {onRetry && (
        <button type="button" class="btn small" onClick={onRetry}>
          {t('console.retry')}
        </button>
      )}
    </div>
  );
}

/** The words while something loads (a polite live region). */
export function Loading() {
  const t = useT();
  return (
    <p class="loading-line" role="status">
      {t('console.loading')}
    </p>
  );
}

export type BadgeTone = 'neutral' | 'success' | 'danger' | 'warn' | 'info';

/** A status as a coloured word (the colour is never the only cue: the word is the status). */
export function StatusBadge({ tone = 'neutral', children }: { tone?: BadgeTone; children: ComponentChildren }) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}

/** A tone for the usual run, document and job statuses. */
export function toneOf(status: string): BadgeTone {
  if (['succeeded', 'completed', 'normal', 'enabled', 'active', 'like'].includes(status)) return 'success';
  if (['failed', 'error', 'stopped', 'dislike', 'expired'].includes(status)) return 'danger';
  if (['running', 'indexing', 'parsing', 'splitting', 'waiting', 'queuing'].includes(status)) return 'info';
  if (['paused', 'partial-succeeded', 'disabled', 'archived'].includes(status)) return 'warn';
  return 'neutral';
}
