import type { GraphNode } from './types.js';
import { toSeconds } from '../lib/seconds.js';

/** A `node_started` event's data (Dify's shape): a run's own node, or a child of an iteration or loop. */
export type NodeStarted = {
  readonly id: string;
  readonly node_id: string;
  readonly node_type: string;
  readonly title: string;
  readonly index: number;
  readonly predecessor_node_id: string | null;
  readonly inputs: null;
  readonly inputs_truncated: false;
  readonly created_at: number;
  readonly extras: Record<string, never>;
  /** The iteration or loop node that runs this one as its child; null at the top level. */
  readonly iteration_id: string | null;
  readonly loop_id: string | null;
};

/** The data of `node`'s `node_started` event, for its execution `id` started at `startedAt` (ms). */
export function nodeStarted(
  node: Pick<GraphNode, 'id' | 'type' | 'title'>,
  run: { readonly id: string; readonly index: number; readonly from: string | null; readonly startedAt: number; readonly iterationId?: string | null; readonly loopId?: string | null },
): NodeStarted {
  return {
    id: run.id,
    node_id: node.id,
    node_type: node.type,
    title: node.title,
    index: run.index,
    predecessor_node_id: run.from,
    inputs: null,
    inputs_truncated: false,
    created_at: toSeconds(run.startedAt),
    extras: {},
    iteration_id: run.iterationId ?? null,
    loop_id: run.loopId ?? null,
  };
}
