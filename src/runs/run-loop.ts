import { executeNode, type NodeResult } from '../engine/execute-node.js';
import { toSeconds } from '../infra/clock.js';
import type { RunState } from '../engine/run-state.js';
import type { RetrieverResource } from '../engine/retriever-resources.js';
import { Scheduler, type NodeDecision, type StartNode } from '../engine/scheduler.js';
import type { EnginePorts, Graph, NodeStreamEvent } from '../engine/types.js';
import { answerStreams, type AnswerStream } from '../engine/answer-streams.js';
import { nodeStarted } from '../engine/node-started.js';
import type { RunJournal } from './journal.js';
import { nodeFinishedData, pauseReasons, usageOf } from './frames.js';
import { NO_TRACING, type SpanHandle, type Tracing } from '../infra/tracing.js';
import { STOPPED_BY_USER, type Flight, type RunEnd, type RunLimits, type RunMeta } from './run-types.js';
import { OUTPUT_MODERATION_REASON, type OutputModeration } from '../moderation/output-moderation.js';

/** The answer's citations: those of the run when the app's `retriever_resource` feature is on, else none (as Dify). */
export function citationsOf(graph: Graph, state: RunState): RetrieverResource[] {
  return graph.showRetrieveSource ? (state.retrieverResources ?? []) : [];
}

/** The stop reason when output moderation replaced a chatflow's answer with its preset response (Dify's `StopBy.OUTPUT_MODERATION`). */
export const STOPPED_BY_OUTPUT_MODERATION = 'Stopped by output moderation.';

export { STOPPED_BY_USER, type RunEnd, type RunLimits, type RunMeta };

/**
 * Runs a graph from a state, carrying out what its Scheduler (src/engine/scheduler.ts) decides:
 * starts ready nodes (parallel branches run concurrently), and between nodes appends events to
 * the journal, saves the snapshot and traces. Pausing drains in-flight nodes, defers ready ones
 * and persists the state; nothing is kept in memory.
 */
