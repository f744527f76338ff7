import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { enginePurityViolations } from '../helpers/engine-purity.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

/** A throwaway `src` tree: file path (relative to src) → source. */
function tree(files: Record<string, string>): string {
  const src = path.join(mkdtempSync(path.join(tmpdir(), 'dovetail-purity-')), 'src');
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
    writeFileSync(path.join(src, f), text);
  }
  made.push(path.dirname(src));
  return src;
}
const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

describe('engine purity (an allowlist, checked transitively)', () => {
  it('everything src/engine reaches is src/engine or src/lib, with type-only port imports through engine/ports.ts and no banned global', () => {
    expect(enginePurityViolations(path.join(PROJECT_ROOT, 'src'))).toEqual([]);
  });

  it('fails for I/O reached through src/lib, a package, node:*, a value import from outside and a type import outside ports.ts', () => {
    const src = tree({
      'engine/a.ts': "import { b } from './nodes/b.js';\nexport const a = b;\n",
      'engine/nodes/b.ts': "import { c } from '../../lib/c.js';\nexport const b = c;\n",
      'lib/c.ts': "import { d } from './d.js';\nexport const c = d;\n",
      'lib/d.ts': "import { readFile } from 'fs/promises';\nexport const d = readFile;\n",
      'engine/d.ts': "import { request } from 'undici';\nimport os from 'node:os';\nexport const d = [request, os];\n",
      'engine/e.ts': "import { store } from '../store/db.js';\nimport type { Config } from '../config.js';\nexport const e: Config = store;\n",
      'engine/ports.ts': "export type { Config } from '../config.js';\n",
      'engine/f.ts': "const f = require('node:fs');\nexport const g = () => import('undici');\nexport { f };\n",
      'store/db.ts': "import 'pg';\nexport const store = 1;\n",
      'config.ts': 'export type Config = number;\n',
    });
    // lib/d.ts is reached from engine/a.ts through engine/nodes/b.ts and lib/c.ts; the shortest chain is named
    expect(enginePurityViolations(src)).toEqual([
      "engine/d.ts:1 imports undici (not on the engine's allowlist)",
      "engine/d.ts:2 imports node:os (not on the engine's allowlist)",
      'engine/e.ts:1 imports ../store/db.js (outside src/engine and src/lib)',
      'engine/e.ts:2 imports ../config.js (type-only imports from outside come through engine/ports.ts)',
      "engine/f.ts:1 imports node:fs (not on the engine's allowlist)",
      'engine/f.ts:1 uses require',
      "engine/f.ts:2 imports undici (not on the engine's allowlist)",
      "engine/nodes/b.ts → lib/c.ts → lib/d.ts:1 imports fs/promises (not on the engine's allowlist)",
    ]);
  });

  it('fails for banned globals (timers, fetch, process, Date.now) but not for names declared in the file or property names', () => {
    const src = tree({
      'engine/a.ts': [
        'export async function run(ports: { sleep(ms: number): Promise<void>; fetch: unknown }) {',
        '  const started = Date.now();',
        '  setTimeout(() => undefined, 1);',
        '  await fetch(`x${process.env.HOME}`);',
        '  await ports.sleep(1);',
        '  return [started, ports.fetch, { setTimeout: 1 }];',
        '}',
      ].join('\n'),
    });
    expect(enginePurityViolations(src)).toEqual(['engine/a.ts:2 uses Date.now', 'engine/a.ts:3 uses setTimeout', 'engine/a.ts:4 uses fetch', 'engine/a.ts:4 uses process']);
  });
});
