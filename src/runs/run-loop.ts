import type { HumanInputRequired } from '../forms/human-input-port.js';
import { executeNode, type NodeResult } from '../engine/execute-node.js';
import { completeNode, type RunState } from '../engine/run-state.js';
import { VariablePool } from '../engine/variable-pool.js';
import { NodeFailure, type EnginePorts, type Graph, type NodeStreamEvent } from '../engine/types.js';
import { answerStreams, type AnswerStream } from '../engine/answer-streams.js';
import type { RunJournal } from './journal.js';
import { pauseReasons, usageOf } from './frames.js';
import { NO_TRACING, type SpanHandle, type Tracing } from '../infra/tracing.js';
import { plusUsage } from '../lib/usage.js';
import { STOPPED_BY_USER, type Flight, type NodeStarted, type RunEnd, type RunLimits, type RunMeta } from './run-types.js';

export { STOPPED_BY_USER, type RunEnd, type RunLimits, type RunMeta };

const sec = (ms: number) => Math.floor(ms / 1000);

/**
 * Runs a graph from a state: starts ready nodes (parallel branches run concurrently), and between
 * nodes appends events to the journal, saves the snapshot and checks the stop flag. Pausing
 * drains in-flight nodes, defers ready ones and persists the state; nothing is kept in memory.
 */
export class RunLoop {
  readonly #meta: RunMeta;
  readonly #graph: Graph;
  readonly #state: RunState;
  readonly #pool: VariablePool;
  readonly #ports: EnginePorts;
  readonly #journal: RunJournal;
  readonly #limits: RunLimits;
  readonly #abort = new AbortController();
  readonly #beforeFinish: ((end: RunEnd) => Promise<void>) | undefined;
  #stopReason: string | undefined;
  #failure: string | undefined;
  #handBack = false;
  /** The journal failed (fenced out, or a write error): stop at once, write nothing more. */
  #dead: unknown;
  /** Nodes started and not yet applied: a snapshot lists them as pending (they run again after a crash). */
  readonly #flying = new Map<string, Flight>();
  #startedAt = 0;
  readonly #streams: ReadonlyMap<string, AnswerStream>;
  readonly #tracing: Tracing;
  /** The span of the current `run()` and of each node in flight (by execution id). */
  #runSpan: SpanHandle | undefined;
  readonly #nodeSpans = new Map<string, SpanHandle>();

  constructor(opts: {
    meta: RunMeta;
    graph: Graph;
    state: RunState;
    ports: EnginePorts;
    journal: RunJournal;
    limits: RunLimits;
    tracing?: Tracing;
    beforeFinish?: (end: RunEnd) => Promise<void>;
  }) {
    this.#tracing = opts.tracing ?? NO_TRACING;
    this.#meta = opts.meta;
    this.#graph = opts.graph;
    this.#state = opts.state;
    this.#pool = new VariablePool(opts.state.pool);
    this.#ports = opts.ports;
    this.#journal = opts.journal;
    this.#limits = opts.limits;
    this.#beforeFinish = opts.beforeFinish;
    this.#streams = opts.meta.mode === 'advanced-chat' ? answerStreams(opts.graph) : new Map();
    this.#journal.onError = (err) => this.#halt(err);
  }

  /** The journal can no longer write: in-flight nodes are aborted and the loop ends by throwing `err`. */
  #halt(err: unknown): void {
    if (this.#dead !== undefined) return;
    this.#dead = err;
    this.#abort.abort();
  }

