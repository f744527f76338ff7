/**
 * Python's text forms of JSON-like values, for prompts and messages that Dify builds with
 * `json.dumps` (`", "` and `": "` separators) and `str()` / f-strings.
 */

/** `json.dumps(value)` with Python's default separators; `ensureAscii` escapes non-ASCII as `\uXXXX` (Python's default). */
export function pyJsonDumps(value: unknown, ensureAscii = true): string {
  const str = (s: string) => {
    const json = JSON.stringify(s);
    return ensureAscii ? json.replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')) : json;
  };
  const walk = (v: unknown): string => {
    if (v === null || v === undefined) return 'null';
    if (typeof v === 'string') return str(v);
    if (typeof v === 'number') return Number.isFinite(v) ? String(v) : v > 0 ? 'Infinity' : v < 0 ? '-Infinity' : 'NaN';
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (Array.isArray(v)) return '[' + v.map(walk).join(', ') + ']';
    if (typeof v === 'object') {
      return '{' + Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).map(([k, x]) => `${str(k)}: ${walk(x)}`).join(', ') + '}';
    }
    return str(String(v));
  };
  return walk(value);
}

/** `str(value)` in Python for a JSON value (`True`, `None`, `['a', 1]`, `{'k': 'v'}`). */
export function pyStr(value: unknown): string {
  return typeof value === 'string' ? value : pyRepr(value);
}

function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v.includes("'") && !v.includes('"') ? `"${v}"` : `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (Array.isArray(v)) return '[' + v.map(pyRepr).join(', ') + ']';
  return '{' + Object.entries(v as Record<string, unknown>).map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(', ') + '}';
}

/** `type(value)` in Python for a JSON value, as `str()` shows it (`<class 'int'>`). */
export function pyTypeName(v: unknown): string {
  const name =
    v === null || v === undefined
      ? 'NoneType'
      : typeof v === 'boolean'
        ? 'bool'
        : typeof v === 'number'
          ? Number.isInteger(v) ? 'int' : 'float'
          : typeof v === 'string'
            ? 'str'
            : Array.isArray(v)
              ? 'list'
              : 'dict';
  return `<class '${name}'>`;
}
