import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { declaredErrorCodes, defineError } from '../../src/infra/errors.js';

function errorModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return errorModules(p);
    return e.name === 'errors.ts' ? [p] : [];
  });
}

describe('error registry', () => {
  it('docs/errors.md lists exactly the declared codes with their statuses', async () => {
    for (const f of errorModules(path.join(PROJECT_ROOT, 'src'))) await import(pathToFileURL(f).href);
    const declared = [...declaredErrorCodes()].map(([code, status]) => `${code} ${status}`).sort();
    const doc = readFileSync(path.join(PROJECT_ROOT, 'docs', 'errors.md'), 'utf8');
    const documented = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
    expect(documented).toEqual(declared);
  });

  it('refuses a code declared twice, when the second declaration runs (the first stays in force)', async () => {
    await import('../../src/llm/errors.js');
    await import('../../src/runs/errors.js'); // re-exports the model layer's completion_request_error: no second declaration
    expect(declaredErrorCodes().get('completion_request_error')).toBe(400);
    expect(() => defineError('completion_request_error', 500, () => 'again')).toThrow(/error code "completion_request_error" is declared twice/);
    expect(() => defineError('invalid_param', 400, (m: string) => m)).toThrow(/declared twice/);
    expect(declaredErrorCodes().get('completion_request_error')).toBe(400);
  });

  it('the web app\'s passport limit answers with the one too_many_requests declaration (it declared the code a second time)', async () => {
    const { passportRateLimited } = await import('../../src/http/routes/web-app.js');
    const e = passportRateLimited(5);
    expect([e.code, e.status, e.headers]).toEqual(['too_many_requests', 429, { 'retry-after': '60' }]);
    expect(e.message).toMatch(/WEB_APP_PASSPORT_RATE_LIMIT_PER_MINUTE \(5\)/);
    expect(declaredErrorCodes().get('too_many_requests')).toBe(429);
  });
});
