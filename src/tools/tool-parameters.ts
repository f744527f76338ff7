import { ToolError, type Tool, type ToolParameter } from './tool.js';

function toBoolean(v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (['true', 'yes', 'y', '1', 'on'].includes(s)) return true;
    if (['false', 'no', 'n', '0', 'off', ''].includes(s)) return false;
  }
  return Boolean(v);
}

function cast(p: ToolParameter, v: unknown, tool: string): unknown {
  switch (p.type) {
    case 'string':
    case 'secret-input':
    case 'select':
      return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
    case 'boolean':
      return toBoolean(v);
    case 'number': {
      if (typeof v === 'number') return v;
      const s = String(v).trim();
      if (s === '') return undefined;
      const n = Number(s);
      if (!Number.isFinite(n)) throw new ToolError(`tool "${tool}": parameter "${p.name}" must be a number, got "${s.slice(0, 100)}"`, 'ToolParameterError');
      return n;
    }
    case 'array':
    case 'object':
      if (typeof v !== 'string') return v;
      try {
        return JSON.parse(v);
      } catch {
        throw new ToolError(`tool "${tool}": parameter "${p.name}" must be JSON (${p.type}), got "${v.slice(0, 100)}"`, 'ToolParameterError');
      }
    default:
      return v;
  }
}

/**
 * Dify's parameter handling before a tool runs: each value cast to its declared type (strings
 * for text and selects, booleans from "true"/"1"/…, numbers from numeric strings, JSON for arrays
 * and objects), defaults filled for absent ones, required ones checked. Unknown names pass as is.
 */
export function prepareParameters(tool: Tool, raw: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  for (const p of tool.parameters) {
    let v = raw[p.name];
    if (v !== undefined && v !== null) v = cast(p, v, tool.name);
    if ((v === undefined || v === null) && p.default !== undefined && p.default !== null) v = p.default;
    if (p.type === 'select' && typeof v === 'string' && v !== '' && p.options && p.options.length > 0 && !p.options.includes(v)) {
      throw new ToolError(`tool "${tool.name}": parameter "${p.name}" must be one of ${p.options.join(', ')}, got "${v.slice(0, 100)}"`, 'ToolParameterError');
    }
    if ((v === undefined || v === null || v === '') && p.required) {
      throw new ToolError(`tool "${tool.name}": the required parameter "${p.name}" is missing`, 'ToolParameterError');
    }
    if (v === undefined) delete out[p.name];
    else out[p.name] = v;
  }
  return out;
}
