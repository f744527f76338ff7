import { executeNode } from '../../engine/execute-node.js';
import { nodeStarted } from '../../engine/node-started.js';
import { initialState } from '../../engine/run-state.js';
import { Scheduler, type SchedulerLimits, type StartNode } from '../../engine/scheduler.js';
import type { EnginePorts, Graph } from '../../engine/types.js';
import type { PoolData } from '../../engine/variable-pool.js';
import { toSeconds } from '../../lib/seconds.js';

/** One frame of a pipeline run's stream, in Dify's workflow shape (`event`, `task_id`, `workflow_run_id`, `data`). */
export type PipelineFrame = Readonly<Record<string, unknown>>;

/** How a pipeline run ended (Dify's `workflow_finished` data). */
export interface PipelineRunResult {
  readonly id: string;
  readonly workflow_id: string;
  readonly status: 'succeeded' | 'failed' | 'stopped' | 'partial-succeeded';
  readonly outputs: Record<string, unknown>;
  readonly error: string | null;
  readonly elapsed_time: number;
  readonly total_tokens: number;
  readonly total_steps: number;
  readonly created_at: number;
  readonly finished_at: number;
  readonly exceptions_count: number;
  readonly files: readonly unknown[];
}

export interface PipelineRun {
  readonly graph: Graph;
  /** The datasource node the run starts at. */
  readonly startNodeId: string;
  /** `sys.*` (datasource type and info, dataset, document, batch) and `rag.*` (the pipeline's inputs). */
  readonly pool: PoolData;
  readonly ports: EnginePorts;
  readonly limits: SchedulerLimits;
  readonly runId: string;
  readonly taskId: string;
  /** The pipeline id (Dify's `workflow_id`). */
  readonly workflowId: string;
  /** The dataset's workspace stands in for the app (files and tools are the workspace's). */
  readonly scopeId: string;
  readonly inputs: Record<string, unknown>;
  readonly signal: AbortSignal;
  emit(frame: PipelineFrame): void;
}

/**
 * Runs one knowledge pipeline graph in this process, from its datasource node to its
 * knowledge-index node, with the engine's scheduler and node executor (ready nodes together, as a
 * workflow run), and reports Dify's `workflow_started`, `node_started`, `node_finished` and
 * `workflow_finished` frames as it goes. Nothing is journaled: the run's outcome lives in the
 * document it indexed (its status and error), as Dify's pipeline runs are read back.
 */
export async function runPipeline(r: PipelineRun): Promise<PipelineRunResult> {
  const now = () => r.ports.now();
  const createdAt = now();
  const frame = (event: string, data: Record<string, unknown>) => r.emit({ event, task_id: r.taskId, workflow_run_id: r.runId, data });
  frame('workflow_started', { id: r.runId, workflow_id: r.workflowId, inputs: r.inputs, created_at: toSeconds(createdAt) });
  const state = initialState(r.graph, r.pool, r.startNodeId);
  const sched = new Scheduler(r.graph, state, r.limits);
  sched.begin(createdAt);
  const controller = new AbortController();
  const signal = AbortSignal.any([r.signal, controller.signal]);
  const onAbort = () => sched.requestStop();
  r.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    sched.timeUp();
    controller.abort();
  }, Math.max(0, sched.timeLeftMs()));
  const runOne = async (s: StartNode): Promise<void> => {
    const node = r.graph.nodes.get(s.node)!;
    const execId = r.ports.newId();
    const startedAt = now();
    sched.started(execId, s);
    const started = nodeStarted(node, { id: execId, index: s.index, from: s.from, startedAt });
    frame('node_started', started);
    const result = await executeNode(
      { node, graph: r.graph, pool: sched.pool, kind: 'workflow', runId: r.runId, appId: r.scopeId, endUserId: '', conversationId: null, ports: r.ports, signal, streamedSegments: 0, executionId: execId, step: () => sched.childStep(), emit: () => undefined },
      (retryIndex, error) => frame('node_retry', { ...started, status: 'retry', error, retry_index: retryIndex }),
    );
    const d = sched.complete(execId, result);
    if (d.type !== 'finished') return;
    if (d.abort) controller.abort();
    const end = now();
    frame('node_finished', {
      ...started,
      inputs: d.inputs,
      process_data: d.processData,
      process_data_truncated: false,
      outputs: d.outputs,
      outputs_truncated: false,
      status: d.status,
      error: d.error,
      elapsed_time: (end - startedAt) / 1000,
      execution_metadata: d.metadata,
      finished_at: toSeconds(end),
      files: [],
    });
  };
  try {
    for (;;) {
      const batch = [...sched.ready()];
      if (batch.length === 0) break;
      await Promise.all(batch.map(runOne));
    }
  } finally {
    clearTimeout(timer);
    r.signal.removeEventListener('abort', onAbort);
  }
  const decision = sched.end();
  const finishedAt = now();
  const status = decision.type === 'stopped' || decision.type === 'failed' || decision.type === 'succeeded' || decision.type === 'partial-succeeded' ? decision.type : 'failed';
  const error = decision.type === 'stopped' || decision.type === 'failed' ? decision.error : decision.type === 'paused' ? 'a knowledge pipeline cannot pause (human-input nodes do not run in pipelines)' : null;
  const result: PipelineRunResult = {
    id: r.runId,
    workflow_id: r.workflowId,
    status,
    outputs: state.outputs,
    error,
    elapsed_time: (finishedAt - createdAt) / 1000,
    total_tokens: state.tokens,
    total_steps: state.steps,
    created_at: toSeconds(createdAt),
    finished_at: toSeconds(finishedAt),
    exceptions_count: state.exceptions,
    files: [],
  };
  frame('workflow_finished', { ...result });
  return result;
}
