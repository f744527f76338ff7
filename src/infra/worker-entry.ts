import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * The URL of a worker thread's module beside `base` (the caller's `import.meta.url`): `NAME.js` in
 * the compiled `dist/`, `NAME.ts` when the sources run under tsx (vitest, `npm run dev`).
 */
export function workerModule(name: string, base: string): URL {
  return new URL(`./${name}.${base.endsWith('.ts') ? 'ts' : 'js'}`, base);
}

/**
 * What `new Worker` takes to run `script`: a `.js` file as it is; a `.ts` file through a small
 * evaluated bootstrap that registers tsx in the worker first (tsx is a dev dependency; `dist/`
 * has plain `.js` workers).
 */
export function workerEntry(script: URL): { readonly filename: string | URL; readonly eval: boolean } {
  if (!script.pathname.endsWith('.ts')) return { filename: script, eval: false };
  const api = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  return { filename: `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(script.href)}); });`, eval: true };
}
