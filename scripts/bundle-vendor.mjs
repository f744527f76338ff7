#!/usr/bin/env node
// After `tsc` (npm run build, prepare): bundles the packages below into one module each,
// dist/vendor/NAME.js, and points dist/'s imports of them at it. Kysely ships as ~260 ES modules and
// TypeBox as ~200; Node 20 loads and links each separately, which cost a one-shot CLI command (`app
// list`) about 0.3 s of CPU for Kysely, and the server's start the same again for TypeBox (its route
// schemas). A bundle is the same version (from node_modules), only in one file. Without esbuild (a
// production install) dist/ is left as built.
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
  process.stdout.write('bundle-vendor: esbuild is not installed; dist/ imports its packages from node_modules\n');
  process.exit(0);
}

/** The packages bundled: the import specifier, the bundle's file name, its licence banner. */
const PACKAGES = [
  { name: 'kysely', file: 'kysely.js', banner: '/*! Kysely (https://kysely.dev), MIT License, Copyright (c) 2022 Sami Koskimäki: node_modules/kysely/LICENSE */' },
  { name: '@sinclair/typebox', file: 'typebox.js', banner: '/*! TypeBox (https://github.com/sinclairzx81/typebox), MIT License, Copyright (c) 2017-2025 Haydn Paterson: node_modules/@sinclair/typebox/license */' },
];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const outputs = new Set();
for (const p of PACKAGES) {
  const out = path.join(dist, 'vendor', p.file);
  outputs.add(out);
  mkdirSync(path.dirname(out), { recursive: true });
  await esbuild.build({ stdin: { contents: `export * from '${p.name}';`, resolveDir: root, loader: 'js' }, bundle: true, format: 'esm', platform: 'node', target: 'node20', outfile: out, logLevel: 'warning', legalComments: 'inline', banner: { js: p.banner } });
  p.out = out;
  p.pattern = new RegExp(`(from\\s+|import\\s*\\(\\s*)'${escape(p.name)}'`, 'g');
  p.rewritten = 0;
}

for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
  const file = path.join(entry.parentPath ?? entry.path, entry.name);
  if (outputs.has(file) || file.startsWith(path.join(dist, 'web-app'))) continue;
  let text = readFileSync(file, 'utf8');
  let changed = false;
  for (const p of PACKAGES) {
    p.pattern.lastIndex = 0;
    if (!p.pattern.test(text)) continue;
    let rel = path.relative(path.dirname(file), p.out).split(path.sep).join('/');
    if (!rel.startsWith('.')) rel = `./${rel}`;
    text = text.replace(p.pattern, `$1'${rel}'`);
    p.rewritten++;
    changed = true;
  }
  if (changed) writeFileSync(file, text);
}
for (const p of PACKAGES) process.stdout.write(`bundle-vendor: dist/vendor/${p.file}, ${p.rewritten} modules point at it\n`);
