#!/usr/bin/env node
// npm's `prepare` script (run by `npm install` and `npm ci` in a checkout): builds dist/ when the
// TypeScript compiler is installed, then the web app pages' bundle (dist/web-app/, scripts/build-web.mjs). A production install (`npm ci --omit=dev`) has no compiler, so it
// skips the build and relies on a dist/ built beforehand (`npm run build`, see docs/deployment.md).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
} catch {
  tsc = undefined;
}
if (tsc === undefined) {
  const dist = existsSync(new URL('../dist/cli.js', import.meta.url));
  process.stdout.write(dist
    ? 'prepare: typescript is not installed (a production install); using the dist/ already built\n'
    : 'prepare: typescript is not installed (a production install) and dist/ is missing: build it with `npm run build` where the dev dependencies are installed, then copy dist/ here (docs/deployment.md)\n');
  process.exit(0);
}
const cwd = new URL('..', import.meta.url);
const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit', cwd });
if (result.status !== 0) process.exit(result.status ?? 1);
const bundle = spawnSync(process.execPath, ['scripts/bundle-vendor.mjs'], { stdio: 'inherit', cwd });
if (bundle.status !== 0) process.exit(bundle.status ?? 1);
const web = spawnSync(process.execPath, ['scripts/build-web.mjs'], { stdio: 'inherit', cwd });
process.exit(web.status ?? 1);
