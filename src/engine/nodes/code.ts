import { failedWith, NodeFailure, type CodeOutputLimits, type GraphNode, type NodeHandler } from '../types.js';
import { isObject, variableList } from './shared.js';

const LANGUAGES = ['python3', 'javascript'] as const;
type Language = (typeof LANGUAGES)[number];

/** A declared output: `{type, children}` (children only for `object`). */
interface OutputDecl {
  readonly type: string;
  readonly children: Readonly<Record<string, OutputDecl>> | null;
}

const OUTPUT_TYPES = ['string', 'number', 'object', 'boolean', 'array[string]', 'array[number]', 'array[object]', 'array[boolean]'];

function outputsOf(raw: unknown, field: string): Record<string, OutputDecl> {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) throw new Error(`${field} must be a mapping of output names to {type}`);
  const out: Record<string, OutputDecl> = {};
  for (const [name, d] of Object.entries(raw)) {
    if (!isObject(d) || typeof d.type !== 'string' || !OUTPUT_TYPES.includes(d.type)) {
      throw new Error(`${field}.${name}.type must be one of ${OUTPUT_TYPES.join(', ')}`);
    }
    out[name] = { type: d.type, children: d.type === 'object' && isObject(d.children) ? outputsOf(d.children, `${field}.${name}.children`) : null };
  }
  return out;
}

function specOf(node: GraphNode): { language: Language; code: string; outputs: Record<string, OutputDecl> } {
  const d = node.data;
  if (typeof d.code_language !== 'string' || !(LANGUAGES as readonly string[]).includes(d.code_language)) {
    throw new Error(`code_language "${String(d.code_language)}" is not supported (supported: ${LANGUAGES.join(', ')})`);
  }
  if (typeof d.code !== 'string' || d.code.trim() === '') throw new Error('code must be a non-empty string');
  variableList(d.variables, 'variables');
  return { language: d.code_language as Language, code: d.code, outputs: outputsOf(d.outputs, 'outputs') };
}

/** Dify's code output checks (`CodeNode._transform_result`): declared names, types, sizes, depth. */
export function checkOutputs(result: unknown, decls: Readonly<Record<string, OutputDecl>>, limits: CodeOutputLimits, prefix = '', depth = 1): Record<string, unknown> {
  if (depth > limits.maxDepth) throw new Error(`Depth limit ${limits.maxDepth} reached (CODE_MAX_DEPTH), object too deep.`);
  if (!isObject(result)) throw new Error(`${prefix ? `Output ${prefix}` : 'The result of main'} must be a dict (object), got ${Array.isArray(result) ? 'a list' : result === null ? 'null' : typeof result}.`);
  const str = (v: unknown, name: string): string | null => {
    if (v === null) return null;
    if (typeof v !== 'string') throw new Error(`Output variable \`${name}\` must be a string`);
    if (v.length > limits.maxStringLength) throw new Error(`The length of output variable \`${name}\` must be less than ${limits.maxStringLength} characters (CODE_MAX_STRING_LENGTH)`);
    return v;
  };
  const num = (v: unknown, name: string): number | null => {
    if (v === null) return null;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`Output variable \`${name}\` must be a number`);
    if (!Number.isInteger(v) && (String(v).split('.')[1]?.length ?? 0) > limits.maxPrecision) {
      throw new Error(`Output variable \`${name}\` has too high precision: more than ${limits.maxPrecision} decimal places (CODE_MAX_PRECISION)`);
    }
    return v;
  };
  const bool = (v: unknown, name: string): boolean | null => {
    if (v === null || typeof v === 'boolean') return v;
    throw new Error(`Output variable \`${name}\` must be a boolean`);
  };
  const arr = (v: unknown, name: string, max: number, limitName: string): unknown[] | null => {
    if (v === null) return null;
    if (!Array.isArray(v)) throw new Error(`Output variable \`${name}\` must be an array, got ${typeof v} instead`);
    if (v.length > max) throw new Error(`The length of output variable \`${name}\` must be less than ${max} elements (${limitName})`);
    return v;
  };
  const out: Record<string, unknown> = {};
  for (const [key, decl] of Object.entries(decls)) {
    const name = `${prefix}${key}`;
    if (!(key in result)) throw new Error(`Output ${name} is missing.`);
    const v = result[key];
    switch (decl.type) {
      case 'string':
        out[key] = str(v, name);
        break;
      case 'number':
        out[key] = num(v, name);
        break;
      case 'boolean':
        out[key] = bool(v, name);
        break;
      case 'object':
        if (v === null) out[key] = null;
        else if (!isObject(v)) throw new Error(`Output variable \`${name}\` must be an object, got ${Array.isArray(v) ? 'an array' : typeof v} instead`);
        else out[key] = decl.children ? checkOutputs(v, decl.children, limits, `${name}.`, depth + 1) : checkDepth(v, limits, depth + 1);
        break;
      case 'array[string]':
        out[key] = arr(v, name, limits.maxStringArrayLength, 'CODE_MAX_STRING_ARRAY_LENGTH')?.map((x, i) => str(x, `${name}[${i}]`)) ?? null;
        break;
      case 'array[number]':
        out[key] = arr(v, name, limits.maxNumberArrayLength, 'CODE_MAX_NUMBER_ARRAY_LENGTH')?.map((x, i) => num(x, `${name}[${i}]`)) ?? null;
        break;
      case 'array[boolean]':
        out[key] = arr(v, name, limits.maxNumberArrayLength, 'CODE_MAX_NUMBER_ARRAY_LENGTH')?.map((x, i) => bool(x, `${name}[${i}]`)) ?? null;
        break;
      case 'array[object]':
        out[key] =
          arr(v, name, limits.maxObjectArrayLength, 'CODE_MAX_OBJECT_ARRAY_LENGTH')?.map((x, i) => {
            if (x === null) return null;
            if (!isObject(x)) throw new Error(`Output variable \`${name}[${i}]\` must be an object, got ${typeof x} instead`);
            return checkDepth(x, limits, depth + 1);
          }) ?? null;
        break;
    }
  }
  if (Object.keys(result).length !== Object.keys(out).length) {
    const extra = Object.keys(result).filter((k) => !(k in decls));
    throw new Error(`Not all output parameters are validated: ${extra.map((k) => prefix + k).join(', ')} not declared in outputs.`);
  }
  return out;
}

