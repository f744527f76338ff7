import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import type { GenerateChunk, GenerateRequest } from '../../src/llm/model-provider.js';
import { providerReadiness, resolveProvider } from '../../src/llm/provider-readiness.js';
import { ProviderRegistry } from '../../src/llm/provider-registry.js';
import { readProviderSettings, type ProvidersConfig } from '../../src/llm/provider-settings.js';
import { BUILTIN_PROVIDERS, normaliseProviderName, settingsPrefix } from '../../src/llm/provider-table.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { startFakeAnthropic, startFakeBedrock, type FakeModelServer } from '../helpers/fake-model-servers.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

const settings = (env: Record<string, string>, yaml?: unknown): ProvidersConfig => readProviderSettings((k) => env[k], yaml);
const registry = (env: Record<string, string>, yaml?: unknown) => new ProviderRegistry(settings(env, yaml));
const req = (over: Partial<GenerateRequest> = {}): GenerateRequest => ({ model: 'm-1', mode: 'chat', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me about owls' }], params: {}, ...over });

async function drain(it: AsyncIterable<GenerateChunk>): Promise<{ text: string; usage: unknown[] }> {
  let text = '';
  const usage: unknown[] = [];
  for await (const c of it) {
    if (c.type === 'text') text += c.text;
    else if (c.type === 'usage') usage.push(c.usage);
  }
  return { text, usage };
}

function notInitialised(fn: () => unknown): Error & { code?: string; status?: number } {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected provider_not_initialize');
}

const openAiLike = BUILTIN_PROVIDERS.filter((p) => p.protocol === 'openai-compatible');

describe('provider table', () => {
  it('holds every provider the issue names, each with a protocol; hosted ones with a default https base URL', () => {
    const names = BUILTIN_PROVIDERS.map((p) => p.name);
    for (const n of ['openai', 'azure_openai', 'anthropic', 'google', 'deepseek', 'moonshot', 'tongyi', 'volcengine_maas', 'zhipuai', 'siliconflow', 'groq', 'mistralai', 'openrouter', 'x', 'togetherai', 'fireworks', 'perplexity', 'minimax', 'baichuan', 'hunyuan', 'bedrock', 'ollama', 'vllm', 'lm_studio', 'localai', 'xinference', 'gpustack', 'openai_api_compatible']) {
      expect(names).toContain(n);
    }
    for (const p of openAiLike.filter((e) => !e.selfHosted)) expect(p.baseUrl, p.name).toMatch(/^https:\/\//);
    expect(settingsPrefix('volcengine_maas')).toBe('VOLCENGINE_MAAS');
    expect(settingsPrefix('lm-studio.x')).toBe('LM_STUDIO_X');
  });

  it('the README documents every provider of the table, its first setting and its default base URL', () => {
    const readme = readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
    for (const p of BUILTIN_PROVIDERS.filter((e) => e.protocol !== 'mock')) {
      const row = readme.split('\n').find((l) => l.startsWith(`| \`${p.name}\``));
      expect(row, p.name).toBeDefined();
      expect(row).toContain(`${settingsPrefix(p.name)}_`);
      if (p.baseUrl) expect(row).toContain(`\`${p.baseUrl}\``);
    }
  });

  it('plugin ids and aliases resolve: org/NAME/NAME, Gemini’s langgenius/gemini/google, any organisation, any case', () => {
    expect(normaliseProviderName('langgenius/volcengine_maas/volcengine_maas')).toBe('volcengine_maas');
    expect(normaliseProviderName('langgenius/gemini/google')).toBe('google');
    expect(normaliseProviderName('someone/deepseek/deepseek')).toBe('deepseek');
    expect(normaliseProviderName('langgenius/tongyi/unknown_provider')).toBe('tongyi');
    expect(normaliseProviderName('DeepSeek')).toBe('deepseek');
    expect(normaliseProviderName('')).toBe('openai');
    const cfg = settings({ GEMINI_API_KEY: 'g' });
    expect(resolveProvider(cfg, 'gemini')).toMatchObject({ name: 'google', protocol: 'openai-compatible', settings: { apiKey: 'g', baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai' } });
    expect(providerReadiness(cfg, 'langgenius/gemini/google')).toEqual({ ready: true, provider: 'google', protocol: 'openai-compatible', viaDefault: false });
  });

  it('readiness and provider_not_initialize name the exact setting to set', () => {
    const reg = registry({});
    const cases: [string, string[]][] = [
      ['deepseek', ['DEEPSEEK_API_KEY']],
      ['langgenius/volcengine_maas/volcengine_maas', ['VOLCENGINE_MAAS_API_KEY']],
      ['x', ['X_API_KEY']],
      ['ollama', ['OLLAMA_BASE_URL']],
      ['openai_api_compatible', ['OPENAI_API_COMPATIBLE_BASE_URL']],
      ['azure_openai', ['AZURE_OPENAI_API_KEY', 'AZURE_OPENAI_ENDPOINT']],
      ['bedrock', ['BEDROCK_ACCESS_KEY_ID', 'BEDROCK_SECRET_ACCESS_KEY']],
    ];
    for (const [name, missing] of cases) {
      const r = providerReadiness(settings({}), name);
      expect(r, name).toMatchObject({ ready: false, missing });
      const err = notInitialised(() => reg.get(name));
      expect(err).toMatchObject({ code: 'provider_not_initialize', status: 400 });
      for (const m of missing) expect(err.message).toContain(m);
    }
    expect(notInitialised(() => reg.get('deepseek')).message).toBe(
      'Model provider "deepseek" is not configured: set DEEPSEEK_API_KEY (or providers.deepseek.api_key in dovetail.yaml).',
    );
    expect(notInitialised(() => reg.get('ollama')).message).toContain('usually listens at http://localhost:11434/v1');
    const unknown = notInitialised(() => reg.get('langgenius/nobody/nobody'));
    expect(unknown.message).toContain('Model provider "langgenius/nobody/nobody" is not supported');
    expect(unknown.message).toContain('providers.default');
    expect(providerReadiness(settings({}), 'nobody')).toMatchObject({ ready: false, missing: [] });
    expect(reg.get('mock').name).toBe('mock');
  });

  it('existing variables keep working: OPENAI_API_COMPATIBLE_BASE_URL serves ollama, vllm and lm_studio', () => {
    const cfg = settings({ OPENAI_API_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1' });
    for (const n of ['ollama', 'vllm', 'lm_studio', 'openai_api_compatible']) expect(providerReadiness(cfg, n).ready, n).toBe(true);
    expect(providerReadiness(cfg, 'localai').ready).toBe(false);
    // A provider's own setting wins over the legacy one.
    expect(resolveProvider(settings({ OPENAI_API_COMPATIBLE_BASE_URL: 'http://a/v1', OLLAMA_BASE_URL: 'http://b/v1' }), 'ollama')?.settings.baseUrl).toBe('http://b/v1');
  });
});

describe('every OpenAI-compatible table entry against a local OpenAI-protocol server', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI({ reply: 'hoot', chunkSize: 2 });
  });
  afterAll(async () => fake.close());

  it.each(openAiLike.map((p) => [p.name, p] as const))('%s: NAME_API_KEY / NAME_BASE_URL, plugin id, path, bearer auth, body', async (name, p) => {
    const prefix = settingsPrefix(name);
    const reg = registry({ [`${prefix}_API_KEY`]: `key-${name}`, [`${prefix}_BASE_URL`]: fake.baseUrl });
    const provider = reg.get(`langgenius/${name}/${name}`);
    expect(provider.name).toBe(name);
    const r = await drain(provider.stream(req({ model: `${name}-model`, params: { temperature: 0.3, top_p: 0.9, max_tokens: 50, seed: 7, stop: ['END'], presence_penalty: 0.1, frequency_penalty: 0.2, top_k: 4, n: 3, ui_only: 'x' } })));
    expect(r.text).toBe('hoot');
    const seen = fake.requests.at(-1)!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe(`Bearer key-${name}`);
    expect(seen.body).toMatchObject({
      model: `${name}-model`,
      stream: true,
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me about owls' }],
      temperature: 0.3,
      top_p: 0.9,
      max_tokens: 50,
      seed: 7,
      stop: ['END'],
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
    });
    // OpenAI refuses parameters it does not know; compatible servers get top_k.
    // Choices beyond the first would interleave with the answer; Dify UI settings are not upstream parameters.
    expect(seen.body).not.toHaveProperty('n');
    expect(seen.body).not.toHaveProperty('ui_only');
    if (p.strictParams) expect(seen.body).not.toHaveProperty('top_k');
    else expect(seen.body.top_k).toBe(4);
  });

  it('completion params in OpenAI’s wire form: response_format / json_schema, reasoning_effort, max_completion_tokens for o-series', async () => {
    const reg = registry({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fake.baseUrl });
    const schema = { name: 'owl', schema: { type: 'object', properties: { name: { type: 'string' } } } };
    await drain(reg.get('openai').stream(req({ model: 'o3-mini', params: { response_format: 'json_schema', json_schema: JSON.stringify(schema), reasoning_effort: 'low', max_tokens: 99 } })));
    expect(fake.requests.at(-1)!.body).toMatchObject({ response_format: { type: 'json_schema', json_schema: schema }, reasoning_effort: 'low', max_completion_tokens: 99 });
    expect(fake.requests.at(-1)!.body).not.toHaveProperty('max_tokens');
    await drain(reg.get('openai').stream(req({ model: 'gpt-4o', params: { response_format: 'json_object' } })));
    expect(fake.requests.at(-1)!.body.response_format).toEqual({ type: 'json_object' });
    await drain(reg.get('openai').stream(req({ model: 'gpt-4o', params: { response_format: 'json_schema', json_schema: '{"type":"object"}' } })));
    expect(fake.requests.at(-1)!.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object' } } });
    const bad = await drain(reg.get('openai').stream(req({ params: { response_format: 'json_schema', json_schema: '{not json' } }))).catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: 'completion_request_error', message: expect.stringContaining('completion_params.json_schema') });
  });

  it('reasoning_content streams inside <think> before the answer, as Dify’s plugins hand it on', async () => {
    fake.behaviour = { reply: 'Owls hunt at night.', reasoning: 'The user asks about owls.', chunkSize: 3 };
    try {
      const reg = registry({ DEEPSEEK_API_KEY: 'k', DEEPSEEK_BASE_URL: fake.baseUrl });
      const r = await drain(reg.get('deepseek').stream(req({ model: 'deepseek-reasoner' })));
      expect(r.text).toBe('<think>\nThe user asks about owls.\n</think>Owls hunt at night.');
    } finally {
      fake.behaviour = { reply: 'hoot', chunkSize: 2 };
    }
  });

  it('Azure OpenAI: /openai/deployments/{deployment}/chat/completions?api-version=…, api-key header, no bearer', async () => {
    const endpoint = fake.baseUrl.replace(/\/v1$/, '');
    const reg = registry({ AZURE_OPENAI_API_KEY: 'az-key', AZURE_OPENAI_ENDPOINT: endpoint, AZURE_OPENAI_API_VERSION: '2024-06-01' });
    await drain(reg.get('langgenius/azure_openai/azure_openai').stream(req({ model: 'my-gpt4o-deployment', params: { temperature: 0.1, top_k: 3 } })));
    const seen = fake.requests.at(-1)!;
    expect(seen.path).toBe('/openai/deployments/my-gpt4o-deployment/chat/completions?api-version=2024-06-01');
    expect(seen.headers['api-key']).toBe('az-key');
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.body).toMatchObject({ temperature: 0.1 });
    expect(seen.body).not.toHaveProperty('top_k');
    // A fixed deployment (AZURE_OPENAI_DEPLOYMENT) and the default api-version; the endpoint may end in /openai.
    const fixed = registry({ AZURE_OPENAI_API_KEY: 'az-key', AZURE_OPENAI_BASE_URL: `${endpoint}/openai/`, AZURE_OPENAI_DEPLOYMENT: 'prod' });
    await drain(fixed.get('azure_openai').stream(req({ model: 'gpt-4o' })));
    expect(fake.requests.at(-1)!.path).toBe('/openai/deployments/prod/chat/completions?api-version=2024-10-21');
  });

  it('providers: in dovetail.yaml adds a provider of any name; providers.default sends every unknown provider to it', async () => {
    const yaml = { my_gateway: { protocol: 'openai', base_url: fake.baseUrl, api_key: 'gw-key' }, default: 'my_gateway' };
    const reg = registry({}, yaml);
    expect(reg.readiness('langgenius/unheard_of/unheard_of')).toEqual({ ready: true, provider: 'my_gateway', protocol: 'openai-compatible', viaDefault: true });
    await drain(reg.get('langgenius/unheard_of/unheard_of').stream(req({ model: 'some-model' })));
    expect(fake.requests.at(-1)!.headers.authorization).toBe('Bearer gw-key');
    expect(fake.requests.at(-1)!.body.model).toBe('some-model');
    // A known provider without credentials is not rerouted: its own setting is named.
    expect(reg.readiness('deepseek')).toMatchObject({ ready: false, missing: ['DEEPSEEK_API_KEY'] });
    // The environment wins over the file; yaml sets built-in providers too.
    const both = settings({ MY_GATEWAY_API_KEY: 'env-key', MOONSHOT_API_KEY: 'ms' }, { ...yaml, moonshot: { base_url: 'http://127.0.0.1:9/v1' } });
    expect(resolveProvider(both, 'my_gateway')?.settings.apiKey).toBe('env-key');
    expect(resolveProvider(both, 'moonshot')?.settings).toMatchObject({ apiKey: 'ms', baseUrl: 'http://127.0.0.1:9/v1' });
  });
});

describe('Anthropic protocol against a local Messages API server', () => {
  let server: FakeModelServer;
  beforeAll(async () => {
    server = await startFakeAnthropic({ thinking: 'Owls are birds.', answer: 'Owls hoot.' });
  });
  afterAll(async () => server.close());

  it('sends the params it knows; thinking blocks stream inside <think>; a yaml provider can speak it', async () => {
    const reg = registry({ ANTHROPIC_API_KEY: 'ak', ANTHROPIC_BASE_URL: server.url });
    const r = await drain(reg.get('langgenius/anthropic/anthropic').stream(req({ model: 'claude-x', params: { thinking: true, thinking_budget: 2048, max_tokens: 4000, temperature: 0.5, stop: ['Z'] } })));
    expect(r.text).toBe('<think>\nOwls are birds.\n</think>Owls hoot.');
    expect(r.usage.at(-1)).toEqual({ promptTokens: 7, completionTokens: 9 });
    const seen = server.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.body).toMatchObject({ model: 'claude-x', system: 'Be brief.', max_tokens: 4000, stop_sequences: ['Z'], thinking: { type: 'enabled', budget_tokens: 2048 } });
    expect(seen.body).not.toHaveProperty('temperature');
    await drain(reg.get('anthropic').stream(req({ params: { temperature: 0.2, top_k: 5, top_p: 0.8 } })));
    expect(server.requests.at(-1)!.body).toMatchObject({ temperature: 0.2, top_k: 5, top_p: 0.8, max_tokens: 4096 });
    const custom = registry({}, { claude_proxy: { protocol: 'anthropic', base_url: server.url, api_key: 'proxy-key' } });
    expect((await drain(custom.get('claude_proxy').stream(req()))).text).toBe('Owls hoot.');
    const h = server.requests.at(-1)!.headers;
    expect([h['x-api-key'], h.authorization]).toContain(h['x-api-key'] ? 'proxy-key' : 'Bearer proxy-key');
  });
});

describe('Bedrock Converse against a local runtime speaking the AWS event stream', () => {
  let server: FakeModelServer;
  beforeAll(async () => {
    server = await startFakeBedrock({ reasoning: 'Think first.', answer: 'Owls hoot.' });
  });
  afterAll(async () => server.close());

  it('signs the request (SigV4), sends Converse’s shape and reads the binary stream, reasoning inside <think>', async () => {
    const reg = registry({ BEDROCK_ACCESS_KEY_ID: 'AKIDEXAMPLE', BEDROCK_SECRET_ACCESS_KEY: 'secret', BEDROCK_REGION: 'eu-west-1', BEDROCK_BASE_URL: server.url });
    const r = await drain(reg.get('langgenius/bedrock/bedrock').stream(req({ model: 'anthropic.claude-3-haiku', params: { temperature: 0.4, max_tokens: 300, top_p: 0.7, top_k: 20, stop: ['END'] } })));
    expect(r.text).toBe('<think>\nThink first.\n</think>Owls hoot.');
    expect(r.usage).toEqual([{ promptTokens: 12, completionTokens: 5 }]);
    const seen = server.requests.at(-1)!;
    expect(seen.path).toBe('/model/anthropic.claude-3-haiku/converse-stream');
    expect(String(seen.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/bedrock\/aws4_request/);
    expect(seen.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'Tell me about owls' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 300, temperature: 0.4, topP: 0.7, stopSequences: ['END'] },
      additionalModelRequestFields: { top_k: 20 },
    });
  });

  it('a stop (abort) ends a hanging stream and closes the upstream connection', async () => {
    const hanging = await startFakeBedrock({ answer: '', hangAfterStart: true });
    try {
      const reg = registry({ BEDROCK_ACCESS_KEY_ID: 'a', BEDROCK_SECRET_ACCESS_KEY: 'b', BEDROCK_BASE_URL: hanging.url });
      const ac = new AbortController();
      const seen: string[] = [];
      const done = (async () => {
        for await (const c of reg.get('bedrock').stream(req({ signal: ac.signal }))) {
          if (c.type === 'text') seen.push(c.text);
          ac.abort(new Error('stopped by the user'));
        }
      })();
      await expect(done).rejects.toThrow('stopped by the user');
      expect(seen).toEqual(['first ']);
      await hanging.closedEarly();
    } finally {
      await hanging.close();
    }
  });

  it('an upstream error is completion_request_error with the status and message', async () => {
    const reg = registry({ BEDROCK_ACCESS_KEY_ID: 'a', BEDROCK_SECRET_ACCESS_KEY: 'b', BEDROCK_BASE_URL: `${server.url}/nowhere` });
    const err = await drain(reg.get('bedrock').stream(req({ model: 'm/x' }))).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'completion_request_error', message: expect.stringContaining('[404]') });
  });
});

