import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config-error.js';
import { ApiExtensionClient } from '../../src/moderation/api-extension-client.js';
import { readModerationConfig } from '../../src/moderation/moderation-config.js';
import { moderationRuleOf, externalDataToolsOf } from '../../src/moderation/moderation-rule.js';
import { OutputModeration, type OutputVerdict } from '../../src/moderation/output-moderation.js';
import { ServiceError } from '../../src/infra/errors.js';

describe('api_based_extensions in dovetail.yaml', () => {
  const read = (list: unknown) => () => readModerationConfig({}, { api_based_extensions: list });
  it('reads the list and the defaults', () => {
    const c = readModerationConfig({}, { api_based_extensions: [{ id: 'e1', name: 'rules', api_endpoint: 'https://x.example/mod', api_key: 'k' }] });
    expect(c).toEqual({ extensions: [{ id: 'e1', name: 'rules', apiEndpoint: 'https://x.example/mod', apiKey: 'k' }], extensionTimeoutSeconds: 60, extensionMaxResponseBytes: 1048576, bufferSize: 300, openaiModel: 'omni-moderation-latest' });
  });
  it('a bad entry fails naming its key', () => {
    expect(read({ id: 'e1' })).toThrow(new ConfigError('api_based_extensions must be a list of {id, name, api_endpoint, api_key}'));
    expect(read([{ id: 'e1', api_endpoint: 'ftp://x', api_key: 'k' }])).toThrow('api_based_extensions[0].api_endpoint must be an http(s) URL');
    expect(read([{ id: 'e1', api_endpoint: 'https://x', api_key: '' }])).toThrow('api_based_extensions[0].api_key must be a non-empty string');
    expect(read([{ id: 'e1', api_endpoint: 'https://x', api_key: 'k' }, { id: 'e1', api_endpoint: 'https://y', api_key: 'k' }])).toThrow('api_based_extensions[1].id: "e1" is listed twice');
    expect(() => readModerationConfig({ MODERATION_BUFFER_SIZE: '0' }, {})).toThrow('MODERATION_BUFFER_SIZE must be a positive integer, got "0"');
  });
});

describe('the DSL rule', () => {
  it('keywords one a line, blank lines dropped; off when not enabled', () => {
    const rule = moderationRuleOf({ model_config: { sensitive_word_avoidance: { enabled: true, type: 'keywords', config: { keywords: 'a\n\nB c\n', inputs_config: { enabled: true, preset_response: 'no' } } } } });
    expect(rule).toEqual({ type: 'keywords', keywords: ['a', 'B c'], inputs: { enabled: true, presetResponse: 'no' }, outputs: { enabled: false, presetResponse: '' } });
    expect(moderationRuleOf({ model_config: { sensitive_word_avoidance: { enabled: false, type: 'keywords' } } })).toBeUndefined();
    expect(moderationRuleOf({ model_config: { sensitive_word_avoidance: { enabled: true, type: 'cloud_service' } } })).toEqual({ type: 'unknown', name: 'cloud_service' });
  });
  it('external data tools: the enabled ones, with their index', () => {
    const tools = externalDataToolsOf({ model_config: { external_data_tools: [{ variable: 'a', type: 'api', enabled: false }, { variable: 'b', type: 'api', enabled: true, config: { api_based_extension_id: 'e' } }] } });
    expect(tools).toEqual([{ index: 1, variable: 'b', type: 'api', extensionId: 'e' }]);
  });
});

