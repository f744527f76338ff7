import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { folderGraph, ImportGraph, layerFindings, tsFiles } from '../helpers/import-graph.js';
import { ALLOWED_TWO_WAY, ALLOWED_UPWARD, LAYERS, srcUnit } from '../helpers/layers.js';

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

function write(root: string, files: Record<string, string>): void {
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), text);
  }
}

describe('folder layers (docs/architecture.md, "Layers")', () => {
  const src = path.join(PROJECT_ROOT, 'src');
  const graph = folderGraph(src, srcUnit);
  const found = layerFindings(graph, LAYERS);
  /** `a → b` with the imports that make it, for the failure message. */
  const shown = (edge: string): string => {
    const [a, b] = edge.split(/ → | ↔ /) as [string, string];
    const samples = [...(graph.get(a)?.get(b) ?? []), ...(edge.includes('↔') ? (graph.get(b)?.get(a) ?? []) : [])];
    return `${edge}: ${samples
      .slice(0, 4)
      .map((s) => `${s.from}:${s.line}${s.typeOnly ? ' (type)' : ''} imports ${s.to}`)
      .join('; ')}`;
  };

  it('every top-level part of src/ is placed in a layer', () => {
    expect(found.unplaced).toEqual([]);
  });

  it('no new upward import: a part imports only its own layer and the layers below (or an entry of ALLOWED_UPWARD)', () => {
    expect(found.upward.filter((e) => !(e in ALLOWED_UPWARD)).map(shown)).toEqual([]);
  });

  it('no new pair of parts importing each other (or an entry of ALLOWED_TWO_WAY)', () => {
    expect(found.twoWay.filter((e) => !(e in ALLOWED_TWO_WAY)).map(shown)).toEqual([]);
  });

  it('the allowlists only shrink: an entry that no longer happens must be removed', () => {
    expect(Object.keys(ALLOWED_UPWARD).filter((e) => !found.upward.includes(e))).toEqual([]);
    expect(Object.keys(ALLOWED_TWO_WAY).filter((e) => !found.twoWay.includes(e))).toEqual([]);
  });

  it('finds an upward import, a pair importing each other and an unplaced part, type-only imports included', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'dovetail-layers-'));
    made.push(root);
    write(root, {
      'low/a.ts': "import type { H } from '../high/h.js';\nexport const a = 1;\nexport type A = H;\n",
      'high/h.ts': "import { a } from '../low/a.js';\nexport type H = typeof a;\n",
      'high/g.ts': "import { x } from '../stray/x.js';\nexport const g = x;\n",
      'stray/x.ts': 'export const x = 1;\n',
      'low/b.ts': "import { a } from './a.js';\nexport const b = a;\n",
    });
    const g = folderGraph(root, (rel) => rel.split('/')[0]!);
    expect(layerFindings(g, [['low'], ['high']])).toEqual({
      upward: ['low → high'],
      twoWay: ['high ↔ low'],
      unplaced: ['stray'],
    });
    expect(g.get('low')?.get('high')).toEqual([{ from: 'low/a.ts', line: 1, to: 'high/h.ts', typeOnly: true }]);
    // one layer, one way: allowed
    expect(layerFindings(g, [['low', 'high', 'stray']]).upward).toEqual([]);
  });
});
