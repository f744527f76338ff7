#!/usr/bin/env node
// After `tsc` (npm run build, prepare): bundles Kysely into one module, dist/vendor/kysely.js, and
// points dist/'s imports of 'kysely' at it. Kysely ships as ~260 ES modules; Node 20 loads each
// separately, which cost a one-shot CLI command (`app list`) about 0.3 s of CPU. The bundle is the
// same version (from node_modules), only in one file. Without esbuild (a production install) dist/
// is left as built.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const require = createRequire(import.meta.url);
let esbuild;
try {
  esbuild = require('esbuild');
} catch {
  process.stdout.write('bundle-kysely: esbuild is not installed; dist/ imports kysely from node_modules\n');
  process.exit(0);
}
const out = path.join(dist, 'vendor', 'kysely.js');
mkdirSync(path.dirname(out), { recursive: true });
await esbuild.build({ stdin: { contents: "export * from 'kysely';", resolveDir: root, loader: 'js' }, bundle: true, format: 'esm', platform: 'node', target: 'node20', outfile: out, logLevel: 'warning', legalComments: 'inline', banner: { js: '/*! Kysely (https://kysely.dev), MIT License, Copyright (c) 2022 Sami Koskimäki: node_modules/kysely/LICENSE */' } });

const IMPORT = /(from\s+|import\s*\(\s*)'kysely'/g;
let rewritten = 0;
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
  const file = path.join(entry.parentPath ?? entry.path, entry.name);
  if (file === out) continue;
  const text = readFileSync(file, 'utf8');
  if (!IMPORT.test(text)) continue;
  let rel = path.relative(path.dirname(file), out).split(path.sep).join('/');
  if (!rel.startsWith('.')) rel = `./${rel}`;
  writeFileSync(file, text.replace(IMPORT, `$1'${rel}'`));
  rewritten++;
}
process.stdout.write(`bundle-kysely: dist/vendor/kysely.js, ${rewritten} modules point at it\n`);
