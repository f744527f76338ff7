import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compileGraph } from '../../src/engine/graph.js';
import { applyOperation } from '../../src/engine/nodes/assigner.js';
import { checkOutputs } from '../../src/engine/nodes/code.js';
import { loadConfig } from '../../src/config.js';
import type { DslDocument } from '../../src/apps/dsl.js';
import { endNode, startNode, workflowDsl, type NodeSpec } from '../helpers/workflow-dsl.js';

const compile = (nodes: NodeSpec[], edges: [string, string, string?][]) => compileGraph(parse(workflowDsl(nodes, edges)) as DslDocument);
const loop = (extra: Record<string, unknown> = {}): NodeSpec => ({ id: 'loop', type: 'loop', loop_count: 3, break_conditions: [], loop_variables: [], start_node_id: 'loopstart', ...extra });
const loopStart: NodeSpec = { id: 'loopstart', type: 'loop-start', parentId: 'loop' };

describe('assigner (version 2) operations', () => {
  it('applies Dify operations and refuses mismatched types naming the variable', () => {
    expect(applyOperation('+=', 1, 1, 'l.n')).toBe(2);
    expect(applyOperation('-=', 5, '2', 'l.n')).toBe(3);
    expect(applyOperation('*=', 3, 4, 'l.n')).toBe(12);
    expect(applyOperation('/=', 9, 3, 'l.n')).toBe(3);
    expect(applyOperation('over-write', 'a', 'b', 'l.s')).toBe('b');
    expect(applyOperation('set', 1, 7, 'l.n')).toBe(7);
    expect(applyOperation('clear', [1, 2], undefined, 'l.a')).toEqual([]);
    expect(applyOperation('clear', 'x', undefined, 'l.s')).toBe('');
    expect(applyOperation('append', [1], 2, 'l.a')).toEqual([1, 2]);
    expect(applyOperation('extend', [1], [2, 3], 'l.a')).toEqual([1, 2, 3]);
    expect(applyOperation('remove-first', [1, 2, 3], undefined, 'l.a')).toEqual([2, 3]);
    expect(applyOperation('remove-last', [1, 2, 3], undefined, 'l.a')).toEqual([1, 2]);
    expect(() => applyOperation('+=', 'x', 1, 'l.s')).toThrow(/\+= .*l\.s/);
    expect(() => applyOperation('append', 'x', 1, 'l.s')).toThrow(/append.*l\.s is not an array/);
    expect(() => applyOperation('/=', 1, 0, 'l.n')).toThrow(/division by zero/);
  });
});

describe('code node output checks (as Dify)', () => {
  const L = loadConfig({}).code;
  it('keeps declared outputs of the declared types', () => {
    const decl = { s: { type: 'string', children: null }, n: { type: 'array[number]', children: null }, o: { type: 'object', children: null } };
    expect(checkOutputs({ s: 'x', n: [1, 2], o: { a: 1 } }, decl, L)).toEqual({ s: 'x', n: [1, 2], o: { a: 1 } });
    expect(checkOutputs({ s: null, n: null, o: null }, decl, L)).toEqual({ s: null, n: null, o: null });
  });
  it('refuses missing, mistyped, undeclared and oversized outputs, naming the limit', () => {
    const s = { s: { type: 'string', children: null } };
    expect(() => checkOutputs([], s, L)).toThrow('The result of main must be a dict (object), got a list.');
    expect(() => checkOutputs({}, s, L)).toThrow('Output s is missing.');
    expect(() => checkOutputs({ s: 1 }, s, L)).toThrow('Output variable `s` must be a string');
    expect(() => checkOutputs({ s: 'x', t: 1 }, s, L)).toThrow(/Not all output parameters are validated: t/);
    expect(() => checkOutputs({ s: 'xx' }, s, { ...L, maxStringLength: 1 })).toThrow(/less than 1 characters \(CODE_MAX_STRING_LENGTH\)/);
    expect(() => checkOutputs({ a: ['a', 'b'] }, { a: { type: 'array[string]', children: null } }, { ...L, maxStringArrayLength: 1 })).toThrow(/CODE_MAX_STRING_ARRAY_LENGTH/);
    expect(() => checkOutputs({ a: [1, 'b'] }, { a: { type: 'array[number]', children: null } }, L)).toThrow('Output variable `a[1]` must be a number');
    expect(() => checkOutputs({ o: { a: { b: { c: 1 } } } }, { o: { type: 'object', children: null } }, { ...L, maxDepth: 2 })).toThrow(/CODE_MAX_DEPTH/);
    expect(() => checkOutputs({ o: { x: 1 } }, { o: { type: 'object', children: { x: { type: 'string', children: null } } } }, L)).toThrow('Output variable `o.x` must be a string');
  });
});

