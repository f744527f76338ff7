import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { BUILTIN_PROVIDERS } from '../../src/llm/provider-table.js';
import { PROTOCOL_FIELDS, settingName } from '../../src/llm/provider-settings.js';
import { TOOL_PROVIDER_SETTINGS } from '../../src/tools/tool-config.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

/**
 * The README's configuration table lists exactly the settings the code reads: every name read in
 * src/config.ts (`int(env, file, 'NAME', …)`, `env.NAME`) and every `process.env.NAME` elsewhere in src.
 */

/** Environment variables src reads for the operating system, not as Dovetail settings. */
const NOT_SETTINGS = new Set(['PATH']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Setting names read by source text `src` (config.ts style and `process.env`). */
export function settingsRead(src: string, isConfig: boolean): Set<string> {
  const out = new Set<string>();
  const patterns = [/process\.env\.([A-Z][A-Z0-9_]*)/g, /process\.env\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\]/g];
  if (isConfig) patterns.push(/\bget\(\s*['"]([A-Z][A-Z0-9_]*)['"]/g, /\bget\s*,\s*['"]([A-Z][A-Z0-9_]*)['"]/g, /\benv\s*,\s*file\s*,\s*['"]([A-Z][A-Z0-9_]*)['"]/g, /\benv\.([A-Z][A-Z0-9_]*)/g, /\benv\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\]/g);
  for (const re of patterns) for (const m of src.matchAll(re)) if (!NOT_SETTINGS.has(m[1]!)) out.add(m[1]!);
  return out;
}

/** Names in the first column of the README's `## Configuration` table (`A` / `B` cells name several). */
export function settingsListed(readme: string): Set<string> {
  const start = readme.indexOf('\n## Configuration');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 5));
  const out = new Set<string>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const first = line.split('|')[1]!;
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) out.add(m[1]!);
  }
  return out;
}

/**
 * The model providers' settings, named from the provider table (src/llm/provider-settings.ts reads
 * them by a computed name): `NAME_API_KEY` / `NAME_BASE_URL` stand for every provider's pair (one
 * README row, with the provider table beside it), as `NAME_FUNCTION_CALLING` every OpenAI-compatible
 * provider's, the protocol-specific extras (Azure, Bedrock) by their own names, and `PROVIDERS_DEFAULT`.
 */
function providerSettings(): string[] {
  const out = new Set(['NAME_API_KEY', 'NAME_BASE_URL', 'NAME_FUNCTION_CALLING', 'PROVIDERS_DEFAULT', 'AZURE_OPENAI_ENDPOINT']);
  for (const p of BUILTIN_PROVIDERS) {
    for (const f of PROTOCOL_FIELDS[p.protocol]) if (f !== 'apiKey' && f !== 'baseUrl' && f !== 'functionCalling') out.add(settingName(p.name, f));
  }
  return [...out];
}

describe('README configuration table', () => {
  it('lists every setting the code reads, and only those', () => {
    const read = new Set<string>();
    for (const f of sources(path.join(PROJECT_ROOT, 'src'))) {
      for (const n of settingsRead(readFileSync(f, 'utf8'), /(^|-)config\.ts$/.test(path.basename(f)))) read.add(n);
    }
    for (const n of providerSettings()) read.add(n);
    for (const n of Object.values(TOOL_PROVIDER_SETTINGS).flat()) read.add(n);
    const listed = settingsListed(readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8'));
    const missing = [...read].filter((n) => !listed.has(n)).sort();
    const stale = [...listed].filter((n) => !read.has(n)).sort();
    expect(read.size).toBeGreaterThan(40);
    expect({ 'read by the code but missing from the README table': missing, 'in the README table but read nowhere': stale }).toEqual({
      'read by the code but missing from the README table': [],
      'in the README table but read nowhere': [],
    });
  });

  it('the collectors find names in each form they look for (so the check can fail)', () => {
    expect(settingsRead("int(env, file, 'A_B', 1); env.C; env['D']; process.env.E; process.env.PATH", true)).toEqual(new Set(['A_B', 'C', 'D', 'E']));
    expect(settingsRead("env.C; process.env['F']", false)).toEqual(new Set(['F']));
    expect(settingsListed('x\n## Configuration\n\n| env | d |\n|---|---|\n| `X` / `Y_Z` | 1 |\n\n## CLI\n| `NOT` | 2 |')).toEqual(new Set(['X', 'Y_Z']));
  });
});