  /**
   * What a snapshot holds: the state as a crash should find it. Nodes in flight go back to the
   * front of the queue (they run again from their start, uncounted) and the elapsed time includes
   * this execution so far, so a run taken over keeps its counters.
   */
  #snapshotView(): RunState {
    const elapsedMs = this.#startedAt ? this.#state.elapsedMs + (this.#ports.now() - this.#startedAt) : this.#state.elapsedMs;
    if (this.#flying.size === 0) return { ...this.#state, elapsedMs };
    const again = [...this.#flying.values()].sort((a, b) => a.index - b.index).map((f) => ({ node: f.nodeId, from: f.from }));
    return { ...this.#state, elapsedMs, pending: [...again, ...this.#state.pending], steps: this.#state.steps - this.#flying.size };
  }

  /** Stops before the next node and aborts in-flight model calls (idempotent). */
  requestStop(reason = STOPPED_BY_USER): void {
    if (this.#stopReason !== undefined) return;
    this.#stopReason = reason;
    this.#abort.abort();
  }

  /**
   * The process is shutting down: aborts in-flight nodes, which go back to the front of the queue
   * (they run again from their start), saves the snapshot and ends the loop with the run still
   * `running` and `heartbeat_at` 0, which recovery on any instance continues (RunService).
   */
  requestHandBack(): void {
    if (this.#stopReason !== undefined || this.#handBack) return;
    this.#handBack = true;
    this.#abort.abort();
  }

  #frame(event: string, data: Record<string, unknown>): { event: string; [k: string]: unknown } {
    const m = this.#meta;
    if (m.mode === 'workflow') return { event, workflow_run_id: m.id, task_id: m.taskId, data };
    return { event, conversation_id: m.conversationId, message_id: m.messageId, created_at: sec(m.createdAt), task_id: m.taskId, workflow_run_id: m.id, data };
  }

  #emit(event: string, data: Record<string, unknown>): void {
    this.#journal.append(this.#frame(event, data));
  }

  #message(text: string): void {
    const m = this.#meta;
    this.#state.answer += text;
    this.#journal.append({ event: 'message', conversation_id: m.conversationId, message_id: m.messageId, created_at: sec(m.createdAt), task_id: m.taskId, id: m.messageId, answer: text });
  }

  #onNodeEvent(e: NodeStreamEvent): void {
    const m = this.#meta;
    switch (e.type) {
      case 'text': {
        if (m.mode === 'workflow') {
          this.#emit('text_chunk', { text: e.text, from_variable_selector: [...e.selector] });
          return;
        }
        const stream = this.#streams.get(e.selector[0]!);
        if (!stream) return;
        const streamed = (this.#state.streamed ??= {});
        if (streamed[stream.answerId] === undefined) {
          streamed[stream.answerId] = stream.consumed;
          if (stream.prefix) this.#message(stream.prefix);
        }
        this.#message(e.text);
        return;
      }
      case 'answer':
        this.#message(e.text);
        return;
      case 'human_input_form_filled':
      case 'human_input_form_timeout':
        this.#emit(e.type, { ...e.data });
        return;
      case 'event':
        this.#emit(e.event, { ...e.data });
        return;
    }
  }

  /**
   * Runs until the graph ends, fails, stops or pauses. `takeover`: the run continues after its
   * owner died or stalled; its `workflow_started` is already in the log, so none is sent again.
   * Throws the journal's error when a write failed or another owner fenced this one out.
   */
  async run(reason: 'initial' | 'resumption' | 'takeover'): Promise<RunEnd> {
    const m0 = this.#meta;
    const span = this.#tracing.start('workflow.run', { 'dovetail.run_id': m0.id, 'dovetail.app_id': m0.appId, 'dovetail.app_mode': m0.mode, 'dovetail.run_reason': reason });
    this.#runSpan = span;
    try {
      const end = await this.#run(reason);
      span.setAttributes({ 'dovetail.run_status': end.status, 'dovetail.total_steps': end.state.steps, 'dovetail.total_tokens': end.state.tokens });
      if (end.status === 'failed') span.fail(end.error ?? 'failed');
      return end;
    } catch (err) {
      span.fail((err as Error).message);
      throw err;
    } finally {
      for (const s of this.#nodeSpans.values()) s.end();
      this.#nodeSpans.clear();
      span.end();
    }
  }

  async #run(reason: 'initial' | 'resumption' | 'takeover'): Promise<RunEnd> {
    const startedAt = this.#ports.now();
    this.#startedAt = startedAt;
    const elapsed = () => this.#state.elapsedMs + (this.#ports.now() - startedAt);
    const m = this.#meta;
    if (reason !== 'takeover') this.#emit('workflow_started', { id: m.id, workflow_id: m.workflowId, inputs: m.inputs, created_at: sec(m.createdAt), reason });
    const remaining = this.#limits.maxTimeMs - this.#state.elapsedMs;
    const timer = setTimeout(() => {
      this.#failure ??= `Max execution time ${Math.round(this.#limits.maxTimeMs / 1000)}s reached.`;
      this.#abort.abort();
    }, Math.max(0, remaining));
    timer.unref?.();
    const inflight = new Map<string, Promise<{ flight: Flight; result: NodeResult }>>();
    const pausedNodes: string[] = [];
    const reasons: HumanInputRequired[] = [];
    const deferred: { node: string; from: string | null }[] = [];
    try {
      for (;;) {
        const halted = this.#stopReason !== undefined || this.#failure !== undefined || this.#handBack || this.#dead !== undefined;
        while (!halted && this.#state.pending.length > 0) {
          const next = this.#state.pending.shift()!;
          if (pausedNodes.length > 0) {
            deferred.push(next);
            continue;
          }
          if (this.#state.steps >= this.#limits.maxSteps) {
            this.#failure = `Max steps ${this.#limits.maxSteps} reached.`;
            this.#state.pending.unshift(next);
            break;
          }
          const flight = this.#start(next.node, next.from);
          inflight.set(flight.execId, this.#exec(flight));
        }
        if (inflight.size === 0) break;
        const { flight, result } = await Promise.race(inflight.values());
        inflight.delete(flight.execId);
        this.#apply(flight, result, pausedNodes, reasons);
        this.#journal.saveSnapshot(() => this.#snapshotView());
      }
    } finally {
      clearTimeout(timer);
    }
    if (this.#dead !== undefined) throw this.#dead;

    let end: RunEnd;
    if (this.#stopReason !== undefined) {
      end = this.#end('stopped', this.#stopReason, elapsed());
    } else if (this.#failure !== undefined) {
      end = this.#end('failed', this.#failure, elapsed());
    } else if (this.#handBack && pausedNodes.length === 0) {
      this.#state.elapsedMs = elapsed();
      this.#journal.patchRun({
        elapsed_ms: this.#state.elapsedMs,
        total_steps: this.#state.steps,
        total_tokens: this.#state.tokens,
        exceptions_count: this.#state.exceptions,
      });
      this.#journal.saveSnapshot(() => this.#state);
      await this.#journal.flush();
      return { status: 'handed-back', outputs: this.#state.outputs, error: null, state: this.#state, elapsedMs: this.#state.elapsedMs, finishedAt: null };
    } else if (pausedNodes.length > 0) {
      this.#state.pending = [...this.#state.pending, ...deferred];
      this.#state.paused = reasons;
      this.#state.elapsedMs = elapsed();
      for (const r of reasons) this.#emit('human_input_required', { ...r });
      this.#emit('workflow_paused', {
        workflow_run_id: m.id,
        paused_nodes: pausedNodes,
        outputs: this.#state.outputs,
        reasons: pauseReasons(reasons),
        status: 'paused',
        created_at: sec(m.createdAt),
        elapsed_time: this.#state.elapsedMs / 1000,
        total_tokens: this.#state.tokens,
        total_steps: this.#state.steps,
      });
      this.#journal.patchRun({
        status: 'paused',
        owner_job: null,
        elapsed_ms: this.#state.elapsedMs,
        total_steps: this.#state.steps,
        total_tokens: this.#state.tokens,
        exceptions_count: this.#state.exceptions,
        outputs: JSON.stringify(this.#state.outputs),
      });
      this.#journal.saveSnapshot(() => this.#state);
      await this.#journal.flush();
      return { status: 'paused', outputs: this.#state.outputs, error: null, state: this.#state, elapsedMs: this.#state.elapsedMs, finishedAt: null };
    } else {
      end = this.#end(this.#state.exceptions > 0 ? 'partial-succeeded' : 'succeeded', null, elapsed());
    }
    return this.#finish(end);
  }

