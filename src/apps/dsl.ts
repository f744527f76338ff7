import { yamlLib } from '../infra/yaml.js';
import { DslError } from './errors.js';
import { isObject } from '../infra/objects.js';
import { dslVersionOf, isRawNode, upgradeGraph } from './dsl-upgrade.js';

export const APP_MODES = ['completion', 'chat', 'agent-chat', 'advanced-chat', 'workflow'] as const;
export type AppMode = (typeof APP_MODES)[number];
export function isAppMode(v: unknown): v is AppMode {
  return typeof v === 'string' && (APP_MODES as readonly string[]).includes(v);
}

export interface DslNode {
  readonly id: string;
  readonly data: { readonly type: string; readonly title?: string; readonly [k: string]: unknown };
  readonly [k: string]: unknown;
}
export interface DslEdge {
  readonly id?: string;
  readonly source: string;
  readonly target: string;
  readonly sourceHandle?: string;
  readonly targetHandle?: string;
  readonly [k: string]: unknown;
}

/** A structurally valid Dify DSL document (semantics of nodes are checked by the engine). */
export interface DslDocument {
  readonly app: {
    readonly mode: AppMode;
    readonly name: string;
    readonly description?: string;
    readonly icon?: string;
    readonly [k: string]: unknown;
  };
  readonly kind?: string;
  readonly version?: string;
  readonly model_config?: Record<string, unknown>;
  readonly workflow?: {
    readonly graph: { readonly nodes: readonly DslNode[]; readonly edges: readonly DslEdge[] };
    readonly features?: Record<string, unknown>;
    readonly environment_variables?: readonly Record<string, unknown>[];
    readonly conversation_variables?: readonly Record<string, unknown>[];
    readonly [k: string]: unknown;
  };
  readonly [k: string]: unknown;
}

/** Name of an app imported from a bare graph (no `app` section). */
export const BARE_GRAPH_APP_NAME = 'Imported workflow graph';

/**
 * A bare graph: top-level `nodes` (each with `data.type`) and `edges`, no `app` — what Dify's
 * graph tests load directly (the `builder_restricted` fixtures).
 */
function isBareGraph(doc: Record<string, unknown>): boolean {
  return Array.isArray(doc.nodes) && Array.isArray(doc.edges) && doc.nodes.length > 0 && doc.nodes.every((n) => isObject(n) && isObject(n.data) && typeof n.data.type === 'string');
}

/** A bare graph as a workflow app (see docs/decisions.md). */
function bareGraphApp(doc: Record<string, unknown>): Record<string, unknown> {
  const { nodes, edges, ...rest } = doc;
  return { ...rest, app: { mode: 'workflow', name: BARE_GRAPH_APP_NAME }, kind: 'app', workflow: { graph: { nodes, edges }, features: {} } };
}

/**
 * The structure of an agent-chat app's `model_config.agent_mode` (Dify's export: `enabled`,
 * `strategy`, `max_iteration`, `tools`, `prompt`). Tools that cannot run here are import
 * warnings, not errors (src/apps/import-check.ts).
 */
function checkAgentMode(am: unknown): void {
  if (am === undefined || am === null) return;
  if (!isObject(am)) throw new DslError('model_config.agent_mode must be a mapping');
  if (am.strategy !== undefined && am.strategy !== null && typeof am.strategy !== 'string') throw new DslError('model_config.agent_mode.strategy must be a string');
  const n = am.max_iteration;
  if (n !== undefined && n !== null && !(typeof n === 'number' && Number.isInteger(n) && n >= 1)) {
    throw new DslError(`model_config.agent_mode.max_iteration must be a whole number of at least 1, got ${JSON.stringify(n)}`);
  }
  if (am.tools !== undefined && am.tools !== null) {
    if (!Array.isArray(am.tools)) throw new DslError('model_config.agent_mode.tools must be a list');
    am.tools.forEach((t: unknown, i: number) => {
      if (!isObject(t)) throw new DslError(`model_config.agent_mode.tools[${i}] must be a mapping`);
      if (t.tool_parameters !== undefined && t.tool_parameters !== null && !isObject(t.tool_parameters)) throw new DslError(`model_config.agent_mode.tools[${i}].tool_parameters must be a mapping`);
    });
  }
}

