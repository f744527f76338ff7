import { NodeFailure, isStop, type DatasourceRef, type GraphNode, type NodeHandler } from '../types.js';
import type { VariablePool } from '../variable-pool.js';
import { toText } from '../variable-pool.js';
import { isObject, selectorOf } from './shared.js';

/** Dify's datasource kinds (`provider_type`). */
export const DATASOURCE_TYPES = ['local_file', 'website_crawl', 'online_document', 'online_drive'] as const;

/** The datasource plugins Dovetail reads itself: an uploaded file, and web pages through Jina Reader or Firecrawl. */
const SUPPORTED: readonly { readonly type: string; readonly provider: string }[] = [
  { type: 'local_file', provider: 'file' },
  { type: 'website_crawl', provider: 'jina' },
  { type: 'website_crawl', provider: 'firecrawl' },
];

/** The plugin a datasource node names. */
export function datasourceRefOf(data: Readonly<Record<string, unknown>>): DatasourceRef {
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  return { pluginId: str(data.plugin_id), providerName: str(data.provider_name), providerType: str(data.provider_type), datasourceName: str(data.datasource_name) };
}

/** Null when Dovetail can read this datasource; else why not, naming the plugin. */
export function unsupportedDatasource(ref: DatasourceRef): string | null {
  if (SUPPORTED.some((s) => s.type === ref.providerType && s.provider === ref.providerName)) return null;
  const what = `${ref.providerType || 'unknown'} datasource plugin "${ref.pluginId || ref.providerName}" (provider ${ref.providerName || 'unset'})`;
  return `the ${what} is not available here (Dovetail reads local files, and web pages through Jina Reader or Firecrawl)`;
}

/** `{{#rag.1752491761974.url#}}`: pipeline templates name node ids (digits first) inside `rag`. */
const PIPELINE_REF = /\{\{#([a-zA-Z0-9_]{1,50}(?:\.[a-zA-Z0-9_]{1,50}){1,10})#\}\}/g;

/** One `datasource_parameters` entry as Dify resolves it: `variable` reads the pool, `mixed` / `constant` render their template. */
function parameterValue(pool: VariablePool, p: unknown): unknown {
  if (!isObject(p)) return p;
  if (p.type === 'variable') return pool.get(selectorOf(p.value) ?? []);
  const text = p.value;
  if (typeof text !== 'string') return text;
  // a template that is one reference keeps the value's own type (a number, a checkbox)
  const whole = /^\{\{#([a-zA-Z0-9_]{1,50}(?:\.[a-zA-Z0-9_]{1,50}){1,10})#\}\}$/.exec(text);
  if (whole) return pool.get(whole[1]!.split('.'));
  return text.replace(PIPELINE_REF, (_m, path: string) => toText(pool.get(path.split('.'))));
}

function checkNode(node: GraphNode): void {
  const d = node.data;
  if (typeof d.provider_type !== 'string' || !(DATASOURCE_TYPES as readonly string[]).includes(d.provider_type)) {
    throw new Error(`provider_type must be one of ${DATASOURCE_TYPES.join(', ')}, got ${JSON.stringify(d.provider_type)}`);
  }
  if (typeof d.plugin_id !== 'string' || d.plugin_id === '') throw new Error('plugin_id must be a non-empty string');
  if (typeof d.provider_name !== 'string' || d.provider_name === '') throw new Error('provider_name must be a non-empty string');
  if (d.datasource_parameters !== undefined && d.datasource_parameters !== null && !isObject(d.datasource_parameters)) throw new Error('datasource_parameters must be a mapping');
}

/**
 * Dify's `datasource` node, the root of a knowledge pipeline run: reads the run's item
 * (`sys.datasource_type`, `sys.datasource_info`) through the pipeline port — a local file becomes
 * the `file` output, a crawled page `source_url` / `content` / `title` / `description`. A
 * datasource plugin Dovetail does not have fails the node naming it.
 */
export const datasourceNode: NodeHandler = {
  validate(node) {
    checkNode(node);
  },
  importWarnings(node) {
    const ref = datasourceRefOf(node.data);
    const why = unsupportedDatasource(ref);
    if (!why) return [];
    return [{ node_id: node.id, node_type: node.type, part: `datasource plugin ${ref.pluginId || ref.providerName}`, setting: null, message: `node ${node.id} (datasource): ${why}; a run that starts at it fails` }];
  },
  async run(ctx) {
    const ref = datasourceRefOf(ctx.node.data);
    const where = `datasource node "${ctx.node.title}" (${ctx.node.id})`;
    const type = ctx.pool.get(['sys', 'datasource_type']);
    const info = ctx.pool.get(['sys', 'datasource_info']);
    if (typeof type !== 'string' || type === '') throw new NodeFailure(`${where}: Datasource type is not set`, 'DatasourceNodeError', false);
    if (!isObject(info)) throw new NodeFailure(`${where}: Datasource info is not set`, 'DatasourceNodeError', false);
    const why = unsupportedDatasource(ref);
    if (why) throw new NodeFailure(`${where}: ${why}`, 'DatasourceNodeError', false);
    if (type !== ref.providerType) throw new NodeFailure(`${where}: the run's datasource_type is ${type}, but this node reads ${ref.providerType}`, 'DatasourceNodeError', false);
    const port = ctx.ports.pipeline;
    if (!port) throw new NodeFailure(`${where}: datasource nodes run only in knowledge pipelines`, 'DatasourceNodeError', false);
    const params = datasourceParameters(ctx.node, ctx.pool);
    try {
      const outputs = await port.datasource(ref, type, info, params, ctx.signal);
      return { type: 'succeeded', inputs: { ...info }, outputs: { ...outputs, datasource_type: type }, processData: { datasource_info: info } };
    } catch (err) {
      if (isStop(err, ctx.signal)) throw err;
      throw new NodeFailure(`${where}: Failed to invoke datasource: ${(err as Error).message}`, 'DatasourceNodeError', false, { cause: err });
    }
  },
};

/** The values a datasource node's parameters take for `pool` (the datasource-node run of the Service API). */
export function datasourceParameters(node: GraphNode, pool: VariablePool): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  const raw = node.data.datasource_parameters;
  if (isObject(raw)) for (const [name, p] of Object.entries(raw)) params[name] = parameterValue(pool, p);
  return params;
}