describe('OutputModeration', () => {
  const flagWhen = (word: string, verdict: Partial<OutputVerdict> = {}) => async (t: string): Promise<OutputVerdict> => ({ flagged: t.includes(word), action: 'direct_output', presetResponse: 'PRESET', text: '', ...verdict });

  it('checks each time bufferSize more characters arrived; direct_output replaces, stops and is the final answer', async () => {
    const replaced: [string, string][] = [];
    const seen: string[] = [];
    const check = async (t: string) => {
      seen.push(t);
      return flagWhen('bad')(t);
    };
    const m = new OutputModeration(check, 4, (a, r) => replaced.push([a, r]));
    let stopped = false;
    m.whenReplaced(() => (stopped = true));
    expect(m.append('ab')).toBe(true);
    expect(seen).toEqual([]);
    expect(m.append('cd')).toBe(true);
    expect(m.append('bad!')).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['abcd', 'abcdbad!']);
    expect(replaced).toEqual([['PRESET', 'output_moderation']]);
    expect(stopped).toBe(true);
    expect(m.append('more')).toBe(false);
    expect(await m.finish('abcdbad!more')).toEqual({ answer: 'PRESET', flagged: false });
  });

  it('overridden replaces the checked text and streaming goes on; the final check gives the stored answer', async () => {
    const replaced: string[] = [];
    const m = new OutputModeration(async (t) => ({ flagged: t.includes('x'), action: 'overridden', presetResponse: '', text: t.replaceAll('x', '*') }), 3, (a) => replaced.push(a));
    m.append('axb');
    await new Promise((r) => setImmediate(r));
    expect(replaced).toEqual(['a*b']);
    expect(m.append('cx')).toBe(true);
    expect(await m.finish('axbcx')).toEqual({ answer: 'a*bc*', flagged: true });
  });

  it('checking is true while a check is under way; whenIdle runs when the checks end unflagged, not after a replacement', async () => {
    let idle = 0;
    const m = new OutputModeration(flagWhen('bad'), 4, () => undefined);
    m.whenIdle(() => idle++);
    m.append('abc');
    expect(m.checking).toBe(false);
    m.append('d');
    expect(m.checking).toBe(true);
    await m.settled();
    expect([m.checking, idle]).toEqual([false, 1]);
    m.append('bad!');
    await m.settled();
    expect([m.replaced, idle]).toEqual([true, 1]);
  });

  it('a check that answers nothing (it failed) replaces nothing', async () => {
    const m = new OutputModeration(async () => undefined, 1, () => {
      throw new Error('no replacement expected');
    });
    m.append('bad');
    expect(await m.finish('bad')).toEqual({ answer: 'bad', flagged: false });
  });
});

describe('ApiExtensionClient', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/500') return void res.writeHead(500).end('down for maintenance');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"flagged":false}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const client = (endpoint: string, allow: string[]) =>
    new ApiExtensionClient({ extensions: [{ id: 'e1', name: 'e1', apiEndpoint: endpoint, apiKey: 'sk-ext-secret' }], extensionTimeoutSeconds: 5, extensionMaxResponseBytes: 1024, bufferSize: 300, openaiModel: 'm' }, allow);
  const ref = { id: 'e1', setting: 'sensitive_word_avoidance.config.api_based_extension_id' };
  const failure = async (p: Promise<unknown>) => {
    const err = await p.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    return err as ServiceError;
  };

  it('a loopback endpoint is refused unless its host is in SSRF_ALLOW_HOSTS', async () => {
    const err = await failure(client(`${url}/ok`, []).call(ref, 'app.moderation.input', {}));
    expect(err.code).toBe('invalid_param');
    expect(err.message).toContain('API-based extension "e1" (app.moderation.input)');
    expect(err.message).toContain('SSRF_ALLOW_HOSTS');
    expect(await client(`${url}/ok`, ['127.0.0.1']).call(ref, 'app.moderation.input', {})).toEqual({ flagged: false });
  });

  it('a non-200 answer fails naming the status, without the key', async () => {
    const err = await failure(client(`${url}/500`, ['127.0.0.1']).call(ref, 'app.moderation.output', {}));
    expect(err.message).toBe('API-based extension "e1" (app.moderation.output): request error, status_code: 500, content: down for maintenance');
  });

  it('an id that is not configured fails naming it, the DSL setting and api_based_extensions', async () => {
    const err = await failure(client(`${url}/ok`, ['127.0.0.1']).call({ ...ref, id: 'nope' }, 'app.moderation.input', {}));
    expect(err.message).toContain('"nope"');
    expect(err.message).toContain('sensitive_word_avoidance.config.api_based_extension_id');
    expect(err.message).toContain('api_based_extensions in dovetail.yaml');
  });
});
