import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compare } from '../../src/engine/conditions.js';
import { compileGraph, GraphError } from '../../src/engine/graph.js';
import { completeNode, initialState, readState } from '../../src/engine/run-state.js';
import { VariablePool, templateSegments } from '../../src/engine/variable-pool.js';
import type { DslDocument } from '../../src/apps/dsl.js';
import { endNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';

const doc = (yaml: string) => parse(yaml) as DslDocument;

describe('variable pool and templates', () => {
  it('reads selectors with paths and renders {{#…#}} references', () => {
    const pool = new VariablePool({ n: { obj: { a: [1, 2] }, s: 'x' }, sys: { query: 'q' } });
    expect(pool.get(['n', 'obj', 'a'])).toEqual([1, 2]);
    expect(pool.get(['n', 'missing', 'a'])).toBeUndefined();
    expect(pool.render('{{#n.s#}}-{{#sys.query#}}-{{#n.obj#}}-{{#n.none#}}-{{#$output.f#}}')).toBe('x-q-{"a":[1,2]}--{{#$output.f#}}');
    expect(templateSegments('a{{#n.s#}}b')).toEqual([{ text: 'a' }, { selector: ['n', 's'] }, { text: 'b' }]);
  });
});

describe('comparison operators', () => {
  const cases: [Parameters<typeof compare>[0], unknown, unknown, boolean][] = [
    ['contains', 'hello world', 'hello', true],
    ['contains', 'Hello', 'hello', false],
    ['not contains', ['a', 'b'], 'c', true],
    ['start with', 'abc', 'ab', true],
    ['end with', 'abc', 'bc', true],
    ['is', 'x', 'x', true],
    ['is not', 'x', 'y', true],
    ['empty', '', undefined, true],
    ['not empty', [1], undefined, true],
    ['in', 'b', ['a', 'b'], true],
    ['not in', 'c', ['a', 'b'], true],
    ['all of', ['a', 'b', 'c'], ['a', 'c'], true],
    ['=', 1, '1', true],
    ['≠', 1, '2', true],
    ['>', 3, '2', true],
    ['<', 1, '2', true],
    ['≥', 5, '5', true],
    ['≤', 6, '5', false],
    ['null', null, undefined, true],
    ['not null', 0, undefined, true],
    ['exists', 'x', undefined, true],
    ['not exists', undefined, undefined, true],
  ];
  for (const [op, actual, expected, result] of cases) {
    it(`${JSON.stringify(actual)} ${op} ${JSON.stringify(expected)} → ${result}`, () => expect(compare(op, actual, expected)).toBe(result));
  }
});

describe('graph compile and readiness', () => {
  it('refuses an unsupported node naming id and type', () => {
    expect(() => compileGraph(doc(workflowDsl([startNode(), { id: 'k', type: 'email-sender' }], [['start', 'k']])))).toThrow(GraphError);
    expect(() => compileGraph(doc(workflowDsl([startNode(), { id: 'k', type: 'email-sender' }], [['start', 'k']])))).toThrow(/node k has type "email-sender"/);
  });

  it('refuses knowledge pipeline nodes in a workflow app, naming the node and where they belong', () => {
    const ds = { id: 'k', type: 'datasource', plugin_id: 'langgenius/file', provider_name: 'file', provider_type: 'local_file' };
    expect(() => compileGraph(doc(workflowDsl([startNode(), ds], [['start', 'k']])))).toThrow(/node k \(datasource\) belongs to knowledge pipelines \(kind: rag_pipeline\)/);
  });

  it('knowledge-retrieval: missing dataset_ids or query selector is an import error naming the node', () => {
    const kr = (data: Record<string, unknown>) => () => compileGraph(doc(workflowDsl([startNode(), { id: 'kr', type: 'knowledge-retrieval', ...data }], [['start', 'kr']])));
    expect(kr({ query_variable_selector: ['start', 'q'] })).toThrow('node kr (knowledge-retrieval): dataset_ids must be a non-empty list of dataset ids');
    expect(kr({ query_variable_selector: ['start', 'q'], dataset_ids: [] })).toThrow(/node kr \(knowledge-retrieval\): dataset_ids/);
    expect(kr({ dataset_ids: ['d1'] })).toThrow('node kr (knowledge-retrieval): query_variable_selector must be a list of at least 2 names');
    expect(kr({ query_variable_selector: ['start', 'q'], dataset_ids: ['d1'], retrieval_mode: 'both' })).toThrow(/retrieval_mode/);
    expect(kr({ query_variable_selector: ['start', 'q'], dataset_ids: ['d1'], multiple_retrieval_config: { top_k: 0 } })).toThrow(/multiple_retrieval_config.top_k/);
    expect(kr({ query_variable_selector: ['start', 'q'], dataset_ids: ['d1'], retrieval_mode: 'multiple', multiple_retrieval_config: { top_k: 2, score_threshold: null } })).not.toThrow();
  });

  it('a branch skip propagates until a join that has a taken edge', () => {
    const g = compileGraph(
      doc(
        workflowDsl(
          [startNode(), { id: 'if', type: 'if-else', cases: [{ case_id: 'c', conditions: [{ variable_selector: ['start', 'x'], comparison_operator: 'empty' }] }] }, templateNode('a', 'a'), templateNode('a2', 'a2'), templateNode('b', 'b'), templateNode('j', 'j'), endNode({})],
          [['start', 'if'], ['if', 'a', 'c'], ['a', 'a2'], ['if', 'b', 'false'], ['a2', 'j'], ['b', 'j'], ['j', 'end']],
        ),
      ),
    );
    const st = initialState(g, {});
    expect(completeNode(g, st, 'start')).toEqual(['if']);
    const ready = completeNode(g, st, 'if', (e) => e.handle === 'false');
    expect(ready).toEqual(['b']);
    expect(st.nodes.a).toBe('skipped');
    expect(st.nodes.a2).toBe('skipped');
    expect(st.nodes.j).toBe('unknown');
    expect(completeNode(g, st, 'b')).toEqual(['j']);
  });

  it('a run starting at one trigger skips the other entry points and what only they reach; a shared node waits for the taken edge', () => {
    const g = compileGraph(
      doc(
        workflowDsl(
          [
            { id: 'hook', type: 'trigger-webhook', method: 'post' },
            { id: 'tick', type: 'trigger-schedule', mode: 'cron', cron_expression: '0 * * * *' },
            templateNode('only_tick', 'x'),
            endNode({}),
          ],
          [['hook', 'end'], ['tick', 'only_tick'], ['only_tick', 'end']],
        ),
      ),
    );
    expect(g.entryIds).toEqual(['hook', 'tick']);
    expect(g.startId).toBe('hook');
    const st = initialState(g, {}, 'hook');
    expect(st.pending).toEqual([{ node: 'hook', from: null }]);
    expect(st.nodes).toEqual({ hook: 'unknown', tick: 'skipped', only_tick: 'skipped', end: 'unknown' });
    expect(completeNode(g, st, 'hook')).toEqual(['end']);
    expect(() => initialState(g, {}, 'only_tick')).toThrow(/not an entry point/);
  });

  it('refuses trigger nodes outside workflow apps and edges into an entry point', () => {
    const chat = workflowDsl([startNode(), { id: 'hook', type: 'trigger-webhook' }, endNode({})], [['start', 'end'], ['hook', 'end']], { mode: 'advanced-chat' });
    expect(() => compileGraph(doc(chat))).toThrow(/node hook \(trigger-webhook\): trigger nodes start workflow apps only/);
    const into = workflowDsl([startNode(), { id: 'hook', type: 'trigger-webhook' }, endNode({})], [['start', 'hook'], ['hook', 'end']]);
    expect(() => compileGraph(doc(into))).toThrow(/node hook \(trigger-webhook\) starts the run, so no edge may lead into it/);
    const badType = workflowDsl([{ id: 'hook', type: 'trigger-webhook', params: [{ name: 'p', type: 'object' }] }, endNode({})], [['hook', 'end']]);
    expect(() => compileGraph(doc(badType))).toThrow(GraphError);
  });

  it('the state round-trips through JSON with its version', () => {
    const g = compileGraph(doc(workflowDsl([startNode(), endNode({})], [['start', 'end']])));
    const st = initialState(g, { start: { a: 1 } });
    const back = readState(JSON.parse(JSON.stringify(st)));
    expect(back).toEqual(st);
    expect(() => readState({ ...st, v: 99 })).toThrow(/version 99/);
  });
});
