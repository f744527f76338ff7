/**
 * The run's variables, addressed by selector `[node_id | sys | env | conversation, name, …path]`.
 * Plain JSON inside, so it round-trips through a snapshot unchanged.
 */
export type PoolData = Record<string, Record<string, unknown>>;

/** `{{#node_id.var(.path)*#}}` (Dify's variable template syntax; `{{#$output.x#}}` never matches). */
export const TEMPLATE_REF = /\{\{#([a-zA-Z0-9_]{1,50}(?:\.[a-zA-Z_][a-zA-Z0-9_]{0,29}){1,10})#\}\}/g;

export class VariablePool {
  readonly #data: PoolData;

  constructor(data: PoolData = {}) {
    this.#data = data;
  }

  /** Value at a selector, or undefined when any step is missing. */
  get(selector: readonly unknown[]): unknown {
    if (selector.length < 2) return undefined;
    const scope = this.#data[String(selector[0])];
    if (!scope) return undefined;
    let v: unknown = scope[String(selector[1])];
    for (const key of selector.slice(2)) {
      if (v === null || v === undefined || typeof v !== 'object') return undefined;
      v = (v as Record<string, unknown>)[String(key)];
    }
    return v;
  }

  has(selector: readonly unknown[]): boolean {
    return this.get(selector) !== undefined;
  }

  /** Stores every output of a node under `[nodeId, name]`. */
  setAll(scope: string, values: Readonly<Record<string, unknown>>): void {
    this.#data[scope] = { ...(this.#data[scope] ?? {}), ...values };
  }

  /** Forgets every output of a node (a container's children before each round). */
  remove(scope: string): void {
    delete this.#data[scope];
  }

  /** Replaces each `{{#…#}}` with the value's text (objects as JSON, missing as ""). */
  render(template: string): string {
    return template.replace(TEMPLATE_REF, (_m, path: string) => toText(this.get(path.split('.'))));
  }

  toJSON(): PoolData {
    return this.#data;
  }
}

/** How a value reads inside a text template. */
export function toText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** Splits a template into static text and variable references, in order. */
export function templateSegments(template: string): ({ text: string } | { selector: string[] })[] {
  const out: ({ text: string } | { selector: string[] })[] = [];
  let last = 0;
  for (const m of template.matchAll(TEMPLATE_REF)) {
    if (m.index > last) out.push({ text: template.slice(last, m.index) });
    out.push({ selector: m[1]!.split('.') });
    last = m.index + m[0].length;
  }
  if (last < template.length) out.push({ text: template.slice(last) });
  return out;
}
