/**
 * The one byte range of an HTTP `Range` header (RFC 9110 §14.1.2) a file is served with: `undefined`
 * when the whole file is sent (no header, another unit, several ranges, or a header that does not
 * parse, which the RFC says to ignore), `'unsatisfiable'` for a range that starts past the end
 * (416), else the inclusive `start`–`end`, `end` clamped to the last byte.
 */
export function parseByteRange(header: string | undefined, size: number): { readonly start: number; readonly end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  const first = m[1] === '' ? undefined : Number(m[1]);
  const last = m[2] === '' ? undefined : Number(m[2]);
  if ((first !== undefined && !Number.isSafeInteger(first)) || (last !== undefined && !Number.isSafeInteger(last))) return undefined;
  if (first === undefined) {
    // a suffix: the last `last` bytes
    if (last === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - last!), end: size - 1 };
  }
  if (last !== undefined && last < first) return undefined;
  if (first >= size) return 'unsatisfiable';
  return { start: first, end: Math.min(last ?? size - 1, size - 1) };
}
