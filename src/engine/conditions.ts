/** Dify's if-else comparison operators (graphon `utils/condition/processor.py`), with aliases. */
export const COMPARISON_OPERATORS = [
  'contains', 'not contains', 'start with', 'end with', 'is', 'is not', 'empty', 'not empty',
  'in', 'not in', 'all of', '=', '≠', '>', '<', '≥', '≤', 'null', 'not null', 'exists', 'not exists',
] as const;
export type ComparisonOperator = (typeof COMPARISON_OPERATORS)[number];

const ALIASES: Record<string, ComparisonOperator> = { '!=': '≠', '>=': '≥', '<=': '≤', '==': '=' };

export function normalizeOperator(op: unknown): ComparisonOperator | undefined {
  if (typeof op !== 'string') return undefined;
  const o = ALIASES[op] ?? op;
  return (COMPARISON_OPERATORS as readonly string[]).includes(o) ? (o as ComparisonOperator) : undefined;
}

function isEmpty(v: unknown): boolean {
  if (v === null || v === undefined || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object') return Object.keys(v).length === 0;
  return false;
}

function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && v.trim() !== '') return Number(v);
  return NaN;
}

function list(expected: unknown): unknown[] {
  if (Array.isArray(expected)) return expected;
  if (typeof expected === 'string') {
    try {
      const parsed: unknown = JSON.parse(expected);
      if (Array.isArray(parsed)) return parsed;
    } catch {
      // a plain string: one item
    }
    return [expected];
  }
  return [expected];
}

/** Evaluates one comparison of an actual value against the expected (already rendered) value. */
export function compare(op: ComparisonOperator, actual: unknown, expected: unknown): boolean {
  switch (op) {
    case 'contains':
      if (actual === null || actual === undefined) return false;
      if (Array.isArray(actual)) return actual.some((x) => x === expected || String(x) === String(expected));
      return String(actual).includes(String(expected ?? ''));
    case 'not contains':
      return !compare('contains', actual, expected);
    case 'start with':
      return typeof actual === 'string' && actual.startsWith(String(expected ?? ''));
    case 'end with':
      return typeof actual === 'string' && actual.endsWith(String(expected ?? ''));
    case 'is':
      if (typeof actual === 'boolean') return String(actual) === String(expected).toLowerCase();
      return actual !== null && actual !== undefined && String(actual) === String(expected ?? '');
    case 'is not':
      return !compare('is', actual, expected);
    case 'empty':
      return isEmpty(actual);
    case 'not empty':
      return !isEmpty(actual);
    case 'in':
      return list(expected).some((x) => String(x) === String(actual));
    case 'not in':
      return !compare('in', actual, expected);
    case 'all of': {
      const a = Array.isArray(actual) ? actual.map(String) : [];
      return list(expected).every((x) => a.includes(String(x)));
    }
    case '=':
      return num(actual) === num(expected);
    case '≠':
      return num(actual) !== num(expected);
    case '>':
      return num(actual) > num(expected);
    case '<':
      return num(actual) < num(expected);
    case '≥':
      return num(actual) >= num(expected);
    case '≤':
      return num(actual) <= num(expected);
    case 'null':
      return actual === null || actual === undefined;
    case 'not null':
      return actual !== null && actual !== undefined;
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'not exists':
      return actual === undefined || actual === null;
  }
}

/** One parsed condition of an if-else case or a loop's break conditions. */
export interface Condition {
  readonly selector: string[];
  readonly op: ComparisonOperator;
  readonly value: unknown;
  readonly varType: string | undefined;
}

/** Parses `[{variable_selector, comparison_operator, value}]`; throws a message naming `field`. */
export function parseConditions(raw: unknown, field: string): Condition[] {
  if (!Array.isArray(raw)) throw new Error(`${field} must be a list`);
  return raw.map((k: unknown, j: number) => {
    if (typeof k !== 'object' || k === null || Array.isArray(k)) throw new Error(`${field}[${j}] must be a mapping`);
    const c = k as Record<string, unknown>;
    const sel = c.variable_selector;
    if (!Array.isArray(sel) || sel.length < 2 || !sel.every((x) => typeof x === 'string' || typeof x === 'number')) {
      throw new Error(`${field}[${j}].variable_selector must be a list of at least 2 names`);
    }
    const op = normalizeOperator(c.comparison_operator);
    if (!op) throw new Error(`${field}[${j}].comparison_operator "${String(c.comparison_operator)}" is not supported`);
    return { selector: sel.map(String), op, value: c.value, varType: typeof c.varType === 'string' ? c.varType : undefined };
  });
}

/** Whether `conditions` hold (`and`: all, `or`: any; an empty list never holds). */
export function conditionsHold(
  conditions: readonly Condition[],
  logic: 'and' | 'or',
  resolve: (selector: readonly string[]) => unknown,
  render: (template: string) => string,
): boolean {
  if (conditions.length === 0) return false;
  const check = (c: Condition) => compare(c.op, resolve(c.selector), typeof c.value === 'string' ? render(c.value) : c.value);
  return logic === 'and' ? conditions.every(check) : conditions.some(check);
}