describe('containers (loop / iteration) at import', () => {
  it('compiles a loop with its child graph apart from the top level', () => {
    const g = compile([startNode(), loop(), loopStart, { id: 'a', type: 'assigner', version: '2', parentId: 'loop', items: [] }, endNode({})], [['start', 'loop'], ['loopstart', 'a'], ['loop', 'end']]);
    expect([...g.nodes.keys()]).toEqual(['start', 'loop', 'end']);
    const sub = g.children.get('loop')!;
    expect(sub.startId).toBe('loopstart');
    expect([...sub.nodes.keys()]).toEqual(['loopstart', 'a']);
  });

  it('refuses broken containers naming the node', () => {
    expect(() => compile([startNode(), loop(), endNode({})], [['start', 'loop'], ['loop', 'end']])).toThrow('node loop (loop) must contain exactly one loop-start node, found 0');
    expect(() => compile([startNode(), { id: 'ls', type: 'loop-start' }], [['start', 'ls']])).toThrow('node ls (loop-start) must be inside a loop node');
    expect(() => compile([startNode(), loop(), loopStart, { id: 'h', type: 'human-input', parentId: 'loop' }], [['start', 'loop'], ['loopstart', 'h']])).toThrow(/node h \(human-input\) cannot run inside a loop or iteration/);
    expect(() => compile([startNode(), loop(), loopStart, endNode({})], [['start', 'loop'], ['loopstart', 'end']])).toThrow(/crosses the border/);
    expect(() => compile([startNode(), loop({ start_node_id: 'other' }), loopStart], [['start', 'loop']])).toThrow(/start_node_id other is not its loop-start node/);
    expect(() => compile([startNode(), loop({ break_conditions: [{ variable_selector: ['loop', 'n'], comparison_operator: '~' }] }), loopStart], [['start', 'loop']])).toThrow(/break_conditions\[0\]\.comparison_operator "~" is not supported/);
    expect(() => compile([startNode(), loop(), loopStart, { id: 'a', type: 'assigner', version: '2', parentId: 'loop', items: [{ variable_selector: ['loop', 'n'], operation: '%=' }] }], [['start', 'loop'], ['loopstart', 'a']])).toThrow(/node a \(assigner\): items\[0\]\.operation "%=" is not supported/);
    expect(() => compile([startNode(), { id: 'c', type: 'code', code_language: 'ruby', code: 'x' }], [['start', 'c']])).toThrow(/node c \(code\): code_language "ruby" is not supported/);
  });

  it('iteration: refuses a bad selector or error_handle_mode naming the node', () => {
    const it0 = (extra: Record<string, unknown>): NodeSpec[] => [startNode(), { id: 'it', type: 'iteration', iterator_selector: ['start', 'xs'], output_selector: ['t', 'output'], ...extra }, { id: 'its', type: 'iteration-start', parentId: 'it' }];
    expect(() => compile(it0({ iterator_selector: 'xs' }), [['start', 'it']])).toThrow('node it (iteration): iterator_selector must be a list of at least 2 names');
    expect(() => compile(it0({ error_handle_mode: 'ignore' }), [['start', 'it']])).toThrow(/node it \(iteration\): error_handle_mode "ignore" is not supported/);
    expect(compile(it0({}), [['start', 'it']]).children.get('it')!.startId).toBe('its');
  });
});

describe('http-request and tool nodes at import', () => {
  const one = (node: NodeSpec) => () => compile([startNode(), node], [['start', node.id]]);
  it('refuses what cannot run, naming the node and field', () => {
    const http = (extra: Record<string, unknown>): NodeSpec => ({ id: 'h', type: 'http-request', method: 'get', url: 'https://example.com', ...extra });
    expect(one(http({}))).not.toThrow();
    expect(one(http({ method: 'fetch' }))).toThrow(/node h \(http-request\): method "fetch" is not supported/);
    expect(one(http({ url: '' }))).toThrow('node h (http-request): url must be a non-empty string');
    expect(one(http({ body: { type: 'binary', data: [] } }))).toThrow(/body.type "binary" is not supported/);
    expect(one(http({ body: { type: 'form-data', data: [{ key: 'f', type: 'file', file: ['start', 'f'] }] } }))).toThrow('node h (http-request): body.data: file fields are not supported');
    expect(one(http({ authorization: { type: 'api-key', config: { type: 'bearer' } } }))).toThrow(/authorization.config.api_key/);
    expect(one(http({ authorization: { type: 'oauth' } }))).toThrow(/authorization.type/);
    const tool = (extra: Record<string, unknown>): NodeSpec => ({ id: 't', type: 'tool', provider_id: 'builtin', tool_name: 'json_parse', tool_parameters: { json_string: 'x' }, ...extra });
    expect(one(tool({}))).not.toThrow();
    // any tool imports (an unknown one fails at run time, naming it); the node's shape is checked
    expect(one(tool({ tool_name: 'current_time', provider_id: 'time' }))).not.toThrow();
    expect(one(tool({ tool_name: '' }))).toThrow('node t (tool): tool_name must be a non-empty string');
    expect(one(tool({ tool_parameters: { q: { type: 'bogus', value: 1 } } }))).toThrow('node t (tool): tool_parameters.q.type must be one of mixed, variable, constant, got "bogus"');
    expect(one(tool({ tool_parameters: null }))).toThrow('node t (tool): tool_parameters must be a mapping');
  });
});