describe('provider settings in dovetail.yaml', () => {
  const withYaml = (text: string, env: Record<string, string> = {}) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dovetail-providers-'));
    const file = path.join(dir, 'dovetail.yaml');
    writeFileSync(file, text);
    return () => loadConfig({ DOVETAIL_CONFIG: file, ...env });
  };

  it('loads providers:, and refuses malformed entries with a message naming the key', () => {
    const cfg = withYaml('providers:\n  deepseek: { api_key: sk-1 }\n  corp: { protocol: anthropic, base_url: "http://127.0.0.1:9", api_key: k }\n  default: corp\n')();
    expect(providerReadiness(cfg.providers, 'deepseek').ready).toBe(true);
    expect(providerReadiness(cfg.providers, 'who_knows')).toMatchObject({ ready: true, provider: 'corp', protocol: 'anthropic', viaDefault: true });
    expect(withYaml('providers:\n  corp: { base_url: "http://x" }\n')).toThrow('providers.corp.protocol is required');
    expect(withYaml('providers:\n  corp: { protocol: grpc, base_url: "http://x" }\n')).toThrow('providers.corp.protocol must be one of: openai, anthropic');
    expect(withYaml('providers:\n  deepseek: { apikey: x }\n')).toThrow('providers.deepseek.apikey is not a provider setting');
    expect(withYaml('providers:\n  default: nowhere\n')).toThrow('providers.default (PROVIDERS_DEFAULT) names "nowhere"');
    expect(withYaml('providers: [1]\n')).toThrow('providers must be a mapping');
    expect(withYaml('', { DEEPSEEK_BASE_URL: 'ftp://x' })).toThrow('DEEPSEEK_BASE_URL must be an http(s) URL');
    expect(withYaml('', { PROVIDERS_DEFAULT: 'langgenius/deepseek/deepseek', DEEPSEEK_API_KEY: 'k' })().providers.default).toBe('deepseek');
  });
});
