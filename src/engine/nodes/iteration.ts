import { runBounded } from '../bounded-items.js';
import { ScopedPool } from '../scoped-pool.js';
import { containerEvents, runRound } from '../subgraph.js';
import { plusUsage } from '../../lib/usage.js';
import { mergeResources, type RetrieverResource } from '../retriever-resources.js';
import { NodeFailure, StopSignal, isStop, type Graph, type GraphNode, type NodeContext, type NodeHandler, type NodeUsage } from '../types.js';
import { selectorOf } from './shared.js';

const ERROR_MODES = ['terminated', 'continue-on-error', 'remove-abnormal-output'] as const;
type ErrorMode = (typeof ERROR_MODES)[number];

/** Dify's `parallel_nums` when a parallel iteration does not set it. */
const DEFAULT_PARALLEL_NUMS = 10;

interface IterationSpec {
  readonly iterator: string[];
  readonly output: string[];
  readonly mode: ErrorMode;
  readonly flatten: boolean;
  /** `is_parallel`: items run at once as the DSL asks (before the `ITERATION_MAX_PARALLEL` clamp); null when sequential. */
  readonly parallel: number | null;
}

function specOf(node: GraphNode): IterationSpec {
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
  if (d.is_parallel !== undefined && d.is_parallel !== null && typeof d.is_parallel !== 'boolean') throw new Error('is_parallel must be a boolean');
  let parallel: number | null = null;
  if (d.is_parallel === true) {
    const n = d.parallel_nums ?? DEFAULT_PARALLEL_NUMS;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw new Error(`parallel_nums must be a positive integer, got ${JSON.stringify(n)}`);
    parallel = n;
  }
  return { iterator, output, mode: mode as ErrorMode, flatten: d.flatten_output !== false, parallel };
}

/** Every node inside container `id`, containers inside it included (a parallel item's variable scope). */
function descendants(graph: Graph, id: string): string[] {
  const out: string[] = [];
  const todo = [id];
  while (todo.length > 0) {
    const sub = graph.children.get(todo.pop()!);
    if (!sub) continue;
    for (const n of sub.nodes.keys()) {
      out.push(n);
      todo.push(n);
    }
  }
  return out;
}

/** How one item ended: its `output_selector` value, or the error its child graph failed with. */
type ItemOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** Sequential: each item in the run's pool, one after another; stops at the first failure in `terminated` mode. */
async function runInOrder(ctx: NodeContext, count: number, mode: ErrorMode, runItem: (i: number, pool: NodeContext['pool']) => Promise<ItemOutcome>): Promise<ItemOutcome[]> {
  const outcomes: ItemOutcome[] = [];
  for (let i = 0; i < count; i++) {
    const o = await runItem(i, ctx.pool);
    if (!o.ok && (isStop(o.error, ctx.signal) || mode === 'terminated')) throw o.error;
    outcomes.push(o);
  }
  return outcomes;
}

/**
 * Parallel: up to `limit` items at once, each in its own `ScopedPool`. In `terminated` mode no item
 * starts after a failure; the ones running finish, then the node fails with the error of the
 * failed item with the lowest index. A stop ends every item and fails nothing.
 */
async function runAtOnce(ctx: NodeContext, count: number, limit: number, mode: ErrorMode, scopes: readonly string[], runItem: (i: number, pool: NodeContext['pool'], runId: string) => Promise<ItemOutcome>): Promise<ItemOutcome[]> {
  let failed = false;
  const outcomes = await runBounded(count, limit, () => !ctx.signal.aborted && !(failed && mode === 'terminated'), async (i) => {
    const o = await runItem(i, new ScopedPool(ctx.pool, scopes), ctx.ports.newId());
    if (!o.ok) failed = true;
    return o;
  });
  if (ctx.signal.aborted) throw new StopSignal('stopped');
  for (const o of outcomes) if (o && !o.ok && (isStop(o.error, ctx.signal) || mode === 'terminated')) throw o.error;
  return outcomes as ItemOutcome[];
}

/**
 * Dify's iteration: runs the child graph once per item of `iterator_selector` with `[id, item]` and
 * `[id, index]` set, collecting `output_selector` into `output` in item order. With `flatten_output`
 * (default true) a list of lists becomes one list. With `is_parallel` up to `parallel_nums` items
 * (default 10, at most `ITERATION_MAX_PARALLEL`) run at once, each in its own variable scope for the
 * child nodes and `item` / `index`; otherwise items run one after another in the run's pool.
 * `iteration_next` is sent as each item starts; `iteration_duration_map` is keyed by item index.
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
    const limits = ctx.ports.limits;
    const max = limits.iterationMaxItems;
    if (items.length > max) throw new NodeFailure(`Iterator length ${items.length} exceeds the limit of ${max} (MAX_ITERATIONS_NUM).`, 'IterationNodeError', false);
    const events = containerEvents(ctx, 'iteration', inputs, { iterator_length: items.length });
    let tokens = 0;
    let usage: NodeUsage | undefined;
    let resources: RetrieverResource[] = [];
    let steps = 0;
    const durations: Record<string, number> = {};
    const totals = () => ({ tokens, usage, resources, steps, metadata: { iteration_duration_map: durations } });
    const runItem = async (i: number, pool: NodeContext['pool'], parallelRunId?: string): Promise<ItemOutcome> => {
      events.next(i);
      pool.setAll(ctx.node.id, { item: items[i], index: i });
      const itemStart = ctx.ports.now();
      try {
        const r = await runRound({ ...ctx, pool }, sub, { type: 'iteration', index: i, ...(parallelRunId ? { parallelRunId } : {}) });
        tokens += r.tokens;
        usage = plusUsage(usage, r.usage);
        if (r.resources.length > 0) resources = mergeResources(resources, r.resources);
        return { ok: true, value: pool.get(spec.output) ?? null };
      } catch (error) {
        return { ok: false, error };
      } finally {
        steps++;
        durations[String(i)] = (ctx.ports.now() - itemStart) / 1000;
      }
    };
    let outcomes: ItemOutcome[];
    try {
      outcomes =
        spec.parallel !== null
          ? await runAtOnce(ctx, items.length, Math.min(spec.parallel, limits.iterationMaxParallel), spec.mode, [ctx.node.id, ...descendants(ctx.graph, ctx.node.id)], runItem)
          : await runInOrder(ctx, items.length, spec.mode, runItem);
    } catch (err) {
      if (!ctx.signal.aborted) events.completed('failed', (err as Error).message, null, totals());
      throw err;
    }
    const collected: unknown[] = [];
    for (const o of outcomes) {
      if (o.ok) collected.push(o.value);
      else if (spec.mode === 'continue-on-error') collected.push(null);
    }
    const flat = spec.flatten && collected.length > 0 && collected.every(Array.isArray) ? (collected as unknown[][]).flat(1) : collected;
    return events.succeeded({ output: flat }, totals());
  },
};