export class RunLoop {
  readonly #meta: RunMeta;
  readonly #graph: Graph;
  readonly #state: RunState;
  readonly #sched: Scheduler;
  readonly #ports: EnginePorts;
  readonly #journal: RunJournal;
  readonly #abort = new AbortController();
  readonly #beforeFinish: ((end: RunEnd) => Promise<void>) | undefined;
  readonly #outputModeration: ((onReplace: (answer: string, reason: string) => void) => Promise<OutputModeration | undefined>) | undefined;
  /** The answer's output moderation in this execution (set when `run()` starts). */
  #moderation: OutputModeration | undefined;
  /** Output moderation replaced the answer with its preset response and stopped the run. */
  #moderationStopped = false;
  /** The run has ended here: a late moderation verdict changes nothing. */
  #ended = false;
  /** Answer text held back while output moderation checks the answer (sent when the check passes). */
  #held = '';
  /** The journal failed (fenced out, or a write error): stop at once, write nothing more. */
  #dead: unknown;
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
    /**
     * Chatflows: the answer's output moderation (undefined: none), given what to do with each
     * replacement; the answer is checked as it streams and once more when the run succeeds.
     */
    outputModeration?: (onReplace: (answer: string, reason: string) => void) => Promise<OutputModeration | undefined>;
  }) {
    this.#tracing = opts.tracing ?? NO_TRACING;
    this.#meta = opts.meta;
    this.#graph = opts.graph;
    this.#state = opts.state;
    this.#sched = new Scheduler(opts.graph, opts.state, opts.limits);
    this.#ports = opts.ports;
    this.#journal = opts.journal;
    this.#beforeFinish = opts.beforeFinish;
    this.#outputModeration = opts.outputModeration;
    this.#streams = opts.meta.mode === 'advanced-chat' ? answerStreams(opts.graph) : new Map();
    this.#journal.onError = (err) => this.#halt(err);
  }

  /** The journal can no longer write: in-flight nodes are aborted and the loop ends by throwing `err`. */
  #halt(err: unknown): void {
    if (this.#dead !== undefined) return;
    this.#dead = err;
    this.#sched.halt();
    this.#abort.abort();
  }

  /** What a snapshot holds: the state as a crash should find it (Scheduler.snapshot). */
  #snapshotView(): RunState {
    return this.#sched.snapshot(this.#ports.now());
  }

  /** Stops before the next node and aborts in-flight model calls (idempotent). */
  requestStop(reason = STOPPED_BY_USER): void {
    if (this.#sched.requestStop(reason)) this.#abort.abort();
  }

  /**
   * The process is shutting down: aborts in-flight nodes, which go back to the front of the queue
   * (they run again from their start), saves the snapshot and ends the loop with the run still
   * `running` and `heartbeat_at` 0, which recovery on any instance continues (RunService).
   */
  requestHandBack(): void {
    if (this.#sched.requestHandBack()) this.#abort.abort();
  }

  #frame(event: string, data: Record<string, unknown>): { event: string; [k: string]: unknown } {
    const m = this.#meta;
    if (m.mode === 'workflow') return { event, workflow_run_id: m.id, task_id: m.taskId, data };
    return { event, conversation_id: m.conversationId, message_id: m.messageId, created_at: toSeconds(m.createdAt), task_id: m.taskId, workflow_run_id: m.id, data };
  }

  #emit(event: string, data: Record<string, unknown>): void {
    this.#journal.append(this.#frame(event, data));
  }

  #message(text: string): void {
    if (this.#moderation) {
      // once output moderation has put its preset response in the answer's place, no more text is
      // sent; while a check is under way (every MODERATION_BUFFER_SIZE characters) text waits for it
      if (!this.#moderation.append(text)) return;
      if (this.#moderation.checking || this.#held !== '') {
        this.#held += text;
        return;
      }
    }
    this.#relay(text);
  }

  /** Sends held answer text once the checks passed. */
  #release(): void {
    if (this.#ended || this.#held === '') return;
    const text = this.#held;
    this.#held = '';
    this.#relay(text);
  }

  #relay(text: string): void {
    const m = this.#meta;
    this.#state.answer += text;
    this.#journal.append({ event: 'message', conversation_id: m.conversationId, message_id: m.messageId, created_at: toSeconds(m.createdAt), task_id: m.taskId, id: m.messageId, answer: text });
  }

  /** Output moderation put `answer` in the answer's place: the client is told (`message_replace`) and the message stores it. */
  #replaced(answer: string, reason: string): void {
    if (this.#ended) return;
    const m = this.#meta;
    // held text is in the replacement (overridden) or dropped with the rest (direct_output)
    this.#held = '';
    this.#state.answer = answer;
    this.#journal.append({ event: 'message_replace', conversation_id: m.conversationId, message_id: m.messageId, created_at: toSeconds(m.createdAt), task_id: m.taskId, answer, reason });
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

  #failedNode: { readonly id: string; readonly title: string; readonly type: string } | undefined;

  /** The first node whose failure failed the run (for the log), if a node's did. */
  get failedNode(): { readonly id: string; readonly title: string; readonly type: string } | undefined {
    return this.#failedNode;
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
    const sched = this.#sched;
    this.#moderation = await this.#outputModeration?.((answer, reason) => this.#replaced(answer, reason));
    // a resumed run's answer so far is what the check goes on from
    if (this.#state.answer !== '') this.#moderation?.append(this.#state.answer);
    // as Dify's advanced-chat pipeline: a direct_output verdict stops the run (its answer is the preset response)
    this.#moderation?.whenIdle(() => this.#release());
    this.#moderation?.whenReplaced(() => {
      if (this.#ended) return;
      this.#moderationStopped = true;
      this.requestStop(STOPPED_BY_OUTPUT_MODERATION);
    });
    sched.begin(this.#ports.now());
    const elapsed = () => sched.elapsed(this.#ports.now());
    const m = this.#meta;
    if (reason !== 'takeover') this.#emit('workflow_started', { id: m.id, workflow_id: m.workflowId, inputs: m.inputs, created_at: toSeconds(m.createdAt), reason });
    const timer = setTimeout(() => {
      sched.timeUp();
      this.#abort.abort();
    }, Math.max(0, sched.timeLeftMs()));
    timer.unref?.();
    const inflight = new Map<string, Promise<{ flight: Flight; result: NodeResult }>>();
    try {
      for (;;) {
        for (const start of sched.ready()) {
          const flight = this.#start(start);
          inflight.set(flight.execId, this.#exec(flight));
        }
        if (inflight.size === 0) break;
        const { flight, result } = await Promise.race(inflight.values());
        inflight.delete(flight.execId);
        this.#apply(flight, result);
        this.#journal.saveSnapshot(() => this.#snapshotView());
      }
    } finally {
      clearTimeout(timer);
    }
    if (this.#dead !== undefined) throw this.#dead;
    // held answer text: the check under way decides whether it is sent (before the run's end events)
    if (this.#moderation) {
      await this.#moderation.settled();
      this.#release();
    }

    const decision = sched.end();
    let end: RunEnd;
    if (decision.type === 'stopped' || decision.type === 'failed') {
      end = this.#end(decision.type, decision.error, elapsed());
    } else if (decision.type === 'handed-back') {
      this.#state.elapsedMs = elapsed();
      this.#journal.patchRun({
        elapsed_ms: this.#state.elapsedMs,
        total_steps: this.#state.steps,
        total_tokens: this.#state.tokens,
        exceptions_count: this.#state.exceptions,
      });
      this.#journal.saveSnapshot(() => this.#state);
      this.#ended = true;
      await this.#journal.flush();
      return { status: 'handed-back', outputs: this.#state.outputs, error: null, state: this.#state, elapsedMs: this.#state.elapsedMs, finishedAt: null };
    } else if (decision.type === 'paused') {
      this.#state.elapsedMs = elapsed();
      for (const r of decision.reasons) this.#emit('human_input_required', { ...r });
      this.#emit('workflow_paused', {
        workflow_run_id: m.id,
        paused_nodes: decision.pausedNodes,
        outputs: this.#state.outputs,
        reasons: pauseReasons(decision.reasons),
        status: 'paused',
        created_at: toSeconds(m.createdAt),
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
      this.#ended = true;
      await this.#journal.flush();
      return { status: 'paused', outputs: this.#state.outputs, error: null, state: this.#state, elapsedMs: this.#state.elapsedMs, finishedAt: null };
    } else {
      end = this.#end(decision.type, null, elapsed());
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
    // a run output moderation stopped still answers (with the preset response), as Dify's
    const answered = m.mode === 'advanced-chat' && (end.status === 'succeeded' || end.status === 'partial-succeeded' || (end.status === 'stopped' && this.#moderationStopped));
    if (answered && this.#moderation && this.#state.answer !== '') {
      // as Dify's advanced-chat pipeline: the whole answer checked once more at the end; a flagged
      // one is replaced (`message_replace` before `message_end`) and the message stores the replacement
      const checked = await this.#moderation.finish(this.#state.answer);
      if (checked.flagged) this.#replaced(checked.answer, OUTPUT_MODERATION_REASON);
    }
    this.#ended = true;
    if (this.#beforeFinish) {
      // still the owner? (a fenced-out owner must not touch the message either)
      await this.#journal.flush();
      await this.#beforeFinish(end);
    }
    if (answered) {
      this.#journal.append({
        event: 'message_end',
        conversation_id: m.conversationId,
        message_id: m.messageId,
        created_at: toSeconds(m.createdAt),
        task_id: m.taskId,
        id: m.messageId,
        metadata: { usage: usageOf(this.#state), retriever_resources: citationsOf(this.#graph, this.#state) },
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
      created_at: toSeconds(m.createdAt),
      finished_at: toSeconds(end.finishedAt!),
      exceptions_count: this.#state.exceptions,
      files: [],
    });
    if (m.mode === 'advanced-chat' && end.status === 'failed') {
      this.#journal.append({
        event: 'error',
        conversation_id: m.conversationId,
        message_id: m.messageId,
        created_at: toSeconds(m.createdAt),
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

  /** Starts a node the scheduler picked (it already took its step and index). */
  #start({ node: nodeId, from, index }: StartNode): Flight {
    const node = this.#graph.nodes.get(nodeId)!;
    const now = this.#ports.now();
    const started = nodeStarted(node, { id: this.#ports.newId(), index, from, startedAt: now });
    this.#emit('node_started', { ...started });
    this.#sched.started(started.id, { node: nodeId, from, index });
    this.#nodeSpans.set(started.id, this.#tracing.start(`node ${node.type}`, { 'dovetail.node_id': node.id, 'dovetail.node_type': node.type, 'dovetail.node_index': started.index }, this.#runSpan));
    return { nodeId, execId: started.id, from, index, startedAt: now, started };
  }

  async #exec(flight: Flight): Promise<{ flight: Flight; result: NodeResult }> {
    const node = this.#graph.nodes.get(flight.nodeId)!;
    const m = this.#meta;
    try {
      const result = await executeNode(
        {
          node,
          graph: this.#graph,
          pool: this.#sched.pool,
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
          step: () => this.#sched.childStep(),
        },
        (retryIndex, error) => this.#emit('node_retry', nodeFinishedData(flight, this.#ports.now(), 'retry', error, null, null, null, null, { retry_index: retryIndex })),
      );
      return { flight, result };
    } catch (err) {
      return { flight, result: { type: 'failed', error: (err as Error).message } };
    }
  }

  /** A node ended: the scheduler applies its result; the span ends and node_finished is journaled as it decides. */
  #apply(flight: Flight, result: NodeResult): void {
    const span = this.#nodeSpans.get(flight.execId);
    if (span) {
      this.#nodeSpans.delete(flight.execId);
      span.setAttributes({ 'dovetail.node_status': result.type === 'pause' ? 'paused' : result.type, ...(result.type === 'succeeded' || result.type === 'exception' ? { 'dovetail.tokens': result.usage?.total_tokens ?? 0 } : {}) });
      if (result.type === 'failed') span.fail(result.error);
      span.end();
    }
    const d: NodeDecision = this.#sched.complete(flight.execId, result);
    if (d.type !== 'finished') return;
    if (d.status === 'failed' && !this.#failedNode) {
      const node = this.#graph.nodes.get(flight.nodeId)!;
      this.#failedNode = { id: node.id, title: node.title, type: node.type };
    }
    if (d.abort) this.#abort.abort();
    this.#emit('node_finished', nodeFinishedData(flight, this.#ports.now(), d.status, d.error, d.inputs, d.outputs, d.processData, d.metadata));
  }
}