function checkDepth(v: unknown, limits: CodeOutputLimits, depth: number): unknown {
  if (depth > limits.maxDepth) throw new Error(`Depth limit ${limits.maxDepth} reached (CODE_MAX_DEPTH), object too deep.`);
  if (Array.isArray(v)) for (const x of v) checkDepth(x, limits, depth + 1);
  else if (isObject(v)) for (const x of Object.values(v)) checkDepth(x, limits, depth + 1);
  return v;
}

/**
 * Runs `main` of the node's python3 / javascript code with its variables as arguments through the
 * code executor port, then checks the result against the declared `outputs` as Dify does.
 */
export const codeNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  async run(ctx) {
    const spec = specOf(ctx.node);
    const inputs: Record<string, unknown> = {};
    for (const v of variableList(ctx.node.data.variables, 'variables')) inputs[v.variable] = ctx.pool.get(v.selector) ?? null;
    const executor = ctx.ports.code;
    if (!executor) throw new NodeFailure('no code executor is configured on this server', 'CodeNodeError', false);
    let result: unknown;
    try {
      result = await executor.run({ language: spec.language, code: spec.code, inputs, appId: ctx.appId }, ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      const message = (err as Error).message || 'code execution failed';
      const failed = <E>(e: E): E => failedWith(e, { inputs });
      // a module the code node Python does not have: say what to configure (as `app check` does)
      const missing = /ModuleNotFoundError: No module named '([^']+)'/.exec(message)?.[1];
      if (missing && spec.language === 'python3') {
        const advice = executor.missingModuleAdvice?.(missing) ?? `python module ${missing} is not installed`;
        throw failed(new NodeFailure(`${message} (${advice})`, 'CodeNodeError', false, { cause: err }));
      }
      throw failed(new NodeFailure(message, 'CodeNodeError', true, { cause: err }));
    }
    let outputs: Record<string, unknown>;
    try {
      outputs = checkOutputs(result, spec.outputs, ctx.ports.limits.code);
    } catch (err) {
      throw failedWith(new NodeFailure((err as Error).message, 'OutputValidationError', false), { inputs });
    }
    return { type: 'succeeded', inputs, outputs };
  },
};
