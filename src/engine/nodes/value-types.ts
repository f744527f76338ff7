/** Dify variable types (`number`, `string`, `object`, `boolean`, `array[...]`) and constant parsing. */

/** A DSL constant of `type` as the typed value (numbers and JSON from their text). */
export function constantOf(type: string | undefined, v: unknown): unknown {
  if (typeof v !== 'string') return v;
  if (type === 'number') {
    const n = Number(v);
    return v.trim() === '' || Number.isNaN(n) ? v : n;
  }
  if (type === 'boolean') return v === 'true' ? true : v === 'false' ? false : v;
  if (type === 'object' || type?.startsWith('array')) {
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  }
  return v;
}

/** Whether `v` is a value of Dify type `type` (unknown types accept anything). */
export function hasType(type: string, v: unknown): boolean {
  switch (type) {
    case 'string':
    case 'secret':
    case 'paragraph':
    case 'text-input':
      return typeof v === 'string';
    case 'number':
    case 'integer':
      return typeof v === 'number' && Number.isFinite(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'array[string]':
      return Array.isArray(v) && v.every((x) => typeof x === 'string');
    case 'array[number]':
      return Array.isArray(v) && v.every((x) => typeof x === 'number');
    case 'array[boolean]':
      return Array.isArray(v) && v.every((x) => typeof x === 'boolean');
    case 'array[object]':
      return Array.isArray(v) && v.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x));
    case 'array':
    case 'array[any]':
      return Array.isArray(v);
    default:
      return true;
  }
}
