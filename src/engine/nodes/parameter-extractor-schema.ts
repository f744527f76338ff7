import { pyStr, pyTypeName } from './python-json.js';
import { isObject } from './shared.js';

/** Parameter types after Dify's import mapping (`bool` → `boolean`, `select` → `string` with options). */
const TYPES = ['string', 'number', 'boolean', 'array[string]', 'array[number]', 'array[object]', 'array[boolean]'] as const;
export type ParameterType = (typeof TYPES)[number];
const LEGACY: Readonly<Record<string, ParameterType>> = { bool: 'boolean', select: 'string' };

/** One of the node's `parameters`, as Dify's `ParameterConfig` reads it. */
export interface ParameterSpec {
  readonly name: string;
  readonly type: ParameterType;
  readonly options: readonly string[] | null;
  readonly description: string;
  readonly required: boolean;
}

/** Reads `parameters`; throws Dify's messages (naming the item) for a bad name or type. */
export function parametersOf(raw: unknown): ParameterSpec[] {
  if (!Array.isArray(raw)) throw new Error('parameters must be a list');
  const seen = new Set<string>();
  return raw.map((p, i) => {
    if (!isObject(p)) throw new Error(`parameters[${i}] must be a mapping`);
    if (typeof p.name !== 'string' || p.name === '') throw new Error(`parameters[${i}].name: Parameter name is required`);
    if (p.name === '__reason' || p.name === '__is_success') throw new Error(`parameters[${i}].name: Invalid parameter name, __reason and __is_success are reserved`);
    if (seen.has(p.name)) throw new Error(`parameters[${i}].name: ${p.name} is used by another parameter`);
    seen.add(p.name);
    const t = typeof p.type === 'string' ? p.type : String(p.type);
    const type = LEGACY[t] ?? ((TYPES as readonly string[]).includes(t) ? (t as ParameterType) : undefined);
    if (!type) throw new Error(`parameters[${i}].type: type ${t} is not allowd to use in Parameter Extractor node.`);
    if (p.options !== undefined && p.options !== null && !(Array.isArray(p.options) && p.options.every((o) => typeof o === 'string'))) {
      throw new Error(`parameters[${i}].options must be a list of strings`);
    }
    const options = Array.isArray(p.options) ? (p.options as string[]) : null;
    return { name: p.name, type, options, description: typeof p.description === 'string' ? p.description : '', required: p.required === true };
  });
}

/** Dify's `get_parameter_json_schema`: the arguments schema of the extraction function. */
export function parameterJsonSchema(params: readonly ParameterSpec[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const p of params) {
    const s: Record<string, unknown> = { description: p.description };
    if (p.type.startsWith('array[')) {
      s.type = 'array';
      s.items = { type: p.type.slice(6, -1) };
    } else s.type = p.type;
    if (p.options && p.options.length > 0) s.enum = p.options;
    properties[p.name] = s;
    if (p.required) required.push(p.name);
  }
  return { type: 'object', properties, required };
}

/** What `parameters` looks like in the node's inputs (Dify's `jsonable_encoder` of the validated list). */
export function parametersForInputs(params: readonly ParameterSpec[]): Record<string, unknown>[] {
  return params.map((p) => ({ name: p.name, type: p.type, options: p.options, description: p.description, required: p.required }));
}

/** Why a model's answer did not check out (Dify's `ParameterExtractorNodeError` family). */
export class ExtractionError extends Error {}

function elementOf(type: ParameterType): 'string' | 'number' | 'object' | 'boolean' {
  return type.slice(6, -1) as 'string' | 'number' | 'object' | 'boolean';
}

/** Dify's `SegmentType.is_valid` (a Python bool is an int, so `true` is a valid number). */
function isValid(type: ParameterType | 'object', v: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number' || typeof v === 'boolean';
    case 'boolean':
      return typeof v === 'boolean';
    case 'object':
      return isObject(v);
    default:
      return Array.isArray(v) && v.every((x) => isValid(elementOf(type), x));
  }
}

