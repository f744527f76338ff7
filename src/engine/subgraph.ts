import { completeNode, initialState } from './run-state.js';
import { toSeconds } from '../lib/seconds.js';
import { NodeFailure, StopSignal, type Graph, type NodeContext, type NodeOutcome, type NodeUsage } from './types.js';
import { plusUsage } from '../lib/usage.js';
import { nodeStarted } from './node-started.js';

export interface ContainerRound {
  readonly type: 'loop' | 'iteration';
  readonly index: number;
  /**
   * A parallel iteration item's run id (Dify's `parallel_mode_run_id`): child `node_started` carry it
   * as `parallel_run_id`, child `node_finished` in `execution_metadata.parallel_mode_run_id`.
   */
  readonly parallelRunId?: string;
}

export interface RoundResult {
  /** A `loop-end` node ran: the loop stops after this round. */
  readonly broke: boolean;
  readonly tokens: number;
  /** The sum of the round's model calls, if any. */
  readonly usage: NodeUsage | undefined;
  readonly steps: number;
}

/** What a container reports when it ends; `metadata` joins `total_tokens` in `execution_metadata`. */
export interface ContainerTotals {
  readonly tokens: number;
  /** The sum of the container's model calls, reported as the container node's usage. */
  readonly usage?: NodeUsage | undefined;
  readonly steps: number;
  readonly metadata: Record<string, unknown>;
}

/**
 * The container's own events in Dify's shapes: `<kind>_started` (sent at once), `<kind>_next`
 * and `<kind>_completed`.
 */
export function containerEvents(ctx: NodeContext, kind: ContainerRound['type'], inputs: Record<string, unknown>, metadata: Record<string, unknown>) {
  const startedAt = ctx.ports.now();
  const base = { id: ctx.executionId ?? ctx.node.id, node_id: ctx.node.id, node_type: kind, title: ctx.node.title };
  ctx.emit({ type: 'event', event: `${kind}_started`, data: { ...base, created_at: toSeconds(startedAt), extras: {}, metadata, inputs, inputs_truncated: false } });
  return {
    next(index: number, extra: Record<string, unknown> = {}): void {
      ctx.emit({ type: 'event', event: `${kind}_next`, data: { ...base, index, created_at: toSeconds(ctx.ports.now()), ...extra, extras: {} } });
    },
    completed(status: string, error: string | null, outputs: Record<string, unknown> | null, totals: ContainerTotals): void {
      const now = ctx.ports.now();
      ctx.emit({
        type: 'event',
        event: `${kind}_completed`,
        data: {
          ...base,
          outputs,
          outputs_truncated: false,
          inputs,
          inputs_truncated: false,
          created_at: toSeconds(startedAt),
          extras: {},
          status,
          error,
          elapsed_time: (now - startedAt) / 1000,
          total_tokens: totals.tokens,
          execution_metadata: { total_tokens: totals.tokens, ...totals.metadata },
          finished_at: toSeconds(now),
          steps: totals.steps,
        },
      });
    },
    /** `<kind>_completed` with `succeeded`, and the container's outcome (its model calls' usage). */
    succeeded(outputs: Record<string, unknown>, totals: ContainerTotals): NodeOutcome {
      this.completed('succeeded', null, outputs, totals);
      return { type: 'succeeded', inputs, outputs, ...(totals.usage && totals.usage.total_tokens > 0 ? { usage: totals.usage } : {}) };
    },
  };
}

/**
 * Runs a container's child graph once (one loop round or one iteration item), node by node in
 * readiness order, in `ctx.pool` (the run's pool, or a parallel item's `ScopedPool`). Child nodes report `node_started` / `node_finished`
 * through the container's `emit` with `loop_id` / `iteration_id` set. A child that fails (after its
 * own retry and error strategy) fails the round with its error.
 */
export async function runRound(ctx: NodeContext, sub: Graph, round: ContainerRound): Promise<RoundResult> {
  const state = initialState(sub, {});
  // each round starts clean, as in Dify: a child that does not run this round has no outputs
  for (const id of sub.nodes.keys()) ctx.pool.remove(id);
  const queue: { node: string; from: string | null }[] = [{ node: sub.startId, from: null }];
  const container = { type: round.type, id: ctx.node.id, index: round.index };
  const idKey = round.type === 'loop' ? 'loop' : 'iteration';
  const runId = round.parallelRunId ? { parallel_mode_run_id: round.parallelRunId } : {};
  let tokens = 0;
  let usage: NodeUsage | undefined;
  let steps = 0;
  while (queue.length > 0) {
    if (ctx.signal.aborted) throw new StopSignal('stopped');
    const { node: id, from } = queue.shift()!;
    const node = sub.nodes.get(id)!;
    steps++;
    const index = ctx.step ? ctx.step() : steps;
    const execId = ctx.ports.newId();
    const startedAt = ctx.ports.now();
    const started = nodeStarted(node, {
      id: execId,
      index,
      from,
      startedAt,
      iterationId: round.type === 'iteration' ? ctx.node.id : null,
      loopId: round.type === 'loop' ? ctx.node.id : null,
    });
    ctx.emit({ type: 'event', event: 'node_started', data: round.parallelRunId ? { ...started, parallel_run_id: round.parallelRunId } : started });
    const finished = (status: string, error: string | null, r: { inputs?: unknown; outputs?: unknown; processData?: unknown; meta?: Record<string, unknown> }) => {
      const now = ctx.ports.now();
      ctx.emit({
        type: 'event',
        event: 'node_finished',
        data: {
          ...started,
          inputs: r.inputs ?? null,
          process_data: r.processData ?? null,
          process_data_truncated: false,
          outputs: r.outputs ?? null,
          outputs_truncated: false,
          status,
          error,
          elapsed_time: (now - startedAt) / 1000,
          execution_metadata: { [`${idKey}_id`]: ctx.node.id, [`${idKey}_index`]: round.index, ...runId, ...(r.meta ?? {}) },
          finished_at: toSeconds(now),
          files: [],
        },
      });
    };
    if (!ctx.executeChild) throw new Error('container nodes run through executeNode, which hands down executeChild');
    const result = await ctx.executeChild(
      { ...ctx, node, graph: sub, container, executionId: execId, streamedSegments: 0 },
      (retryIndex, error) => ctx.emit({ type: 'event', event: 'node_retry', data: { ...started, status: 'retry', error, retry_index: retryIndex } }),
    );
    switch (result.type) {
      case 'succeeded':
      case 'exception': {
        ctx.pool.setAll(node.id, result.outputs);
        const used = result.usage?.total_tokens ?? 0;
        tokens += used;
        usage = plusUsage(usage, result.usage);
        const meta = { ...(used && result.usage ? { total_tokens: used, total_price: Number(result.usage.total_price), currency: result.usage.currency } : {}), ...(result.errorStrategy ? { error_strategy: result.errorStrategy } : {}) };
        finished(result.type, result.error, { inputs: result.inputs, outputs: result.outputs, processData: result.processData, meta });
        if (node.type === 'loop-end') return { broke: true, tokens, usage, steps };
        for (const next of completeNode(sub, state, node.id, result.take)) queue.push({ node: next, from: node.id });
        break;
      }
      case 'failed':
        finished('failed', result.error, { inputs: result.inputs, processData: result.processData });
        throw new NodeFailure(result.error, 'NodeError', false);
      case 'stopped':
        finished('stopped', 'Stopped.', {});
        throw new StopSignal('stopped');
      case 'pause':
        throw new NodeFailure(`node ${node.id} cannot pause inside a ${round.type}`, 'NodeError', false);
    }
  }
  return { broke: false, tokens, usage, steps };
}
