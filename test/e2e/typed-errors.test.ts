import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config-error.js';
import { readStorageConfig } from '../../src/files/blobs/storage-config.js';
import { readProviderSettings } from '../../src/llm/provider-settings.js';
import { readMailConfig } from '../../src/mail/mail-config.js';
import { reviewApp } from '../helpers/form-apps.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';

/** Former plain `Error`s, now typed: the status and code say what happened (the form page answered 500). */
let s: TestServer;

beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => s?.close());

/** A form token of a paused run of a fresh review app (web delivery). */
async function pausedForm(): Promise<{ appId: string; token: string }> {
  const { appId, apiKey } = await s.importApp(reviewApp([{ id: 'web', type: 'webapp', enabled: true, config: {} }]));
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { draft: 'd' }, response_mode: 'streaming', user: 'u' }) });
  const token = String((dataFrames(parseSse(await r.text())).at(-2)!.data as { form_token: string }).form_token);
  return { appId, token };
}

describe('typed errors instead of 500', () => {
  it("posting the form page of an app deleted while its form waited answers 404 (was 500), as the web form API's envelope", async () => {
    const { appId, token } = await pausedForm();
    // 1. the app goes, its runs and forms stay (the CLI's `app delete` without --purge)
    expect(await s.runtime.apps.delete(appId)).toBe(true);
    // 2. the page's post
    const body = new FormData();
    body.append('action', 'approve');
    const page = await fetch(`${s.url}/form/${token}`, { method: 'POST', body });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('Form not found');
    // 3. the JSON surface for the same form says the same in the envelope
    const api = await fetch(`${s.url}/api/form/human_input/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ action: 'approve', inputs: {} }) });
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ code: 'not_found', message: 'Form not found', status: 404 });
  });

  it('an unknown workflow run and a bad query answer the envelope with 404 / 400 naming the field', async () => {
    const { apiKey } = await s.importApp(reviewApp([{ id: 'web', type: 'webapp', enabled: true, config: {} }]));
    const get = async (p: string) => {
      const r = await fetch(`${s.api}${p}`, { headers: { authorization: `Bearer ${apiKey}` } });
      return { status: r.status, body: await r.json() };
    };
    expect(await get('/workflows/run/00000000-0000-4000-8000-000000000000')).toEqual({ status: 404, body: { code: 'not_found', message: 'Workflow run not found.', status: 404 } });
    expect(await get('/workflows/logs?created_at__before=garbage')).toEqual({
      status: 400,
      body: { code: 'invalid_param', message: 'created_at__before must be an ISO 8601 timestamp, got "garbage"', status: 400 },
    });
  });

  it('the settings readers throw ConfigError naming the setting (before, plain Error that loadConfig re-wrapped; other callers printed a stack)', () => {
    const env = (vars: Record<string, string>) => (key: string) => vars[key];
    const cases: [() => unknown, string][] = [
      [() => readMailConfig(env({ SMTP_PORT: 'abc' })), 'SMTP_PORT must be an integer, got "abc"'],
      [() => readStorageConfig(env({ STORAGE_TYPE: 'floppy' })), 'STORAGE_TYPE must be local, opendal or s3, got "floppy"'],
      [() => readStorageConfig(env({ STORAGE_TYPE: 's3', S3_BUCKET_NAME: 'bucket', S3_USE_AWS_MANAGED_IAM: 'maybe' })), 'S3_USE_AWS_MANAGED_IAM must be true or false, got "maybe"'],
      [() => readProviderSettings(env({}), { default: 7 }), 'providers.default must be a provider name'],
    ];
    for (const [read, message] of cases) {
      expect(read).toThrow(ConfigError);
      expect(read).toThrow(message);
    }
    expect(() => loadConfig({ SMTP_PORT: 'abc' })).toThrow(ConfigError);
  });
});
