import { ParseError } from '../../errors.js';
import { decodeText } from './decode.js';

/** JSON as `path: value` lines, one per scalar (objects in an array become paragraphs). */
export function parseJson(bytes: Buffer): string {
  let value: unknown;
  try {
    value = JSON.parse(decodeText(bytes));
  } catch (err) {
    throw new ParseError(`The JSON file could not be read: ${(err as Error).message}`);
  }
  const lines: string[] = [];
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        walk(item, path ? `${path}[${i}]` : `[${i}]`);
        if (!path && typeof item === 'object' && item !== null) lines.push('');
      });
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k);
    } else {
      lines.push(path ? `${path}: ${String(v)}` : String(v));
    }
  };
  walk(value, '');
  return lines.join('\n').replace(/\n{3,}/g, '\n\n').trim();
}
