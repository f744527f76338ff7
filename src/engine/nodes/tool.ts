import { NodeFailure, type GraphNode, type NodeContext, type NodeHandler } from '../types.js';
import { isObject } from './shared.js';

/** The only tools Dovetail runs (provider `builtin`); any other tool is refused at import. */
const BUILTIN_TOOLS = ['json_parse'] as const;

function checkTool(node: GraphNode): void {
  const d = node.data;
  const name = typeof d.tool_name === 'string' ? d.tool_name : String(d.tool_name);
  const provider = typeof d.provider_id === 'string' ? d.provider_id : String(d.provider_id);
  if (provider !== 'builtin' || !(BUILTIN_TOOLS as readonly string[]).includes(name)) {
    throw new Error(`tool "${name}" of provider "${provider}" is not supported (supported: builtin ${BUILTIN_TOOLS.join(', ')})`);
  }
  if (!isObject(d.tool_parameters)) throw new Error('tool_parameters must be a mapping');
}

/** A tool parameter: a template string (old DSL) or `{type: mixed|constant|variable, value}`. */
function parameter(ctx: NodeContext, name: string): unknown {
  const p = (ctx.node.data.tool_parameters as Record<string, unknown>)[name];
  if (typeof p === 'string') return ctx.pool.render(p);
  if (!isObject(p)) return undefined;
  if (p.type === 'variable' && Array.isArray(p.value)) return ctx.pool.get(p.value);
  if (typeof p.value === 'string' && p.type !== 'constant') return ctx.pool.render(p.value);
  return p.value;
}

/**
 * Tool node for the builtin `json_parse` tool only: parses `json_string` and outputs it as
 * `result` (a variable), in `json` (as Dify's JSON messages) and `text` (empty), with no files.
 */
export const toolNode: NodeHandler = {
  validate(node) {
    checkTool(node);
  },
  async run(ctx) {
    checkTool(ctx.node);
    const text = parameter(ctx, 'json_string');
    if (typeof text !== 'string') throw new NodeFailure('json_parse: the json_string parameter must be a string', 'ToolParameterError', false);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new NodeFailure(`json_parse: invalid JSON: ${(err as Error).message}`, 'ToolInvokeError', false);
    }
    return { type: 'succeeded', inputs: { json_string: text }, outputs: { text: '', files: [], json: [parsed], result: parsed } };
  },
};
