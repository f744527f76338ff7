import { useEffect, useState } from 'preact/hooks';

/**
 * Path routing under `/console` without hashes: `navigate()` pushes a path, the back button pops
 * one, and a link inside the console (`<a href="/console/…">`) is followed in the page (see
 * `interceptLinks`). Patterns name their parameters as `:name`.
 */
const listeners = new Set<() => void>();

export function navigate(path: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  for (const l of listeners) l();
}

/** The current location (path and query), re-rendering on every change. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const [, tick] = useState(0);
  useEffect(() => {
    const on = () => tick((n) => n + 1);
    listeners.add(on);
    addEventListener('popstate', on);
    return () => {
      listeners.delete(on);
      removeEventListener('popstate', on);
    };
  }, []);
  return { path: location.pathname, search: new URLSearchParams(location.search) };
}

/** The parameters of `pattern` (`/apps/:appId/logs`, relative to `/console`) in `path`; null when it does not match. */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const rel = path.replace(/^\/console/, '').replace(/\/+$/, '') || '/';
  const want = pattern.replace(/\/+$/, '') || '/';
  const a = want.split('/');
  const b = rel.split('/');
  if (a.length !== b.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.startsWith(':')) {
      try {
        params[a[i]!.slice(1)] = decodeURIComponent(b[i]!);
      } catch {
        return null;
      }
    } else if (a[i] !== b[i]) return null;
  }
  return params;
}

/** `/console` + a pattern with its parameters filled in. */
export function consolePath(pattern: string, params: Record<string, string> = {}): string {
  return '/console' + pattern.replace(/:([A-Za-z_]+)/g, (_m, k: string) => encodeURIComponent(params[k] ?? ''));
}

/** Follows same-page console links without reloading (plain clicks only: a new tab still opens one). */
export function interceptLinks(root: HTMLElement): void {
  root.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element).closest?.('a');
    if (!a || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith('/console') || url.pathname.startsWith('/console/api')) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
}
