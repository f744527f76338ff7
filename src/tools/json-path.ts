import { ToolError } from './tool.js';

/** One step of a path: an object key or an array index (`*` = every element / value). */
type Step = string | number | '*';

/**
 * The JSONPath subset the json_process tools accept: `$`, `.key`, `['key']`, `[n]`, `[*]`, `.*`.
 * Linear in the path; filters and recursive descent are refused with a clear error.
 */
export function parsePath(path: string): Step[] {
  const src = path.trim();
  let i = src.startsWith('$') ? 1 : 0;
  const steps: Step[] = [];
  if (i === 0 && src !== '' && !src.startsWith('.') && !src.startsWith('[')) {
    // a bare `a.b` path as Dify's tools accept it
    return src.split('.').map((k) => (k === '*' ? '*' : k));
  }
  while (i < src.length) {
    const c = src[i];
    if (c === '.') {
      if (src[i + 1] === '.') throw new ToolError(`JSON path "${path}": recursive descent (..) is not supported`, 'ToolParameterError');
      const m = /^[^.[\]]+/.exec(src.slice(i + 1));
      if (!m) throw new ToolError(`JSON path "${path}": a key is missing after "." at ${i}`, 'ToolParameterError');
      steps.push(m[0] === '*' ? '*' : m[0]);
      i += 1 + m[0].length;
    } else if (c === '[') {
      const end = src.indexOf(']', i);
      if (end < 0) throw new ToolError(`JSON path "${path}": "[" without "]"`, 'ToolParameterError');
      const inner = src.slice(i + 1, end).trim();
      if (inner === '*') steps.push('*');
      else if (/^-?\d+$/.test(inner)) steps.push(Number(inner));
      else if (/^(['"]).*\1$/.test(inner)) steps.push(inner.slice(1, -1));
      else throw new ToolError(`JSON path "${path}": "[${inner}]" is not supported (keys, indexes and * only)`, 'ToolParameterError');
      i = end + 1;
    } else {
      throw new ToolError(`JSON path "${path}": unexpected "${c}" at ${i}`, 'ToolParameterError');
    }
  }
  return steps;
}

/** A matched location: its container and the key in it (undefined for the root). */
export interface Match {
  readonly parent: Record<string, unknown> | unknown[] | undefined;
  readonly key: string | number | undefined;
  readonly value: unknown;
}

/** Every location the path matches in `root`. */
export function findAll(root: unknown, steps: readonly Step[]): Match[] {
  let current: Match[] = [{ parent: undefined, key: undefined, value: root }];
  for (const step of steps) {
    const next: Match[] = [];
    for (const m of current) {
      const v = m.value;
      if (Array.isArray(v)) {
        if (step === '*') v.forEach((x, k) => next.push({ parent: v, key: k, value: x }));
        else if (typeof step === 'number') {
          const k = step < 0 ? v.length + step : step;
          if (k >= 0 && k < v.length) next.push({ parent: v, key: k, value: v[k] });
        }
      } else if (v !== null && typeof v === 'object') {
        const o = v as Record<string, unknown>;
        if (step === '*') for (const [k, x] of Object.entries(o)) next.push({ parent: o, key: k, value: x });
        else if (Object.hasOwn(o, String(step))) next.push({ parent: o, key: String(step), value: o[String(step)] });
      }
    }
    current = next;
  }
  return current;
}
