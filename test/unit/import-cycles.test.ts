import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { ImportGraph, tsFiles } from '../helpers/import-graph.js';

const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function cyclesIn(src: string): string[] {
  return new ImportGraph()
    .cycles(tsFiles(src), true)
    .map((c) => c.map((f) => path.relative(src, f).split(path.sep).join('/')).join(' ↔ '));
}

describe('import cycles', () => {
  it('src/ has none, counting type-only imports (a module and what it imports can be read one after the other)', () => {
    expect(cyclesIn(path.join(PROJECT_ROOT, 'src'))).toEqual([]);
  });

  it('finds a value cycle through three files, a type-only cycle and a self-import, and ignores a shared leaf', () => {
    const src = mkdtempSync(path.join(tmpdir(), 'dovetail-cycles-'));
    made.push(src);
    const files: Record<string, string> = {
      'a.ts': "import { b } from './b.js';\nimport { leaf } from './leaf.js';\nexport const a = [b, leaf];\n",
      'b.ts': "import { c } from './dir/c.js';\nexport const b = c;\n",
      'dir/c.ts': "import { a } from '../a.js';\nimport { leaf } from '../leaf.js';\nexport const c = [a, leaf];\n",
      'leaf.ts': 'export const leaf = 1;\n',
      'service.ts': "import { type Job } from './jobs.js';\nexport interface Service { run(j: Job): void }\n",
      'jobs.ts': "import type { Service } from './service.js';\nexport interface Job { s: Service }\n",
      'self.ts': "export * from './self.js';\n",
    };
    for (const [f, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
      writeFileSync(path.join(src, f), text);
    }
    expect(cyclesIn(src).sort()).toEqual(['a.ts ↔ b.ts ↔ dir/c.ts', 'jobs.ts ↔ service.ts', 'self.ts']);
    // value imports only: the type-only cycle is erased at compile time
    expect(new ImportGraph().cycles(tsFiles(src)).length).toBe(2);
  });
});
