import { findAll, parsePath } from '../json-path.js';
import { ToolError, type Tool, type ToolMessage, type ToolProvider } from '../tool.js';

function parseContent(content: unknown): unknown {
  if (typeof content !== 'string') {
    if (content !== undefined && content !== null) return content;
    throw new ToolError('Invalid parameter content', 'ToolParameterError');
  }
  try {
    return JSON.parse(content);
  } catch (err) {
    throw new ToolError(`Failed to parse JSON content: ${(err as Error).message}`);
  }
}

/** Python's `json.dumps` default separators; `ensure_ascii` escapes every non-ASCII character. */
function dumps(v: unknown, ensureAscii: boolean): string {
  const spaced = pythonSeparators(JSON.stringify(v) ?? 'null');
  return ensureAscii ? spaced.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : spaced;
}

/** `", "` and `": "` between items, as Python's json.dumps, outside strings only. */
function pythonSeparators(s: string): string {
  let out = '';
  let inStr = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    out += c;
    if (inStr) {
      if (c === '\\') out += s[++i] ?? '';
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === ',' || c === ':') out += ' ';
  }
  return out;
}

const bool = (v: unknown, d: boolean) => (typeof v === 'boolean' ? v : d);
const text = (t: string): ToolMessage[] => [{ type: 'text', text: t }];
const asText = (v: unknown, ensureAscii: boolean) => (typeof v === 'string' ? v : dumps(v, ensureAscii));

const content = { name: 'content', type: 'string', form: 'llm', required: true, llmDescription: 'JSON content' } as const;
const ensureAscii = { name: 'ensure_ascii', type: 'boolean', form: 'form', required: false, default: true } as const;

const parse: Tool = {
  name: 'parse',
  description: 'A tool for extracting JSON objects',
  parameters: [content, { name: 'json_filter', type: 'string', form: 'llm', required: false, llmDescription: 'JSON path to extract' }, ensureAscii],
  async invoke(p) {
    const data = parseContent(p.content);
    const ea = bool(p.ensure_ascii, true);
    const filter = typeof p.json_filter === 'string' ? p.json_filter : '';
    if (filter.trim() === '') return text(asText(data, ea));
    const found = findAll(data, parsePath(filter)).map((m) => m.value);
    const result = found.length === 0 ? '' : found.length === 1 ? found[0] : found;
    return text(asText(result, ea));
  },
};

function decodeValue(v: unknown, decode: boolean): unknown {
  if (!decode || typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

const insert: Tool = {
  name: 'insert',
  description: 'A tool for inserting JSON objects',
  parameters: [
    content,
    { name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'JSON path of the insertion point' },
    { name: 'new_value', type: 'string', form: 'llm', required: true },
    { name: 'index', type: 'number', form: 'llm', required: false },
    { name: 'create_path', type: 'boolean', form: 'form', required: false, default: false },
    { name: 'value_decode', type: 'boolean', form: 'form', required: false, default: false },
    ensureAscii,
  ],
  async invoke(p) {
    const data = parseContent(p.content);
    const value = decodeValue(p.new_value, bool(p.value_decode, false));
    const steps = parsePath(String(p.query ?? ''));
    const matches = findAll(data, steps);
    if (matches.length === 0 && bool(p.create_path, false) && steps.length > 0 && !steps.includes('*')) {
      let node = data as Record<string, unknown>;
      for (const s of steps.slice(0, -1)) {
        const k = String(s);
        if (node[k] === null || typeof node[k] !== 'object') node[k] = {};
        node = node[k] as Record<string, unknown>;
      }
      node[String(steps[steps.length - 1])] = value;
    }
    for (const m of matches) {
      if (Array.isArray(m.value)) {
        const idx = typeof p.index === 'number' ? p.index : m.value.length;
        m.value.splice(idx, 0, value);
      } else if (m.value !== null && typeof m.value === 'object') {
        if (value !== null && typeof value === 'object' && !Array.isArray(value)) Object.assign(m.value, value);
        else throw new ToolError('Cannot insert a non-object value into an object');
      } else if (m.parent !== undefined && m.key !== undefined) {
        (m.parent as Record<string | number, unknown>)[m.key] = [m.value, value];
      }
    }
    return text(dumps(data, bool(p.ensure_ascii, true)));
  },
};

const replace: Tool = {
  name: 'replace',
  description: 'A tool for replacing JSON content',
  parameters: [
    content,
    { name: 'query', type: 'string', form: 'llm', required: true },
    { name: 'replace_pattern', type: 'string', form: 'llm', required: false },
    { name: 'replace_value', type: 'string', form: 'llm', required: true },
    { name: 'replace_model', type: 'select', form: 'form', required: true, default: 'pattern', options: ['pattern', 'key', 'value'] },
    { name: 'value_decode', type: 'boolean', form: 'form', required: false, default: false },
    ensureAscii,
  ],
  async invoke(p) {
    const data = parseContent(p.content);
    const mode = String(p.replace_model ?? 'pattern');
    const value = decodeValue(p.replace_value, bool(p.value_decode, false));
    for (const m of findAll(data, parsePath(String(p.query ?? '')))) {
      if (m.parent === undefined || m.key === undefined) continue;
      const parent = m.parent as Record<string | number, unknown>;
      if (mode === 'key') {
        if (Array.isArray(parent)) continue;
        const entries = Object.entries(parent).map(([k, v]) => [k === m.key ? String(value) : k, v] as const);
        for (const k of Object.keys(parent)) delete parent[k];
        for (const [k, v] of entries) parent[k] = v;
      } else if (mode === 'value') parent[m.key] = value;
      else if (typeof m.value === 'string') parent[m.key] = m.value.split(String(p.replace_pattern ?? '')).join(String(value));
    }
    return text(dumps(data, bool(p.ensure_ascii, true)));
  },
};

const del: Tool = {
  name: 'delete',
  description: 'A tool for deleting JSON content',
  parameters: [content, { name: 'query', type: 'string', form: 'llm', required: true }, ensureAscii],
  async invoke(p) {
    const data = parseContent(p.content);
    const matches = findAll(data, parsePath(String(p.query ?? '')));
    // delete array elements from the highest index down so earlier indexes stay valid
    for (const m of matches.reverse()) {
      if (m.parent === undefined || m.key === undefined) continue;
      if (Array.isArray(m.parent)) m.parent.splice(m.key as number, 1);
      else delete (m.parent as Record<string, unknown>)[m.key as string];
    }
    return text(dumps(data, bool(p.ensure_ascii, true)));
  },
};

/** Dify's `json_process` provider (parse, insert, replace, delete). */
export const jsonProcessProvider: ToolProvider = { name: 'json_process', tools: [parse, insert, replace, del] };

const jsonParse: Tool = {
  name: 'json_parse',
  description: 'Parses a JSON string',
  parameters: [{ name: 'json_string', type: 'string', form: 'llm', required: true }],
  async invoke(p) {
    if (typeof p.json_string !== 'string') throw new ToolError('json_parse: the json_string parameter must be a string', 'ToolParameterError');
    let parsed: unknown;
    try {
      parsed = JSON.parse(p.json_string);
    } catch (err) {
      throw new ToolError(`json_parse: invalid JSON: ${(err as Error).message}`);
    }
    return [{ type: 'json', json: parsed as Record<string, unknown> }, { type: 'variable', name: 'result', value: parsed }];
  },
};

/** The `builtin` provider of older Dovetail apps: `json_parse` (output `result`). */
export const builtinProvider: ToolProvider = { name: 'builtin', tools: [jsonParse] };
