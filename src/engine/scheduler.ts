import type { HumanInputRequired } from './ports.js';
import { completeNode, type RunState } from './run-state.js';
import { NodeFailure, type Graph, type NodeResult } from './types.js';
import { VariablePool } from './variable-pool.js';
import { plusUsage } from '../lib/usage.js';
import { mergeResources } from './retriever-resources.js';

export const STOPPED_BY_USER = 'Stopped by user.';

export interface SchedulerLimits {
  readonly maxSteps: number;
  readonly maxTimeMs: number;
}

/** Dify's messages for a run that reached a limit. */
export const maxStepsMessage = (limits: SchedulerLimits): string => `Max steps ${limits.maxSteps} reached.`;
export const maxTimeMessage = (limits: SchedulerLimits): string => `Max execution time ${Math.round(limits.maxTimeMs / 1000)}s reached.`;

/** A node to start now: it takes the next step and execution index. */
export interface StartNode {
  readonly node: string;
  readonly from: string | null;
  readonly index: number;
}

/** A node the scheduler started and has not applied yet (`execId`: the shell's node_started id). */
interface InFlight {
  readonly node: string;
  readonly from: string | null;
  readonly index: number;
}

/** What the shell does with a node's result. */
export type NodeDecision =
  /** Journal node_finished with these fields (`abort`: abort the other in-flight nodes first). */
  | {
      readonly type: 'finished';
      readonly status: string;
      readonly error: string | null;
      readonly inputs: Record<string, unknown> | null;
      readonly outputs: Record<string, unknown> | null;
      readonly processData: Record<string, unknown> | null;
      readonly metadata: Record<string, unknown> | null;
      readonly abort: boolean;
    }
  /** Nothing to journal: the node paused (Human Input) or was interrupted by a hand-back and runs again. */
  | { readonly type: 'paused' | 'requeued' };

/** How the run ends once nothing is in flight. */
export type RunDecision =
  | { readonly type: 'stopped' | 'failed'; readonly error: string }
  | { readonly type: 'succeeded' | 'partial-succeeded' }
  | { readonly type: 'handed-back' }
  /** `state.pending` holds the deferred nodes after the paused ones and `state.paused` the reasons. */
  | { readonly type: 'paused'; readonly pausedNodes: readonly string[]; readonly reasons: readonly HumanInputRequired[] };

/**
 * The scheduling of one execution of a run, without I/O: which ready nodes start (parallel
 * branches start together), what a node's result does to the run state, and how the run ends —
 * stop, pause (in-flight nodes drain, ready ones are deferred), the step and time limits, a
 * failure. The clock comes in as values (`begin(now)`, `elapsed(now)`); the time limit is a
 * signal (`timeUp()`) the shell raises after `timeLeftMs()`. It changes the `RunState` it was
 * given, as `completeNode` does; RunLoop journals, snapshots and traces what it decides.
 */
export class Scheduler {
  readonly pool: VariablePool;
  #stopReason: string | undefined;
  #failure: string | undefined;
  #handBack = false;
  #halted = false;
  #startedAt = 0;
  readonly #flying = new Map<string, InFlight>();
  readonly #pausedNodes: string[] = [];
  readonly #reasons: HumanInputRequired[] = [];
  readonly #deferred: { node: string; from: string | null }[] = [];

  constructor(
    readonly graph: Graph,
    readonly state: RunState,
    readonly limits: SchedulerLimits,
  ) {
    this.pool = new VariablePool(state.pool);
  }

  /** The stop reason, when a stop was requested. */
  get stopReason(): string | undefined {
    return this.#stopReason;
  }

  /** Nodes started and not yet applied. */
  get inFlight(): number {
    return this.#flying.size;
  }

