import { containerEvents, runRound } from '../subgraph.js';
import { DEFAULT_ENGINE_LIMITS, NodeFailure, isStop, type GraphNode, type NodeHandler } from '../types.js';
import { selectorOf } from './shared.js';

const ERROR_MODES = ['terminated', 'continue-on-error', 'remove-abnormal-output'] as const;
type ErrorMode = (typeof ERROR_MODES)[number];

function specOf(node: GraphNode): { iterator: string[]; output: string[]; mode: ErrorMode; flatten: boolean } {
  const d = node.data;
  const iterator = selectorOf(d.iterator_selector);
  if (!iterator) throw new Error('iterator_selector must be a list of at least 2 names');
  const output = selectorOf(d.output_selector);
  if (!output) throw new Error('output_selector must be a list of at least 2 names');
  const mode = d.error_handle_mode ?? 'terminated';
  if (typeof mode !== 'string' || !(ERROR_MODES as readonly string[]).includes(mode)) {
    throw new Error(`error_handle_mode "${String(mode)}" is not supported (supported: ${ERROR_MODES.join(', ')})`);
  }
  if (d.flatten_output !== undefined && typeof d.flatten_output !== 'boolean') throw new Error('flatten_output must be a boolean');
  return { iterator, output, mode: mode as ErrorMode, flatten: d.flatten_output !== false };
}

/**
 * Dify's iteration: runs the child graph once per item of `iterator_selector` with `[id, item]` and
 * `[id, index]` set, collecting `output_selector` into `output`. With `flatten_output` (default
 * true) a list of lists becomes one list. Items run one after another, also when `is_parallel`
 * is set (see docs/compatibility.md).
 */
export const iterationNode: NodeHandler = {
  validate(node) {
    specOf(node);
  },
  async run(ctx) {
    const spec = specOf(ctx.node);
    const sub = ctx.graph.children.get(ctx.node.id);
    if (!sub) throw new NodeFailure('the iteration has no child graph', 'IterationNodeError', false);
    const value = ctx.pool.get(spec.iterator);
    const inputs = { iterator_selector: value ?? null };
    if (value !== undefined && value !== null && !Array.isArray(value)) {
      throw new NodeFailure(`Invalid iterator value: ${JSON.stringify(value)}, please provide a list.`, 'InvalidIteratorValueError', false);
    }
    const items = value ?? [];
    const max = (ctx.ports.limits ?? DEFAULT_ENGINE_LIMITS).iterationMaxItems;
    if (items.length > max) throw new NodeFailure(`Iterator length ${items.length} exceeds the limit of ${max} (MAX_ITERATIONS_NUM).`, 'IterationNodeError', false);
    const events = containerEvents(ctx, 'iteration', inputs, { iterator_length: items.length });
    let tokens = 0;
    let steps = 0;
    const durations: Record<string, number> = {};
    const totals = () => ({ tokens, steps, metadata: { iteration_duration_map: durations } });
    const collected: unknown[] = [];
    try {
      for (let i = 0; i < items.length; i++) {
        events.next(i);
        ctx.pool.setAll(ctx.node.id, { item: items[i], index: i });
        const itemStart = ctx.ports.now();
        try {
          const r = await runRound(ctx, sub, { type: 'iteration', index: i });
          tokens += r.tokens;
          collected.push(ctx.pool.get(spec.output) ?? null);
        } catch (err) {
          if (isStop(err, ctx.signal) || spec.mode === 'terminated') throw err;
          if (spec.mode === 'continue-on-error') collected.push(null);
        } finally {
          steps = i + 1;
          durations[String(i)] = (ctx.ports.now() - itemStart) / 1000;
        }
      }
    } catch (err) {
      if (!ctx.signal.aborted) events.completed('failed', (err as Error).message, null, totals());
      throw err;
    }
    const flat = spec.flatten && collected.length > 0 && collected.every(Array.isArray) ? (collected as unknown[][]).flat(1) : collected;
    const outputs = { output: flat };
    events.completed('succeeded', null, outputs, totals());
    return {
      type: 'succeeded',
      inputs,
      outputs,
      ...(tokens > 0 ? { usage: { promptTokens: tokens, completionTokens: 0 } } : {}),
    };
  },
};
