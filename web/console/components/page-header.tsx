import type { ComponentChildren } from 'preact';

/** A page's title (the page's one `h1`), an optional line under it, and its actions on the right. */
export function PageHeader({ title, subtitle, actions, back }: { title: string; subtitle?: ComponentChildren; actions?: ComponentChildren; back?: { href: string; label: string } }) {
  return (
    <header class="page-header">
      <div class="page-header-text">
        {back && (
          <a class="back-link" href={back.href}>
            ← {back.label}
          </a>
        )}
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {subtitle && <p class="page-subtitle">{subtitle}</p>}
      </div>
      {actions && <div class="page-actions">{actions}</div>}
    </header>
  );
}
