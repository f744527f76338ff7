import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

const ENGINE = path.join(PROJECT_ROOT, 'src', 'engine');
/** The engine has no I/O of its own: these may not be imported from src/engine (type-only port imports aside). */
const FORBIDDEN = [/^node:/, /^(fs|path|http|https|net|crypto|child_process|os|events|stream)$/, /^fastify/, /^@fastify\//, /^kysely/, /^pg$/, /^better-sqlite3/, /^ioredis/, /^bullmq/, /\/store\//, /\/http\//, /\/runs\//, /\/infra\//];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Value imports (not `import type`) with their specifiers. */
export function valueImports(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/^\s*(import|export)\s+(type\s+)?[^'";]*?from\s+['"]([^'"]+)['"]/gm)) if (!m[2]) out.push(m[3]!);
  for (const m of source.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) out.push(m[1]!);
  for (const m of source.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]!);
  return out;
}

describe('engine purity', () => {
  it('src/engine imports no I/O module (node:*, fastify, kysely, pg, sqlite, ioredis, store, http, runs, infra)', () => {
    const offenders: string[] = [];
    for (const f of files(ENGINE)) {
      for (const spec of valueImports(readFileSync(f, 'utf8'))) {
        if (FORBIDDEN.some((re) => re.test(spec))) offenders.push(`${path.relative(PROJECT_ROOT, f)} imports ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the scanner itself catches a forbidden import', () => {
    expect(valueImports("import { readFileSync } from 'node:fs';\nimport type { X } from 'kysely';")).toEqual(['node:fs']);
  });
});
