import { describe, expect, it } from 'vitest';
import { OpenApiError, parseOpenApi } from '../../src/tools/openapi/openapi-parser.js';
import { buildRequest } from '../../src/tools/openapi/api-tool-provider.js';
import type { ApiToolProviderConfig } from '../../src/tools/openapi/api-tool-config.js';

const doc = (paths: Record<string, unknown>, components: Record<string, unknown> = {}) => ({ openapi: '3.0.0', servers: [{ url: 'https://api.example/v1' }], paths, components });

describe('OpenAPI documents as Dify reads them', () => {
  it('names operations without operationId as Dify does; the root path is <root>', () => {
    const d = parseOpenApi(doc({ '/': { get: {} }, '/a/{id}/b.json': { delete: { summary: 'Deletes' } } }));
    expect(d.operations.map((o) => [o.operationId, o.description])).toEqual([
      ['<root>_get', ''],
      ['aidbjson_delete', 'Deletes'],
    ]);
  });

  it('a $ref cycle is refused instead of looping', () => {
    expect(() => parseOpenApi(doc({ '/a': { get: { parameters: [{ $ref: '#/components/parameters/A' }] } } }, { parameters: { A: { $ref: '#/components/parameters/B' }, B: { $ref: '#/components/parameters/A' } } }))).toThrow(
      new OpenApiError('$ref #/components/parameters/A: more than 32 references in a row (a cycle?)'),
    );
  });

  it('form bodies, cookies, array query values and a basic key', () => {
    const d = parseOpenApi(
      doc({
        '/forms/{kind}': {
          post: {
            operationId: 'send',
            parameters: [
              { name: 'kind', in: 'path', schema: { type: 'string' } },
              { name: 'tag', in: 'query', schema: { type: 'array' } },
              { name: 'session', in: 'cookie', schema: { type: 'string' } },
            ],
            requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { a: { type: 'string' }, n: { type: 'integer' } } } } } },
          },
        },
      }),
    );
    const op = d.operations[0]!;
    expect(op.parameters.map((p) => [p.name, p.in, p.type, p.required])).toEqual([
      ['kind', 'path', 'string', true],
      ['tag', 'query', 'array', false],
      ['session', 'cookie', 'string', false],
      ['a', 'body', 'string', false],
      ['n', 'body', 'number', false],
    ]);
    const config: ApiToolProviderConfig = {
      name: 'forms',
      providerIds: [],
      document: d,
      serverUrl: 'https://api.example/v1',
      credentials: { authType: 'api_key_header', header: 'Authorization', headerPrefix: 'basic', queryParam: 'key', value: 'dXNlcjpwdw==' },
    };
    expect(buildRequest(config, op, { kind: 'a b', tag: ['x', 'y'], session: 's=1', a: 'hi there', n: 2 })).toEqual({
      method: 'POST',
      url: 'https://api.example/v1/forms/a%20b?tag=x&tag=y',
      headers: { Authorization: 'Basic dXNlcjpwdw==', cookie: 'session=s%3D1', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=hi+there&n=2',
    });
  });
});
