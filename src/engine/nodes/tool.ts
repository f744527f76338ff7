import type { ToolRef, ToolResultMessage } from '../ports.js';
import { NodeFailure, isStop, type GraphNode, type NodeContext, type NodeHandler } from '../types.js';
import { isObject, selectorOf } from './shared.js';

const INPUT_TYPES = ['mixed', 'variable', 'constant'] as const;

/** The tool a node names (`provider_type`, `provider_id`, `tool_name`). */
export function toolRefOf(data: Readonly<Record<string, unknown>>): ToolRef {
  return {
    providerType: typeof data.provider_type === 'string' ? data.provider_type : 'builtin',
    providerId: typeof data.provider_id === 'string' ? data.provider_id : typeof data.provider_name === 'string' ? data.provider_name : '',
    ...(typeof data.provider_name === 'string' ? { providerName: data.provider_name } : {}),
    toolName: typeof data.tool_name === 'string' ? data.tool_name : '',
  };
}

function checkInputs(v: unknown, field: string): void {
  if (v === undefined) return;
  if (!isObject(v)) throw new Error(`${field} must be a mapping of parameter name to value`);
  for (const [name, p] of Object.entries(v)) {
    if (!isObject(p) || !('type' in p)) continue; // a plain value (older DSL): a constant or a template
    if (!(INPUT_TYPES as readonly string[]).includes(String(p.type))) throw new Error(`${field}.${name}.type must be one of ${INPUT_TYPES.join(', ')}, got "${String(p.type)}"`);
    if (p.type === 'variable' && !selectorOf(p.value)) throw new Error(`${field}.${name}.value must be a variable selector (a list of at least 2 names)`);
  }
}

function checkNode(node: GraphNode): void {
  const d = node.data;
  if (typeof d.provider_id !== 'string' && typeof d.provider_name !== 'string') throw new Error('provider_id must be a string');
  if (typeof d.tool_name !== 'string' || d.tool_name === '') throw new Error('tool_name must be a non-empty string');
  checkInputs(d.tool_parameters, 'tool_parameters');
  checkInputs(d.tool_configurations, 'tool_configurations');
}

/**
 * One tool input as Dify resolves it: `variable` reads the pool (a missing variable is left out),
 * `mixed` renders its template, `constant` is taken as is; a plain string (older DSL) is a
 * template, any other plain value a constant.
 */
function resolveInput(ctx: NodeContext, p: unknown): unknown {
  if (typeof p === 'string') return ctx.pool.render(p);
  if (!isObject(p) || !('type' in p)) return p;
  if (p.type === 'variable') return ctx.pool.get(selectorOf(p.value)!);
  if (p.type === 'mixed') return typeof p.value === 'string' ? ctx.pool.render(p.value) : p.value;
  return p.value;
}

/** Form settings (`tool_configurations`) first, then the node's parameters over them. */
export function toolInputs(ctx: NodeContext, data: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of ['tool_configurations', 'tool_parameters'] as const) {
    const v = data[field];
    if (!isObject(v)) continue;
    for (const [name, p] of Object.entries(v)) {
      const value = resolveInput(ctx, p);
      if (value !== undefined) out[name] = value;
    }
  }
  return out;
}

/** Dify's tool node outputs from the tool's messages: `text`, `files`, `json`, plus each variable message. */
export function toolOutputs(messages: readonly ToolResultMessage[], onText?: (t: string) => void): Record<string, unknown> {
  let text = '';
  const files: unknown[] = [];
  const json: unknown[] = [];
  const variables: Record<string, unknown> = {};
  for (const m of messages) {
    switch (m.type) {
      case 'text':
        text += m.text;
        onText?.(m.text);
        break;
      case 'link': {
        const t = `Link: ${m.url}\n`;
        text += t;
        onText?.(t);
        break;
      }
      case 'json':
        json.push(m.json);
        break;
      case 'file':
        files.push(m.file);
        break;
      case 'variable':
        variables[m.name] = m.value;
        break;
    }
  }
  return { text, files, json, ...variables };
}

/**
 * Dify's tool node: resolves the tool the node names through the tools port, builds its
 * parameters from `tool_configurations` and `tool_parameters` (mixed / variable / constant), runs
 * it and outputs `text`, `files`, `json` (and any variables the tool sets). A tool that is not
 * available here fails the node with an error naming the node, the tool and what to configure.
 */
export const toolNode: NodeHandler = {
  validate(node) {
    checkNode(node);
  },
  async run(ctx) {
    const ref = toolRefOf(ctx.node.data);
    const where = `tool node "${ctx.node.title}" (${ctx.node.id})`;
    const tools = ctx.ports.tools;
    if (!tools) throw new NodeFailure(`${where}: no tools are configured on this server`, 'ToolNodeError', false);
    const found = await tools.resolve(ref);
    if ('error' in found || !found.tool) throw new NodeFailure(`${where}: ${'error' in found ? found.error : 'the tool cannot be found'}`, 'error' in found ? found.errorType : 'ToolNotFoundError', false);
    const inputs = toolInputs(ctx, ctx.node.data);
    try {
      const messages = await tools.invoke(found.tool, inputs, { signal: ctx.signal, now: () => ctx.ports.now() });
      const outputs = toolOutputs(messages, (t) => ctx.emit({ type: 'text', text: t, selector: [ctx.node.id, 'text'] }));
      return { type: 'succeeded', inputs, outputs };
    } catch (err) {
      if (isStop(err, ctx.signal)) throw err;
      const e = err as { message?: string; type?: unknown };
      throw new NodeFailure(e.message ?? String(err), typeof e.type === 'string' ? e.type : 'ToolInvokeError', true, { cause: err });
    }
  },
};
