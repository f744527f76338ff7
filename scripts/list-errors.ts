/** Prints the rows of docs/errors.md's table from the error registry: `npx tsx scripts/list-errors.ts`. */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { declaredErrorCodes } from '../src/infra/errors.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(path.join(dir, e.name)) : e.name === 'errors.ts' ? [path.join(dir, e.name)] : [],
  );
}
const where = new Map<string, string>();
for (const k of declaredErrorCodes().keys()) where.set(k, 'src/infra/errors.ts');
for (const f of walk(path.join(root, 'src'))) {
  await import(pathToFileURL(f).href);
  for (const k of declaredErrorCodes().keys()) if (!where.has(k)) where.set(k, path.relative(root, f));
}
for (const [code, status] of [...declaredErrorCodes()].sort()) process.stdout.write(`| \`${code}\` | ${status} | ${where.get(code)} |\n`);
