import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Text of a file under `examples/`. */
export function example(name: string): string {
  return readFileSync(path.join(ROOT, 'examples', name), 'utf8');
}

/** Absolute path of the project root (for CLI tests). */
export const PROJECT_ROOT = ROOT;
