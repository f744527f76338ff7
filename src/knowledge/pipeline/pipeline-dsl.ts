import { parse as parseYaml, YAMLParseError } from 'yaml';
import { compileGraph, GraphError } from '../../engine/graph.js';
import { NODE_HANDLERS } from '../../engine/nodes/registry.js';
import type { DslDocument } from '../../engine/ports.js';
import type { Graph, ImportWarning } from '../../engine/types.js';
import { invalidParam } from '../../infra/errors.js';
import { isObject } from '../../infra/objects.js';

/** One of a pipeline's input variables (Dify's `rag_pipeline_variables` item). */
export interface PipelineVariable {
  readonly variable: string;
  /** `shared` (every datasource) or the id of the datasource node it belongs to. */
  readonly belong_to_node_id: string;
  readonly type: string;
  readonly label: string;
  readonly required: boolean;
  readonly default_value: unknown;
  readonly [k: string]: unknown;
}

/** A `kind: rag_pipeline` DSL file, checked: its name, its variables and the graph as the engine runs it. */
export interface PipelineDsl {
  readonly name: string;
  /** The document the engine compiles (`kind: rag_pipeline`; `app` stands for the `rag_pipeline` section). */
  readonly doc: DslDocument;
  readonly variables: readonly PipelineVariable[];
}

const VARIABLE_TYPES = ['text-input', 'paragraph', 'select', 'number', 'checkbox', 'file', 'file-list'];

function refuse(message: string): never {
  throw invalidParam(`pipeline DSL: ${message}`);
}

/**
 * Parses Dify's `kind: rag_pipeline` export (the `rag_pipeline` section, `workflow.graph` and
 * `workflow.rag_pipeline_variables`) and compiles its graph: a node the engine cannot run, an edge
 * to nowhere, a pipeline without a datasource or knowledge-index node are refused naming it.
 * Throws `invalid_param` errors.
 */
export function parsePipelineDsl(text: string): PipelineDsl {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const pos = err.linePos?.[0];
      refuse(`invalid YAML${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}: ${err.message.split('\n')[0]}`);
    }
    throw err;
  }
  if (!isObject(raw)) refuse('the file must be a YAML mapping');
  if (raw.kind !== 'rag_pipeline') refuse(`kind must be "rag_pipeline", got ${JSON.stringify(raw.kind ?? null)}${raw.kind === 'app' || raw.kind === undefined ? ' (an app export: import it with `dovetail app import`)' : ''}`);
  const section = raw.rag_pipeline;
  if (!isObject(section)) refuse('the rag_pipeline section (name, description, icon) is missing');
  const name = typeof section.name === 'string' && section.name.trim() ? section.name.trim() : '';
  if (!name) refuse('rag_pipeline.name must be a non-empty string');
  const wf = raw.workflow;
  if (!isObject(wf)) refuse('workflow is required');
  const graph = wf.graph;
  if (!isObject(graph)) refuse('workflow.graph is required');
  if (!Array.isArray(graph.nodes) || graph.nodes.length === 0) refuse('workflow.graph.nodes must be a non-empty list');
  if (!Array.isArray(graph.edges)) refuse('workflow.graph.edges must be a list');
  const ids = new Set<string>();
  graph.nodes.forEach((n: unknown, i: number) => {
    if (!isObject(n) || typeof n.id !== 'string') refuse(`workflow.graph.nodes[${i}].id must be a string`);
    if (!isObject(n.data) || typeof n.data.type !== 'string') refuse(`workflow.graph.nodes[${i}] (id ${n.id}): data.type must be a string`);
    if (ids.has(n.id)) refuse(`workflow.graph.nodes[${i}]: duplicate node id ${n.id}`);
    ids.add(n.id);
  });
  graph.edges.forEach((e: unknown, i: number) => {
    if (!isObject(e) || typeof e.source !== 'string' || typeof e.target !== 'string') refuse(`workflow.graph.edges[${i}] must have string source and target`);
  });
  const variables = checkVariables(wf.rag_pipeline_variables, ids);
  const doc = { ...raw, kind: 'rag_pipeline', app: { mode: 'workflow', name }, workflow: wf } as unknown as DslDocument;
  try {
    compileGraph(doc);
  } catch (err) {
    if (err instanceof GraphError) refuse(err.message);
    throw err;
  }
  return { name, doc, variables };
}

function checkVariables(list: unknown, nodeIds: ReadonlySet<string>): PipelineVariable[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) refuse('workflow.rag_pipeline_variables must be a list');
  const seen = new Set<string>();
  return list.map((v: unknown, i: number) => {
    const at = `workflow.rag_pipeline_variables[${i}]`;
    if (!isObject(v)) refuse(`${at} must be a mapping`);
    if (typeof v.variable !== 'string' || !/^[a-zA-Z_][a-zA-Z0-9_]{0,49}$/.test(v.variable)) refuse(`${at}.variable must be a name (letters, digits, _; at most 50)`);
    const owner = typeof v.belong_to_node_id === 'string' && v.belong_to_node_id ? v.belong_to_node_id : 'shared';
    if (owner !== 'shared' && !nodeIds.has(owner)) refuse(`${at}.belong_to_node_id ${owner} is not a node of the graph`);
    if (typeof v.type !== 'string' || !VARIABLE_TYPES.includes(v.type)) refuse(`${at}.type must be one of ${VARIABLE_TYPES.join(', ')}, got ${JSON.stringify(v.type)}`);
    const key = `${owner}.${v.variable}`;
    if (seen.has(key)) refuse(`${at}: variable ${v.variable} of ${owner} is declared twice`);
    seen.add(key);
    return { ...v, variable: v.variable, belong_to_node_id: owner, type: v.type, label: typeof v.label === 'string' ? v.label : v.variable, required: v.required === true, default_value: v.default_value ?? null };
  });
}

/** The compiled graph of a checked pipeline (it compiled when it was checked). */
export function pipelineGraph(p: PipelineDsl): Graph {
  return compileGraph(p.doc);
}

/**
 * What the pipeline names that this server cannot serve (datasource plugins other than the local
 * file, Jina Reader and Firecrawl): the pipeline is stored, a run that reaches one fails.
 */
export async function pipelineWarnings(p: PipelineDsl, extra: (graph: Graph) => Promise<readonly ImportWarning[]>): Promise<ImportWarning[]> {
  const graph = pipelineGraph(p);
  const out: ImportWarning[] = [];
  for (const node of graph.nodes.values()) {
    const w = await NODE_HANDLERS[node.type].importWarnings?.(node, { providerProblem: () => null });
    if (w) out.push(...w);
  }
  out.push(...(await extra(graph)));
  return out;
}
