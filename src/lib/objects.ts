/** Reading untyped JSON (DSL documents, request bodies, model answers). */

/** A JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `v` when it is a JSON object, else an empty one. */
export function objectOf(v: unknown): Record<string, unknown> {
  return isObject(v) ? v : {};
}
