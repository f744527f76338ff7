import { yamlLib } from '../../infra/yaml.js';
import type { ToolParameter, ToolParameterType } from '../tool.js';

/** Where an operation's parameter goes in the request. */
export type ParameterPlace = 'path' | 'query' | 'header' | 'cookie' | 'body';

export interface ApiOperationParameter extends ToolParameter {
  readonly in: ParameterPlace;
}

/** One operation of an OpenAPI document: one tool. */
export interface ApiOperation {
  /** `operationId`, else Dify's `{path without / and other characters}_{method}`. */
  readonly operationId: string;
  readonly method: string;
  readonly path: string;
  readonly description: string;
  readonly parameters: readonly ApiOperationParameter[];
  /** The request body's media type (the first of `requestBody.content`); undefined without a body. */
  readonly bodyType?: string;
}

export interface ApiDocument {
  /** `servers[0].url`. */
  readonly serverUrl: string;
  readonly operations: readonly ApiOperation[];
}

const METHODS = ['get', 'post', 'put', 'delete', 'patch', 'head', 'options', 'trace'] as const;
/** How many `$ref`s one lookup may follow (a cycle or a very deep chain is an error). */
const MAX_REF_HOPS = 32;

export class OpenApiError extends Error {
  override name = 'OpenApiError';
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The OpenAPI text (YAML or JSON) as a mapping. */
export function readOpenApiText(text: string): Obj {
  let doc: unknown;
  try {
    doc = yamlLib().parse(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new OpenApiError(`not YAML or JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isObj(doc)) throw new OpenApiError('the document must be a mapping');
  return doc;
}

/** Follows local `$ref`s (`#/components/...`); a remote or missing one is an error naming it. */
function deref(doc: Obj, v: unknown): unknown {
  let cur = v;
  for (let hops = 0; isObj(cur) && typeof cur.$ref === 'string'; hops++) {
    if (hops >= MAX_REF_HOPS) throw new OpenApiError(`$ref ${cur.$ref}: more than ${MAX_REF_HOPS} references in a row (a cycle?)`);
    const ref = cur.$ref;
    if (!ref.startsWith('#/')) throw new OpenApiError(`$ref ${ref}: only references inside the document (#/...) are read`);
    let target: unknown = doc;
    for (const raw of ref.slice(2).split('/')) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      target = isObj(target) ? target[key] : undefined;
    }
    if (target === undefined) throw new OpenApiError(`$ref ${ref}: nothing there`);
    cur = target;
  }
  return cur;
}

/** Dify's `_get_tool_parameter_type`: the schema type, numbers for integers, strings otherwise. */
function typeOf(schema: Obj | undefined): ToolParameterType {
  const t = schema?.type;
  if (t === 'integer' || t === 'number') return 'number';
  if (t === 'boolean') return 'boolean';
  if (t === 'array') return 'array';
  if (t === 'object') return 'object';
  return 'string';
}

function parameter(name: string, place: ParameterPlace, schema: Obj | undefined, required: boolean, description: unknown): ApiOperationParameter {
  const d = typeof description === 'string' ? description : typeof schema?.description === 'string' ? schema.description : '';
  return {
    name,
    in: place,
    type: typeOf(schema),
    form: 'llm',
    required,
    ...(schema?.default !== undefined ? { default: schema.default } : {}),
    llmDescription: d,
  };
}

/** Dify's name for an operation without `operationId`: the path without `/` and other characters, then `_method`. */
function operationName(path: string, method: string): string {
  const p = path.replace(/^\//, '').replace(/[^a-zA-Z0-9_-]/g, '');
  return `${p || '<root>'}_${method}`;
}

/**
 * An OpenAPI 3 document as Dify's ApiBasedToolSchemaParser reads it: the server URL, and each
 * operation a tool with its path, query, header and cookie parameters and the top-level
 * properties of its request body. Only local `$ref`s are followed, so nothing outside the
 * document is read. Linear in the document (each operation once, each `$ref` chain bounded).
 */
export function parseOpenApi(doc: Obj): ApiDocument {
  if (typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.')) throw new OpenApiError(`only OpenAPI 3 documents are read (openapi: 3.x), got ${JSON.stringify(doc.openapi ?? doc.swagger ?? null)}`);
  const servers = Array.isArray(doc.servers) ? doc.servers : [];
  const server = isObj(servers[0]) && typeof servers[0].url === 'string' ? servers[0].url : undefined;
  if (!server) throw new OpenApiError('No server found in the openapi yaml (servers[0].url).');
  if (!isObj(doc.paths)) throw new OpenApiError('paths must be a mapping');
  const operations: ApiOperation[] = [];
  const seen = new Set<string>();
  for (const [path, rawItem] of Object.entries(doc.paths)) {
    const item = deref(doc, rawItem);
    if (!isObj(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const params = new Map<string, ApiOperationParameter>();
      for (const raw of [...shared, ...(Array.isArray(op.parameters) ? op.parameters : [])]) {
        const p = deref(doc, raw);
        if (!isObj(p) || typeof p.name !== 'string') throw new OpenApiError(`${method.toUpperCase()} ${path}: a parameter without a name`);
        const place = String(p.in);
        if (place !== 'path' && place !== 'query' && place !== 'header' && place !== 'cookie') throw new OpenApiError(`${method.toUpperCase()} ${path}: parameter ${p.name} has in: ${place} (path, query, header or cookie)`);
        const schema = deref(doc, p.schema);
        params.set(`${place}:${p.name}`, parameter(p.name, place, isObj(schema) ? schema : undefined, p.required === true || place === 'path', p.description));
      }
      let bodyType: string | undefined;
      const body = deref(doc, op.requestBody);
      if (isObj(body) && isObj(body.content)) {
        const [type, media] = Object.entries(body.content)[0] ?? [];
        bodyType = type;
        const schema = isObj(media) ? deref(doc, media.schema) : undefined;
        if (isObj(schema) && isObj(schema.properties)) {
          const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
          for (const [name, rawProp] of Object.entries(schema.properties)) {
            const prop = deref(doc, rawProp);
            params.set(`body:${name}`, parameter(name, 'body', isObj(prop) ? prop : undefined, required.has(name), undefined));
          }
        }
      }
      const operationId = typeof op.operationId === 'string' && op.operationId ? op.operationId : operationName(path, method);
      if (seen.has(operationId)) throw new OpenApiError(`two operations are named ${operationId} (operationId)`);
      seen.add(operationId);
      const description = typeof op.description === 'string' && op.description ? op.description : typeof op.summary === 'string' ? op.summary : '';
      operations.push({ operationId, method, path, description, parameters: [...params.values()], ...(bodyType ? { bodyType } : {}) });
    }
  }
  if (operations.length === 0) throw new OpenApiError('the document has no operations (paths)');
  return { serverUrl: server, operations };
}
