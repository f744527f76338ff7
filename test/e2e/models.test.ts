import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { completionApp } from '../helpers/apps.js';
import { example } from '../helpers/fixtures.js';
import { validateResponse } from '../helpers/openapi.js';

/** GET /v1/workspaces/current/models/model-types/{model_type}: the models this server can use. */

let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startServer({ env: { OPENAI_API_KEY: 'sk-test' } });
  key = await s.datasetKey();
  await s.importApp(example('completion-writer.yml'));
  await s.importApp(example('chatflow-assistant.yml'));
  await s.importApp(completionApp({ provider: 'langgenius/openai/openai', model: 'gpt-4o-mini' }));
  await s.importApp(completionApp({ provider: 'langgenius/openai/openai', model: 'gpt-4o-mini', name: 'Second writer' }));
  await s.importApp(completionApp({ provider: 'anthropic', model: 'claude-x', name: 'Unconfigured' }));
});
afterAll(async () => s?.close());

const get = async (type: string, k = key) => {
  const r = await fetch(`${s.api}/workspaces/current/models/model-types/${type}`, { headers: { authorization: `Bearer ${k}` } });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
};
const path = '/workspaces/current/models/model-types/{model_type}';

describe('available models', () => {
  it('text-embedding: the embedding model knowledge bases index with', async () => {
    const r = await get('text-embedding');
    expect(r.status).toBe(200);
    validateResponse(path, 'get', 200, r.body);
    expect(r.body.data).toHaveLength(1);
    expect(r.body.data[0]).toMatchObject({ provider: 'dovetail', status: 'active', models: [{ model: 'universal-sentence-encoder-lite', model_type: 'text-embedding', status: 'active' }] });
    // What a dataset created with the high_quality technique reports.
    const ds = await fetch(`${s.api}/datasets`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'kb', indexing_technique: 'high_quality' }) });
    expect(await ds.json()).toMatchObject({ embedding_model: 'universal-sentence-encoder-lite', embedding_model_provider: 'dovetail' });
  });

  it('llm: the models the apps name, by provider, each once; providers without credentials left out', async () => {
    const r = await get('llm');
    expect(r.status).toBe(200);
    validateResponse(path, 'get', 200, r.body);
    const byProvider = Object.fromEntries((r.body.data as { provider: string; models: { model: string }[] }[]).map((p) => [p.provider, p.models.map((m) => m.model)]));
    expect(byProvider).toEqual({ mock: ['mock-echo', 'mock-chat'], 'langgenius/openai/openai': ['gpt-4o-mini'] });
  });

  it('types without models here answer an empty list; an unknown type is a 400 naming the choices; an app key is refused', async () => {
    for (const t of ['rerank', 'moderation']) expect(await get(t)).toEqual({ status: 200, body: { data: [] } });
    // The audio models of the settings (the OpenAI provider has credentials here).
    expect((await get('tts')).body.data).toMatchObject([{ provider: 'openai', models: [{ model: 'tts-1', model_type: 'tts' }] }]);
    expect((await get('speech2text')).body.data).toMatchObject([{ provider: 'openai', models: [{ model: 'whisper-1', model_type: 'speech2text' }] }]);
    expect(await get('vision')).toEqual({ status: 400, body: { code: 'invalid_param', message: 'model_type must be one of text-embedding, rerank, llm, tts, speech2text, moderation.', status: 400 } });
    const appKey = (await s.importApp(example('completion-writer.yml'))).apiKey;
    expect((await get('llm', appKey)).status).toBe(401);
  });
});