  /** A stop was requested: no node starts any more. Returns false when one already was (nothing to abort). */
  requestStop(reason = STOPPED_BY_USER): boolean {
    if (this.#stopReason !== undefined) return false;
    this.#stopReason = reason;
    return true;
  }

  /** The process is shutting down: no node starts any more. Returns false when nothing changes. */
  requestHandBack(): boolean {
    if (this.#stopReason !== undefined || this.#handBack) return false;
    this.#handBack = true;
    return true;
  }

  /** The shell can no longer write (its journal failed): no node starts any more. */
  halt(): void {
    this.#halted = true;
  }

  /** The time limit passed: the run fails with Dify's message (unless it already failed). */
  timeUp(): void {
    this.#failure ??= maxTimeMessage(this.limits);
  }

  /** The execution starts at `now` (epoch ms). */
  begin(now: number): void {
    this.#startedAt = now;
  }

  /** How long this execution may still run, from the time spent before it. */
  timeLeftMs(): number {
    return this.limits.maxTimeMs - this.state.elapsedMs;
  }

  /** The run's elapsed time at `now` (after `begin`): the time spent before this execution plus this one so far. */
  elapsed(now: number): number {
    return this.state.elapsedMs + (now - this.#startedAt);
  }

  #stopping(): boolean {
    return this.#stopReason !== undefined || this.#failure !== undefined || this.#handBack || this.#halted;
  }

  /**
   * The ready nodes to start now, one at a time: start each before taking the next (a node's
   * synchronous events come before the next node_started). Whether the run is stopping is read
   * once, when the round begins. While a node is paused, ready nodes are deferred; at the step
   * limit the run fails and the node stays first in the queue.
   */
  *ready(): Generator<StartNode, void, undefined> {
    const s = this.state;
    const stopping = this.#stopping();
    while (!stopping && s.pending.length > 0) {
      const next = s.pending.shift()!;
      if (this.#pausedNodes.length > 0) {
        this.#deferred.push(next);
        continue;
      }
      if (s.steps >= this.limits.maxSteps) {
        this.#failure = maxStepsMessage(this.limits);
        s.pending.unshift(next);
        return;
      }
      s.steps += 1;
      s.index += 1;
      yield { node: next.node, from: next.from, index: s.index };
    }
  }

  /** The shell started `start` as execution `execId`. */
  started(execId: string, start: StartNode): void {
    this.#flying.set(execId, start);
  }

  /** A loop / iteration child node starts: it counts as a step and takes the next execution index. */
  childStep(): number {
    if (this.state.steps >= this.limits.maxSteps) throw new NodeFailure(maxStepsMessage(this.limits), 'NodeError', false);
    this.state.steps += 1;
    this.state.index += 1;
    return this.state.index;
  }

  /** Applies a node's result to the run state and says what to journal. */
  complete(execId: string, result: NodeResult): NodeDecision {
    const flight = this.#flying.get(execId)!;
    this.#flying.delete(execId);
    const s = this.state;
    const node = this.graph.nodes.get(flight.node)!;
    switch (result.type) {
      case 'succeeded':
      case 'exception': {
        this.pool.setAll(node.id, result.outputs);
        const tokens = result.usage?.total_tokens ?? 0;
        s.tokens += tokens;
        if (result.usage) s.usage = plusUsage(s.usage, result.usage);
        if (result.retrieverResources?.length) s.retrieverResources = mergeResources(s.retrieverResources ?? [], result.retrieverResources);
        if (result.type === 'exception') s.exceptions += 1;
        const metadata: Record<string, unknown> | null =
          result.usage || result.errorStrategy
            ? {
                ...(result.usage ? { total_tokens: tokens, total_price: Number(result.usage.total_price), currency: result.usage.currency } : {}),
                ...(result.errorStrategy ? { error_strategy: result.errorStrategy } : {}),
              }
            : null;
        if (node.type === 'end') Object.assign(s.outputs, result.outputs);
        for (const next of completeNode(this.graph, s, node.id, result.take)) s.pending.push({ node: next, from: node.id });
        return { type: 'finished', status: result.type, error: result.error, inputs: result.inputs, outputs: result.outputs, processData: result.processData, metadata, abort: false };
      }
      case 'pause':
        this.#pausedNodes.push(node.id);
        this.#reasons.push(result.required);
        s.pending.push({ node: node.id, from: flight.from });
        return { type: 'paused' };
      case 'stopped': {
        if ((this.#handBack || this.#halted) && this.#stopReason === undefined && this.#failure === undefined) {
          // interrupted by the hand-back: it runs again, from its start, where the run continues
          s.steps -= 1;
          s.pending.unshift({ node: node.id, from: flight.from });
          return { type: 'requeued' };
        }
        const error = this.#stopReason ?? this.#failure ?? STOPPED_BY_USER;
        return { type: 'finished', status: this.#stopReason !== undefined ? 'stopped' : 'failed', error, inputs: null, outputs: null, processData: null, metadata: null, abort: false };
      }
      case 'failed':
        this.#failure ??= result.error;
        return { type: 'finished', status: 'failed', error: result.error, inputs: result.inputs ?? null, outputs: null, processData: result.processData ?? null, metadata: null, abort: true };
    }
  }

  /**
   * The state as a crash should find it at `now`: nodes in flight go back to the front of the
   * queue (they run again from their start, uncounted) and the elapsed time includes this
   * execution so far, so a run taken over keeps its counters.
   */
  snapshot(now: number): RunState {
    const elapsedMs = this.#startedAt ? this.elapsed(now) : this.state.elapsedMs;
    if (this.#flying.size === 0) return { ...this.state, elapsedMs };
    const again = [...this.#flying.values()].sort((a, b) => a.index - b.index).map((f) => ({ node: f.node, from: f.from }));
    return { ...this.state, elapsedMs, pending: [...again, ...this.state.pending], steps: this.state.steps - this.#flying.size };
  }

  /** How the run ends, once nothing is in flight (a pause moves the deferred nodes back to the queue). */
  end(): RunDecision {
    if (this.#stopReason !== undefined) return { type: 'stopped', error: this.#stopReason };
    if (this.#failure !== undefined) return { type: 'failed', error: this.#failure };
    if (this.#handBack && this.#pausedNodes.length === 0) return { type: 'handed-back' };
    if (this.#pausedNodes.length > 0) {
      this.state.pending = [...this.state.pending, ...this.#deferred];
      this.state.paused = this.#reasons;
      return { type: 'paused', pausedNodes: this.#pausedNodes, reasons: this.#reasons };
    }
    return { type: this.state.exceptions > 0 ? 'partial-succeeded' : 'succeeded' };
  }
}