/** Dify's `SegmentType.infer_segment_type`, as its error message names it. */
function inferType(v: unknown): string {
  if (Array.isArray(v)) {
    const kinds = new Set(v.map(inferType));
    if (kinds.size !== 1) return [...kinds].every((k) => k === 'integer' || k === 'float' || k === 'number') ? 'array[number]' : 'array[any]';
    const only = [...kinds][0]!;
    if (only.startsWith('array[')) return 'array[any]';
    return only === 'integer' || only === 'float' ? 'array[number]' : only === 'none' ? 'array[any]' : `array[${only}]`;
  }
  if (v === null || v === undefined) return 'none';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'float';
  if (typeof v === 'string') return 'string';
  return 'object';
}

/**
 * Dify's `_validate_result`: as many values as parameters, required ones present, each of its
 * type, a `select` value among its options. Throws `ExtractionError` with Dify's message.
 */
export function checkResult(params: readonly ParameterSpec[], result: Readonly<Record<string, unknown>>): void {
  if (params.length !== Object.keys(result).length) throw new ExtractionError('Invalid number of parameters');
  for (const p of params) {
    if (p.required && !(p.name in result)) throw new ExtractionError(`Parameter ${p.name} is required`);
    const v = result[p.name] ?? null;
    if (!isValid(p.type, v)) {
      throw new ExtractionError(
        `Invalid value for parameter ${p.name}, expected segment type: ${p.type}, actual_type: ${inferType(v)}, python_type: ${pyTypeName(v)}, value: ${pyStr(v)}`,
      );
    }
    if (p.type === 'string' && p.options && p.options.length > 0 && !p.options.includes(v as string)) {
      throw new ExtractionError(`Invalid \`select\` value for parameter ${p.name}`);
    }
  }
}

const UNSET = Symbol('unset');

/** Python's `int(s)` / `float(s)` as Dify picks them (a `.` means float); undefined when it fails. */
function numberFromText(s: string): number | undefined {
  const t = s.trim().replace(/(\d)_(?=\d)/g, '$1');
  if (s.includes('.')) return /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t) ? Number(t) : undefined;
  return /^[+-]?\d+$/.test(t) ? Number(t) : undefined;
}

function transformScalar(kind: 'string' | 'number' | 'boolean' | 'object', v: unknown, inArray: boolean): unknown {
  switch (kind) {
    case 'number':
      if (typeof v === 'boolean') return v ? 1 : 0;
      if (typeof v === 'number') return v;
      if (typeof v === 'string') return numberFromText(v) ?? UNSET;
      return UNSET;
    case 'boolean':
      // Dify takes a bool or an int as a boolean value, but only a bool inside an array.
      if (typeof v === 'boolean') return v;
      if (!inArray && typeof v === 'number' && Number.isInteger(v)) return v !== 0;
      return UNSET;
    case 'string':
      return typeof v === 'string' ? v : UNSET;
    case 'object':
      return isObject(v) ? v : UNSET;
  }
}

/** A parameter's zero value (Dify's `_build_default_parameter_value`). */
function zeroOf(type: ParameterType): unknown {
  return type.startsWith('array[') ? [] : type === 'string' ? '' : type === 'number' ? 0 : false;
}

/**
 * Dify's `_transform_result`: each parameter's value coerced to its type (numbers from text,
 * booleans from integers, array items that do not fit dropped), its zero value when missing or
 * not coercible.
 */
export function transformResult(params: readonly ParameterSpec[], result: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of params) {
    let v: unknown = UNSET;
    if (p.name in result) {
      const raw = result[p.name];
      if (p.type.startsWith('array[')) {
        v = Array.isArray(raw) ? raw.map((x) => transformScalar(elementOf(p.type), x, true)).filter((x) => x !== UNSET) : UNSET;
      } else v = transformScalar(p.type as 'string' | 'number' | 'boolean', raw, false);
    }
    out[p.name] = v === UNSET ? zeroOf(p.type) : v;
  }
  return out;
}

/** Dify's `_generate_default_result` (used when the answer holds no JSON): numbers, booleans and strings only. */
export function defaultResult(params: readonly ParameterSpec[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of params) if (p.type === 'number' || p.type === 'boolean' || p.type === 'string') out[p.name] = zeroOf(p.type);
  return out;
}