/** Parses and structurally validates DSL YAML; throws DslError naming what is wrong. */
export function parseDsl(text: string): DslDocument {
  let doc: unknown;
  try {
    doc = yamlLib().parse(text);
  } catch (err) {
    if (err instanceof yamlLib().YAMLParseError) {
      const pos = err.linePos?.[0];
      throw new DslError(`invalid YAML${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}: ${err.message.split('\n')[0]}`);
    }
    throw err;
  }
  if (!isObject(doc)) throw new DslError('the DSL must be a YAML mapping with an `app` section');
  if (doc.app === undefined && isBareGraph(doc)) doc = bareGraphApp(doc);
  if (!isObject(doc)) throw new DslError('the DSL must be a YAML mapping with an `app` section');
  if (doc.kind !== undefined && doc.kind !== null && doc.kind !== '' && doc.kind !== 'app') throw new DslError(`kind must be "app", got "${String(doc.kind)}"`);
  // a missing `kind` is an app, a missing `version` 0.1.0 (Dify's importer); a malformed version is refused
  dslVersionOf(doc);
  const app = doc.app;
  if (!isObject(app)) {
    const hint = Array.isArray(doc.nodes) ? ' (top-level `nodes` without `data` are not a Dify graph either)' : '';
    throw new DslError(`missing \`app\` section: this is not a Dify app export${hint}`);
  }
  if (!isAppMode(app.mode)) {
    throw new DslError(`app.mode must be one of ${APP_MODES.join(', ')}; got "${String(app.mode)}"`);
  }
  if (typeof app.name !== 'string' || app.name.trim() === '') throw new DslError('app.name must be a non-empty string');
  if (app.mode === 'completion' || app.mode === 'chat' || app.mode === 'agent-chat') {
    const mc = doc.model_config;
    if (!isObject(mc)) throw new DslError(`model_config is required for ${app.mode} apps`);
    const model = mc.model;
    if (!isObject(model) || typeof model.provider !== 'string' || typeof model.name !== 'string') {
      throw new DslError('model_config.model must have string `provider` and `name`');
    }
    if (mc.user_input_form !== undefined && !Array.isArray(mc.user_input_form)) {
      throw new DslError('model_config.user_input_form must be a list');
    }
    if (app.mode === 'agent-chat') checkAgentMode(mc.agent_mode);
  } else {
    const wf = doc.workflow;
    if (!isObject(wf)) throw new DslError(`workflow is required for ${app.mode} apps`);
    const graph = wf.graph;
    if (!isObject(graph)) throw new DslError('workflow.graph is required');
    if (!Array.isArray(graph.nodes) || graph.nodes.length === 0) throw new DslError('workflow.graph.nodes must be a non-empty list');
    if (!Array.isArray(graph.edges)) throw new DslError('workflow.graph.edges must be a list');
    const ids = new Set<string>();
    graph.nodes.forEach((n: unknown, i: number) => {
      if (!isObject(n) || typeof n.id !== 'string') throw new DslError(`workflow.graph.nodes[${i}].id must be a string`);
      if (!isObject(n.data) || typeof n.data.type !== 'string') {
        throw new DslError(`workflow.graph.nodes[${i}] (id ${n.id}): data.type must be a string`);
      }
      if (ids.has(n.id)) throw new DslError(`workflow.graph.nodes[${i}]: duplicate node id ${n.id}`);
      ids.add(n.id);
    });
    graph.edges.forEach((e: unknown, i: number) => {
      if (!isObject(e) || typeof e.source !== 'string' || typeof e.target !== 'string') {
        throw new DslError(`workflow.graph.edges[${i}] must have string source and target`);
      }
      if (!ids.has(e.source)) throw new DslError(`workflow.graph.edges[${i}]: source ${e.source} is not a node`);
      if (!ids.has(e.target)) throw new DslError(`workflow.graph.edges[${i}]: target ${e.target} is not a node`);
    });
    for (const key of ['environment_variables', 'conversation_variables'] as const) {
      if (wf[key] !== undefined && !Array.isArray(wf[key])) throw new DslError(`workflow.${key} must be a list`);
    }
    const upgraded = upgradeGraph(graph.nodes.filter(isRawNode), graph.edges as Parameters<typeof upgradeGraph>[1]);
    doc = { ...doc, workflow: { ...wf, graph: { ...graph, ...upgraded } } };
  }
  return doc as unknown as DslDocument;
}
