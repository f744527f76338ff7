import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { escapeHtml } from './markdown.js';

/**
 * The web app pages' bundles (`dist/web-app/`, built by scripts/build-web.mjs at `npm run build` /
 * `prepare`), read once from disk and kept in memory. The same path serves the sources run by tsx
 * (src/web/) and the compiled server (dist/web/): both sit two levels below the package root.
 */
const DIR = new URL('../../dist/web-app/', import.meta.url);

export type WebPage = 'chat' | 'chatbot' | 'completion' | 'workflow';
const SCRIPT: Record<WebPage, string> = { chat: 'chat.js', chatbot: 'chat.js', completion: 'completion.js', workflow: 'workflow.js' };

export interface WebAsset {
  readonly body: Buffer;
  /** The same bytes gzipped once at load (sent to clients that accept gzip). */
  readonly gzip: Buffer;
  readonly hash: string;
  readonly type: string;
}

interface ManifestEntry {
  hash: string;
}

let cache: Map<string, WebAsset> | null = null;

/** The built files by name (`chat.js`, `app.css`, `embed.min.js`, …); empty when the bundle was not built. */
export function webAssets(): ReadonlyMap<string, WebAsset> {
  if (cache) return cache;
  const out = new Map<string, WebAsset>();
  const manifestUrl = new URL('manifest.json', DIR);
  if (existsSync(manifestUrl)) {
    const manifest = JSON.parse(readFileSync(manifestUrl, 'utf8')) as Record<string, ManifestEntry>;
    for (const [name, entry] of Object.entries(manifest)) {
      const type = name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8';
      const body = readFileSync(new URL(name, DIR));
      out.set(name, { body, gzip: gzipSync(body, { level: 9 }), hash: entry.hash, type });
    }
  }
  cache = out;
  return out;
}

/** The page every web app URL serves: a shell that loads its script, which reads the site through `/api`. */
export function webAppShell(page: WebPage): string | null {
  const assets = webAssets();
  const script = assets.get(SCRIPT[page]);
  const css = assets.get('app.css');
  if (!script || !css) return null;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(page === 'chatbot' ? 'Chat' : page[0]!.toUpperCase() + page.slice(1))}</title>
<link rel="stylesheet" href="/web-app/app.css?v=${css.hash}">
<script defer src="/web-app/${SCRIPT[page]}?v=${script.hash}"></script>
</head>
<body data-page="${page}">
<div id="app"><div class="loading" role="status">Loading…</div></div>
<noscript><p>This page needs JavaScript.</p></noscript>
</body>
</html>
`;
}