  #end(status: RunEnd['status'], error: string | null, elapsedMs: number): RunEnd {
    const outputs = this.#meta.mode === 'advanced-chat' ? { answer: this.#state.answer, ...this.#state.outputs } : this.#state.outputs;
    this.#state.elapsedMs = elapsedMs;
    return { status, outputs: status === 'failed' ? {} : outputs, error, state: this.#state, elapsedMs, finishedAt: this.#ports.now() };
  }

  async #finish(end: RunEnd): Promise<RunEnd> {
    const m = this.#meta;
    if (this.#beforeFinish) {
      // still the owner? (a fenced-out owner must not touch the message either)
      await this.#journal.flush();
      await this.#beforeFinish(end);
    }
    if (m.mode === 'advanced-chat' && (end.status === 'succeeded' || end.status === 'partial-succeeded')) {
      this.#journal.append({
        event: 'message_end',
        conversation_id: m.conversationId,
        message_id: m.messageId,
        created_at: sec(m.createdAt),
        task_id: m.taskId,
        id: m.messageId,
        metadata: { usage: usageOf(this.#state), retriever_resources: [] },
        files: [],
      });
    }
    this.#emit('workflow_finished', {
      id: m.id,
      workflow_id: m.workflowId,
      status: end.status,
      outputs: end.status === 'failed' ? null : end.outputs,
      error: end.error,
      elapsed_time: end.elapsedMs / 1000,
      total_tokens: this.#state.tokens,
      total_steps: this.#state.steps,
      created_by: { id: m.endUserId, user: m.user },
      created_at: sec(m.createdAt),
      finished_at: sec(end.finishedAt!),
      exceptions_count: this.#state.exceptions,
      files: [],
    });
    if (m.mode === 'advanced-chat' && end.status === 'failed') {
      this.#journal.append({
        event: 'error',
        conversation_id: m.conversationId,
        message_id: m.messageId,
        created_at: sec(m.createdAt),
        code: 'completion_request_error',
        status: 400,
        message: end.error ?? 'failed',
      });
    }
    this.#journal.patchRun({
      status: end.status,
      owner_job: null,
      outputs: end.status === 'failed' ? null : JSON.stringify(end.outputs),
      error: end.error,
      total_steps: this.#state.steps,
      total_tokens: this.#state.tokens,
      exceptions_count: this.#state.exceptions,
      elapsed_ms: end.elapsedMs,
      finished_at: end.finishedAt,
    });
    this.#journal.saveSnapshot(() => this.#state);
    await this.#journal.flush();
    return end;
  }

  #start(nodeId: string, from: string | null): Flight {
    const node = this.#graph.nodes.get(nodeId)!;
    this.#state.steps += 1;
    this.#state.index += 1;
    const now = this.#ports.now();
    const started: NodeStarted = {
      id: this.#ports.newId(),
      node_id: node.id,
      node_type: node.type,
      title: node.title,
      index: this.#state.index,
      predecessor_node_id: from,
      inputs: null,
      inputs_truncated: false,
      created_at: sec(now),
      extras: {},
      iteration_id: null,
      loop_id: null,
    };
    this.#emit('node_started', { ...started });
    this.#flying.set(started.id, { nodeId, execId: started.id, from, index: this.#state.index, startedAt: now, started });
    this.#nodeSpans.set(started.id, this.#tracing.start(`node ${node.type}`, { 'dovetail.node_id': node.id, 'dovetail.node_type': node.type, 'dovetail.node_index': started.index }, this.#runSpan));
    return { nodeId, execId: started.id, from, index: this.#state.index, startedAt: now, started };
  }

  async #exec(flight: Flight): Promise<{ flight: Flight; result: NodeResult }> {
    const node = this.#graph.nodes.get(flight.nodeId)!;
    const m = this.#meta;
    try {
      const result = await executeNode(
        {
          node,
          graph: this.#graph,
          pool: this.#pool,
          kind: m.mode,
          runId: m.id,
          appId: m.appId,
          endUserId: m.endUserId,
          conversationId: m.conversationId,
          ports: this.#ports,
          signal: this.#abort.signal,
          streamedSegments: this.#state.streamed?.[node.id] ?? 0,
          emit: (e) => this.#onNodeEvent(e),
          executionId: flight.execId,
          step: () => this.#childStep(),
        },
        (retryIndex, error) => this.#emit('node_retry', this.#finished(flight, 'retry', error, null, null, null, null, { retry_index: retryIndex })),
      );
      return { flight, result };
    } catch (err) {
      return { flight, result: { type: 'failed', error: (err as Error).message } };
    }
  }

  /** A loop / iteration child node starts: it counts as a step and takes the next execution index. */
  #childStep(): number {
    if (this.#state.steps >= this.#limits.maxSteps) throw new NodeFailure(`Max steps ${this.#limits.maxSteps} reached.`, 'NodeError', false);
    this.#state.steps += 1;
    this.#state.index += 1;
    return this.#state.index;
  }

  #finished(
    flight: Flight,
    status: string,
    error: string | null,
    inputs: Record<string, unknown> | null,
    outputs: Record<string, unknown> | null,
    processData: Record<string, unknown> | null,
    metadata: Record<string, unknown> | null,
    extra: { retry_index?: number } = {},
  ): Record<string, unknown> {
    const now = this.#ports.now();
    const st = flight.started;
    return {
      id: st.id,
      node_id: st.node_id,
      node_type: st.node_type,
      title: st.title,
      index: st.index,
      predecessor_node_id: st.predecessor_node_id,
      inputs,
      inputs_truncated: false,
      created_at: st.created_at,
      extras: st.extras,
      iteration_id: null,
      loop_id: null,
      process_data: processData,
      process_data_truncated: false,
      outputs,
      outputs_truncated: false,
      status,
      error,
      elapsed_time: (now - flight.startedAt) / 1000,
      execution_metadata: metadata,
      finished_at: sec(now),
      files: [],
      ...(extra.retry_index !== undefined ? { retry_index: extra.retry_index } : {}),
    };
  }

  #apply(flight: Flight, result: NodeResult, pausedNodes: string[], reasons: HumanInputRequired[]): void {
    const node = this.#graph.nodes.get(flight.nodeId)!;
    this.#flying.delete(flight.execId);
    const span = this.#nodeSpans.get(flight.execId);
    if (span) {
      this.#nodeSpans.delete(flight.execId);
      span.setAttributes({ 'dovetail.node_status': result.type === 'pause' ? 'paused' : result.type, ...(result.type === 'succeeded' || result.type === 'exception' ? { 'dovetail.tokens': result.usage?.total_tokens ?? 0 } : {}) });
      if (result.type === 'failed') span.fail(result.error);
      span.end();
    }
    switch (result.type) {
      case 'succeeded':
      case 'exception': {
        this.#pool.setAll(node.id, result.outputs);
        const tokens = result.usage?.total_tokens ?? 0;
        this.#state.tokens += tokens;
        if (result.usage) this.#state.usage = plusUsage(this.#state.usage, result.usage);
        if (result.type === 'exception') this.#state.exceptions += 1;
        const meta: Record<string, unknown> | null =
          result.usage || result.errorStrategy
            ? {
                ...(result.usage ? { total_tokens: tokens, total_price: Number(result.usage.total_price), currency: result.usage.currency } : {}),
                ...(result.errorStrategy ? { error_strategy: result.errorStrategy } : {}),
              }
            : null;
        this.#emit('node_finished', this.#finished(flight, result.type, result.error, result.inputs, result.outputs, result.processData, meta));
        if (node.type === 'end') Object.assign(this.#state.outputs, result.outputs);
        for (const next of completeNode(this.#graph, this.#state, node.id, result.take)) this.#state.pending.push({ node: next, from: node.id });
        return;
      }
      case 'pause':
        pausedNodes.push(node.id);
        reasons.push(result.required);
        this.#state.pending.push({ node: node.id, from: flight.from });
        return;
      case 'stopped': {
        if ((this.#handBack || this.#dead !== undefined) && this.#stopReason === undefined && this.#failure === undefined) {
          // interrupted by the hand-back: it runs again, from its start, where the run continues
          this.#state.steps -= 1;
          this.#state.pending.unshift({ node: node.id, from: flight.from });
          return;
        }
        const error = this.#stopReason ?? this.#failure ?? STOPPED_BY_USER;
        this.#emit('node_finished', this.#finished(flight, this.#stopReason !== undefined ? 'stopped' : 'failed', error, null, null, null, null));
        return;
      }
      case 'failed':
        this.#failure ??= result.error;
        this.#abort.abort();
        this.#emit('node_finished', this.#finished(flight, 'failed', result.error, null, null, null, null));
        return;
    }
  }
}
