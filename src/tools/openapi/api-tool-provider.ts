import { pyJsonDumps } from '../../lib/python-json.js';
import type { ToolHttp } from '../tool-http.js';
import { ToolError, type Tool, type ToolMessage, type ToolRef, type ToolResolution } from '../tool.js';
import type { ApiToolProviderConfig } from './api-tool-config.js';
import type { ApiOperation } from './openapi-parser.js';

const text = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** Dify's `assembling_request` auth: the API key in a header (with its prefix) or in the query. */
function authOf(c: ApiToolProviderConfig['credentials']): { headers: Record<string, string>; query: [string, string][] } {
  if (c.authType === 'api_key_header') {
    const v = c.headerPrefix === 'bearer' ? `Bearer ${c.value}` : c.headerPrefix === 'basic' ? `Basic ${c.value}` : c.value!;
    return { headers: { [c.header]: v }, query: [] };
  }
  if (c.authType === 'api_key_query') return { headers: {}, query: [[c.queryParam, c.value!]] };
  return { headers: {}, query: [] };
}

/** The request an operation makes with these (prepared) parameters. */
export function buildRequest(config: ApiToolProviderConfig, op: ApiOperation, params: Readonly<Record<string, unknown>>): { method: string; url: string; headers: Record<string, string>; body?: string } {
  let path = op.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  const body: Record<string, unknown> = {};
  for (const p of op.parameters) {
    const v = params[p.name];
    if (v === undefined || v === null) continue;
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(encodeURIComponent(text(v)));
    else if (p.in === 'query') for (const item of Array.isArray(v) ? v : [v]) query.append(p.name, text(item));
    else if (p.in === 'header') headers[p.name] = text(v);
    else if (p.in === 'cookie') cookies.push(`${p.name}=${encodeURIComponent(text(v))}`);
    else body[p.name] = v;
  }
  const auth = authOf(config.credentials);
  for (const [k, v] of auth.query) query.append(k, v);
  Object.assign(headers, auth.headers);
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  const qs = query.toString();
  const url = `${config.serverUrl}${path}${qs ? `${path.includes('?') ? '&' : '?'}${qs}` : ''}`;
  const out: { method: string; url: string; headers: Record<string, string>; body?: string } = { method: op.method.toUpperCase(), url, headers };
  if (op.bodyType !== undefined) {
    const type = op.bodyType.toLowerCase();
    if (type === 'application/x-www-form-urlencoded') out.body = new URLSearchParams(Object.entries(body).map(([k, v]) => [k, text(v)])).toString();
    else if (type.includes('json')) out.body = JSON.stringify(body);
    else throw new ToolError(`tool "${op.operationId}": request bodies of type ${op.bodyType} are not supported (application/json, application/x-www-form-urlencoded)`, 'ToolParameterError');
    headers['content-type'] = op.bodyType;
  }
  return out;
}

/** Dify's `validate_and_parse_response`: JSON re-dumped (`ensure_ascii=False`) else the text; an object answer is also the json. */
function messagesOf(body: string): ToolMessage[] {
  if (body === '') return [{ type: 'text', text: 'Empty response from the tool, please check your parameters and try again.' }];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [{ type: 'text', text: body }];
  }
  const out: ToolMessage[] = [{ type: 'text', text: pyJsonDumps(parsed, false) }];
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) out.push({ type: 'json', json: parsed as Record<string, unknown> });
  return out;
}

/**
 * A custom OpenAPI tool provider (Dify's `provider_type: api`): each operation of its document a
 * tool named by its `operationId`, called through the tool HTTP client (SSRF guard, tool
 * timeouts and size limit) with the provider's API key, which never reaches an error or event.
 */
export class ApiToolProvider {
  readonly #tools: Map<string, Tool>;

  constructor(readonly config: ApiToolProviderConfig, http: ToolHttp) {
    this.#tools = new Map(config.document.operations.map((op) => [op.operationId, this.#tool(op, http)]));
  }

  /** Whether a DSL reference names this provider (its name, or a Dify provider id listed for it). */
  matches(ref: ToolRef): boolean {
    return ref.providerId === this.config.name || ref.providerName === this.config.name || this.config.providerIds.includes(ref.providerId);
  }

  resolve(ref: ToolRef): ToolResolution {
    const tool = this.#tools.get(ref.toolName);
    if (tool) return { tool };
    return { error: `tool "${ref.toolName}" of API tool provider "${this.config.name}": its OpenAPI document has no such operation (its tools: ${[...this.#tools.keys()].join(', ')})`, errorType: 'ToolNotFoundError' };
  }

  #tool(op: ApiOperation, http: ToolHttp): Tool {
    const config = this.config;
    const label = `API tool "${op.operationId}" of "${config.name}"`;
    return {
      name: op.operationId,
      description: op.description,
      parameters: op.parameters,
      async invoke(params, ctx) {
        const req = buildRequest(config, op, params);
        const res = await http.send(label, { ...req, secrets: [config.credentials.value] }, ctx.signal);
        return messagesOf(res.text);
      },
    };
  }
}
