#!/usr/bin/env node
// Bundles the web app pages (web/: /chat, /chatbot, /completion, /workflow and /embed.min.js) and the
// console (web/console/: /console) into
// dist/web-app/ with esbuild: one minified script per page, the shared stylesheet, and
// manifest.json (each file's content hash, for cache-busting URLs, and its gzipped size). Run by
// `npm run build` and by `prepare` (scripts/prepare.mjs) where the dev dependencies are installed;
// a production install copies dist/ built elsewhere (docs/deployment.md). Fails when a page's
// script is over the budget (WEB_PAGE_JS_BUDGET below).
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'dist', 'web-app');
/** The budget: JavaScript per page at most 150 KB gzipped. */
const WEB_PAGE_JS_BUDGET = 150 * 1024;

const ENTRIES = {
  'chat.js': 'web/chat/main.tsx',
  'completion.js': 'web/completion/main.tsx',
  'workflow.js': 'web/workflow/main.tsx',
  'embed.min.js': 'web/embed/embed.ts',
  'app.css': 'web/shared/app.css',
  'console.js': 'web/console/main.tsx',
  'console.css': 'web/console/console.css',
};

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const manifest = {};
for (const [name, entry] of Object.entries(ENTRIES)) {
  const result = await build({
    entryPoints: [path.join(ROOT, entry)],
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['chrome100', 'firefox100', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    write: false,
    logLevel: 'warning',
    charset: 'utf8',
  });
  const text = result.outputFiles[0].contents;
  writeFileSync(path.join(OUT, name), text);
  const gzip = gzipSync(text, { level: 9 }).length;
  manifest[name] = { hash: createHash('sha256').update(text).digest('hex').slice(0, 12), bytes: text.length, gzip };
  if (name.endsWith('.js') && gzip > WEB_PAGE_JS_BUDGET) {
    process.stderr.write(`build-web: ${name} is ${gzip} bytes gzipped, over the ${WEB_PAGE_JS_BUDGET}-byte budget\n`);
    process.exit(1);
  }
}
writeFileSync(path.join(OUT, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
const sizes = Object.entries(manifest).map(([n, m]) => `${n} ${(m.gzip / 1024).toFixed(1)} KB gz`).join(', ');
process.stdout.write(`build-web: dist/web-app/ (${sizes})\n`);
