import { invalidParam } from '../../infra/errors.js';
import { isObject } from '../../infra/objects.js';

/** A metadata field's value on a document. */
export type MetadataValue = string | number | null;

/** Dify's `SupportedComparisonOperator`. */
export const COMPARISON_OPERATORS = [
  'contains',
  'not contains',
  'start with',
  'end with',
  'is',
  'is not',
  'empty',
  'not empty',
  'in',
  'not in',
  '=',
  '≠',
  '>',
  '<',
  '≥',
  '≤',
  'before',
  'after',
] as const;
export type ComparisonOperator = (typeof COMPARISON_OPERATORS)[number];

export const LOGICAL_OPERATORS = ['and', 'or'] as const;
export type LogicalOperator = (typeof LOGICAL_OPERATORS)[number];

export type ConditionValue = string | number | readonly string[];

export interface MetadataCondition {
  readonly name: string;
  readonly operator: ComparisonOperator;
  readonly value: ConditionValue;
}

/**
 * `retrieval_model.metadata_filtering_conditions`. Conditions whose `value` is null (other than
 * `empty` / `not empty`) are dropped, as Dify drops them; with none left nothing is filtered.
 */
export interface MetadataFilter {
  readonly logicalOperator: LogicalOperator;
  readonly conditions: readonly MetadataCondition[];
}

const NUMERIC: ReadonlySet<ComparisonOperator> = new Set(['>', '<', '≥', '≤', 'before', 'after']);

/** Validates Dify's `MetadataFilteringCondition`; `undefined` when absent or null. */
export function parseMetadataFilter(raw: unknown, at = 'retrieval_model.metadata_filtering_conditions'): MetadataFilter | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isObject(raw)) throw invalidParam(`${at} must be an object.`);
  const logical = raw.logical_operator ?? 'and';
  if (!LOGICAL_OPERATORS.includes(logical as LogicalOperator)) throw invalidParam(`${at}.logical_operator must be one of ${LOGICAL_OPERATORS.join(', ')}.`);
  const list = raw.conditions ?? [];
  if (!Array.isArray(list)) throw invalidParam(`${at}.conditions must be a list.`);
  const conditions: MetadataCondition[] = [];
  list.forEach((c: unknown, i) => {
    const ca = `${at}.conditions[${i}]`;
    if (!isObject(c)) throw invalidParam(`${ca} must be an object.`);
    if (typeof c.name !== 'string' || c.name === '') throw invalidParam(`${ca}.name is required.`);
    const op = c.comparison_operator;
    if (!COMPARISON_OPERATORS.includes(op as ComparisonOperator)) throw invalidParam(`${ca}.comparison_operator must be one of ${COMPARISON_OPERATORS.join(', ')}.`);
    const operator = op as ComparisonOperator;
    const v = c.value;
    if (operator === 'empty' || operator === 'not empty') {
      conditions.push({ name: c.name, operator, value: '' });
      return;
    }
    if (v === undefined || v === null) return;
    const ok = typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
    if (!ok) throw invalidParam(`${ca}.value must be a string, a number or a list of strings.`);
    if (NUMERIC.has(operator) && asNumber(v as MetadataValue) === null) throw invalidParam(`${ca}.value must be a number for ${operator}.`);
    conditions.push({ name: c.name, operator, value: v as ConditionValue });
  });
  return { logicalOperator: logical as LogicalOperator, conditions };
}

/** The text of a JSON value (`->>`): numbers print as numbers. */
function asText(v: MetadataValue | undefined): string | null {
  if (v === undefined || v === null) return null;
  return typeof v === 'string' ? v : String(v);
}

/** A value as a number, or null when it is not one (such a document never matches a comparison). */
function asNumber(v: MetadataValue | undefined | ConditionValue): number | null {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string' || v.trim() === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/**
 * One condition on one document's values, with SQL's NULL semantics as in Dify's filter: a missing
 * value satisfies only `empty` and `not in []`.
 */
function test(c: MetadataCondition, values: ReadonlyMap<string, MetadataValue>): boolean {
  const stored = values.get(c.name);
  const text = asText(stored);
  const num = () => asNumber(stored ?? null);
  const cmp = (f: (a: number, b: number) => boolean): boolean => {
    const a = num();
    const b = asNumber(c.value);
    return a !== null && b !== null && f(a, b);
  };
  switch (c.operator) {
    case 'contains':
      return text !== null && text.includes(String(c.value));
    case 'not contains':
      return text !== null && !text.includes(String(c.value));
    case 'start with':
      return text !== null && text.startsWith(String(c.value));
    case 'end with':
      return text !== null && text.endsWith(String(c.value));
    case 'is':
    case '=':
      if (typeof c.value === 'number') return cmp((a, b) => a === b);
      return text !== null && text === String(c.value);
    case 'is not':
    case '≠':
      if (typeof c.value === 'number') return cmp((a, b) => a !== b);
      return text !== null && text !== String(c.value);
    case 'empty':
      return stored === undefined || stored === null;
    case 'not empty':
      return stored !== undefined && stored !== null;
    case 'before':
    case '<':
      return cmp((a, b) => a < b);
    case 'after':
    case '>':
      return cmp((a, b) => a > b);
    case '≤':
      return cmp((a, b) => a <= b);
    case '≥':
      return cmp((a, b) => a >= b);
    case 'in':
    case 'not in': {
      const list = typeof c.value === 'string' ? c.value.split(',').map((x) => x.trim()).filter((x) => x !== '') : Array.isArray(c.value) ? [...c.value] : [String(c.value)];
      if (list.length === 0) return c.operator === 'not in';
      if (text === null) return false;
      return list.includes(text) === (c.operator === 'in');
    }
  }
}

/** Whether a document with these values (by field name) passes the filter. */
export function matchesFilter(filter: MetadataFilter, values: ReadonlyMap<string, MetadataValue>): boolean {
  if (filter.conditions.length === 0) return true;
  return filter.logicalOperator === 'and' ? filter.conditions.every((c) => test(c, values)) : filter.conditions.some((c) => test(c, values));
}
