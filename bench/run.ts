/**
 * `npm run bench`: runs every `bench/*.bench.ts` (or those whose name contains argv[2]) in turn.
 * Each prints its figure beside a baseline measured in the same run.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2];
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts') && (!filter || f.includes(filter)))
  .sort();
for (const f of files) {
  process.stdout.write(`\n### ${f}\n`);
  const mod = (await import(pathToFileURL(path.join(dir, f)).href)) as { run: () => Promise<void> };
  await mod.run();
}
process.exit(0);
