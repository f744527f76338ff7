import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { reviewApp } from '../helpers/form-apps.js';

/** Files sent through the web form API's upload route obey the upload limits. */
let s: TestServer;
let key = '';
const BIG = new Uint8Array(1024 * 1024 + 512 * 1024).fill(97); // 1.5 MB of text, over UPLOAD_FILE_SIZE_LIMIT=1

beforeAll(async () => {
  s = await startServer({ env: { UPLOAD_FILE_SIZE_LIMIT: '1', WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS: '1000' } });
  key = (await s.importApp(reviewApp([{ id: 'web', type: 'webapp', enabled: true, config: {} }]))).apiKey;
});
afterAll(async () => s?.close());

async function formToken(): Promise<string> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { draft: 'd' }, response_mode: 'streaming', user: 'u' }) });
  const events = dataFrames(parseSse(await r.text()));
  return String((events.at(-2)!.data as { form_token: string }).form_token);
}

describe('uploads through the web form surface', () => {
  it('the upload route answers 413 file_too_large past UPLOAD_FILE_SIZE_LIMIT', async () => {
    const token = await formToken();
    const body = new FormData();
    body.append('file', new Blob([BIG], { type: 'text/plain' }), 'big.txt');
    const r = await fetch(`${s.url}/api/form/human_input/${token}/files/upload`, { method: 'POST', body });
    expect(r.status).toBe(413);
    expect(await r.json()).toMatchObject({ code: 'file_too_large', status: 413, message: expect.stringContaining('at most 1 MB') });
  });
});
