import { webAssets } from './web-app-assets.js';

/**
 * The console's one page (`/console`, `/console/…`): a shell that loads the console's bundle
 * (web/console/, built into dist/web-app/ with the web app's); its script routes by path and reads
 * everything through `/console/api`. Null when the bundle was not built.
 */
export function consoleShell(): string | null {
  const assets = webAssets();
  const script = assets.get('console.js');
  const css = assets.get('console.css');
  if (!script || !css) return null;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>Dovetail console</title>
<link rel="stylesheet" href="/web-app/console.css?v=${css.hash}">
<script defer src="/web-app/console.js?v=${script.hash}"></script>
</head>
<body>
<div id="app"><div class="loading" role="status">Loading…</div></div>
<noscript><p>The console needs JavaScript.</p></noscript>
</body>
</html>
`;
}
