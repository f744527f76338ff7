#!/usr/bin/env node
// Runs the compiled CLI (dist/, built by `npm install` through the `prepare` script).
// Development runs the TypeScript sources instead: `npm run dev`, `npm run dovetail -- …`.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('error: dist/ is missing; build it with `npm run build` (npm install and npm ci run it).\n');
  process.exit(1);
}
// In a checkout, say so when a source file changed after the last build: the old code would run.
const stamp = new URL('../dist/.tsbuildinfo', import.meta.url);
if (existsSync(new URL('../src', import.meta.url)) && existsSync(stamp)) {
  const built = statSync(stamp).mtimeMs;
  const src = `${root}src`;
  const stale = readdirSync(src, { recursive: true }).some((f) => String(f).endsWith('.ts') && statSync(`${src}/${f}`).mtimeMs > built);
  if (stale) process.stderr.write('warning: src/ changed after dist/ was built; run `npm run build` (or `npm run dovetail -- …` for the sources).\n');
}
const { main } = await import(entry.href);
await main(process.argv);
