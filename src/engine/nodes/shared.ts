/** Small helpers shared by node files. */

import { isObject } from '../../lib/objects.js';

export { isObject };

/** A selector from DSL (`['node', 'var', …]`) or undefined when malformed. */
export function selectorOf(v: unknown): string[] | undefined {
  return Array.isArray(v) && v.length >= 2 && v.every((x) => typeof x === 'string' || typeof x === 'number') ? v.map(String) : undefined;
}

/**
 * `[{variable, value_selector}]` lists (end outputs, template and code variables). A selector of
 * fewer than two names (an output added in the editor and never pointed anywhere, `[]`) is kept:
 * it reads nothing, so the variable is null, as in Dify (its variable pool answers None for it).
 */
export function variableList(v: unknown, field: string): { variable: string; selector: string[] }[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`${field} must be a list`);
  return v.map((item, i) => {
    if (!isObject(item) || typeof item.variable !== 'string') throw new Error(`${field}[${i}].variable must be a string`);
    const raw = item.value_selector;
    if (!Array.isArray(raw) || !raw.every((x) => typeof x === 'string' || typeof x === 'number')) throw new Error(`${field}[${i}].value_selector must be a list of names`);
    return { variable: item.variable, selector: raw.map(String) };
  });
}
