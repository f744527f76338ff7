import type { RunState } from '../engine/run-state.js';
import { readState } from '../engine/run-state.js';
import type { Graph } from '../engine/types.js';
import { VariablePool } from '../engine/variable-pool.js';
import { FencedOut, RunJournal } from './journal.js';
import { SecretMask } from './secret-mask.js';
import { citationsOf, RunLoop, STOPPED_BY_OUTPUT_MODERATION } from './run-loop.js';
import type { RetrieverResource } from '../engine/retriever-resources.js';
import { STOPPED_BY_USER, type RunEnd, type RunMeta } from './run-types.js';
import { usageOf } from './frames.js';
import type { OutputModeration } from '../moderation/output-moderation.js';
import { STOP_CHANNEL, type RunContext } from './run-context.js';
import type { RunEventName } from './run-events.js';

/**
 * The executions of runs in this process: each claimed under an owner epoch (every write of the
 * execution is fenced by it, see RunJournal), run by a RunLoop from the run's snapshot.
 */
export class RunExecutions {
  readonly #c: RunContext;
  /** The executions here; `job`: run as a queue job (its lease speaks for it), else inline. */
  readonly #active = new Map<string, { loop: RunLoop; done: Promise<RunEnd | undefined>; job: boolean }>();

  constructor(ctx: RunContext) {
    this.#c = ctx;
  }

  /** Ids of the runs executing here. */
  ids(): string[] {
    return [...this.#active.keys()];
  }

  /** Ids of the runs executing here inline (not as a queue job). */
  inlineIds(): string[] {
    return [...this.#active].filter(([, a]) => !a.job).map(([id]) => id);
  }

  /** Asks the execution of a run here, if any, to stop before its next node. */
  requestStop(runId: string, reason?: string): void {
    this.#active.get(runId)?.loop.requestStop(reason);
  }

  /** How many runs execute here. */
  get size(): number {
    return this.#active.size;
  }

  /** Asks every execution here to hand its run back; resolves when they all did. */
  async handBackAll(): Promise<void> {
    for (const { loop } of this.#active.values()) loop.requestHandBack();
    await Promise.all([...this.#active.values()].map((a) => a.done));
  }

  /** Stops every execution here; resolves when they all ended. */
  async stopAll(reason: string): Promise<void> {
    for (const { loop } of this.#active.values()) loop.requestStop(reason);
    await Promise.all([...this.#active.values()].map((a) => a.done));
  }

  /**
   * The `run.execute` job: claims the run (compare-and-set of its owner epoch, only for the job
   * that owns it or when no job does) and executes it from its snapshot. Returns when the run
   * ended or paused, or was not this job's to run; throws to have the queue retry (a write failed,
   * or the run was fenced out) or hand the job back (the worker shuts down).
   */
  async executeJob(runId: string, jobId: string, signal: AbortSignal): Promise<void> {
    if (this.#c.closed()) throw new Error('the worker is shutting down');
    const row = await this.#c.runs.find(runId);
    if (!row || row.status !== 'running') return;
    if (row.owner_job !== null && row.owner_job !== jobId) {
      this.#c.logger.warn({ runId, jobId, owner: row.owner_job }, 'a second job for a run owned by another job; ignored');
      return;
    }
    const epoch = Number(row.owner_epoch) + 1;
    const now = this.#c.clock.now();
    if (!(await this.#c.runs.claim(runId, Number(row.owner_epoch), jobId, now))) return;
    // an earlier execution of this job that wrote last at heartbeat_at: this is its takeover
    const silentMs = row.owner_job === jobId && Number(row.heartbeat_at) > 0 ? now - Number(row.heartbeat_at) : undefined;
    if (silentMs !== undefined) this.#c.observeTakeover?.(silentMs / 1000);
    this.#c.logger.info({ runId, jobId, epoch, ...(silentMs !== undefined ? { silentMs } : {}) }, 'executing run');
    const run = await this.continue(runId, epoch, true);
    if (!run) return;
    const handBack = () => run.loop.requestHandBack();
    if (signal.aborted) handBack();
    else signal.addEventListener('abort', handBack, { once: true });
    try {
      const end = await run.done;
      if (end.status === 'handed-back') throw new Error('handed back: the worker is shutting down or lost the lease');
    } finally {
      signal.removeEventListener('abort', handBack);
    }
  }

  /**
   * A run whose job this process claimed as it started the run (`Queue.claimLocal`, epoch 1):
   * executes it at once from the state in hand, as that job's attempt. A stop of the job (shutdown,
   * lost lease) hands the run back; the job then throws so the queue hands it on, as `executeJob`.
   */
  executeClaimed(meta: RunMeta, workspaceId: string, graph: Graph, state: RunState, jobId: string, signal: AbortSignal): { done: Promise<RunEnd>; job: Promise<void> } {
    // the same line as a polled job's claim (operators and the split-brain test read it)
    this.#c.logger.info({ runId: meta.id, jobId, epoch: 1 }, 'executing run');
    const done = this.launch(meta, workspaceId, graph, state, 0, 1, 'initial', true);
    const loop = this.#active.get(meta.id)!.loop;
    const handBack = () => loop.requestHandBack();
    if (signal.aborted) handBack();
    else signal.addEventListener('abort', handBack, { once: true });
    const job = done.then(
      (end) => {
        signal.removeEventListener('abort', handBack);
        if (end.status === 'handed-back') throw new Error('handed back: the worker is shutting down or lost the lease');
      },
      (err: unknown) => {
        signal.removeEventListener('abort', handBack);
        throw err;
      },
    );
    return { done, job };
  }

  /**
   * Executes a run this process claimed under `epoch`. Resolves with the end (or `handed-back`);
   * rejects when the journal failed (fenced out, a write error): the execution stopped at once.
   */
  launch(meta: RunMeta, workspaceId: string, graph: Graph, state: RunState, lastSeq: number, epoch: number, reason: 'initial' | 'resumption' | 'takeover', job = false): Promise<RunEnd> {
    const journal = new RunJournal(this.#c.events, this.#c.bus, this.#c.clock, meta.id, lastSeq, epoch, new SecretMask(graph.secrets), this.#c.flushHoldLimitMs);
    const loop = new RunLoop({
      meta,
      graph,
      state,
      ports: this.#c.ports.of(meta, workspaceId),
      journal,
      limits: this.#c.config,
      tracing: this.#c.tracing,
      beforeFinish: meta.mode === 'advanced-chat' && meta.messageId ? (end) => this.#finishMessage(meta, end, citationsOf(graph, end.state)) : undefined,
      outputModeration: meta.mode === 'advanced-chat' && this.#c.outputModeration ? (onReplace) => this.#outputModeration(meta, onReplace) : undefined,
    });
    const done = (async () => {
      const unsubscribe = await this.#c.bus.subscribe(STOP_CHANNEL(meta.id), (r) => loop.requestStop(r || STOPPED_BY_USER));
      try {
        const end = await loop.run(reason);
        // once per failed run, where it ran: a warn line an operator can find (the API has the same error)
        if (end.status === 'failed') this.#c.logger.warn({ runId: meta.id, appId: meta.appId, mode: meta.mode, node: loop.failedNode ?? null, error: end.error }, `run failed: ${end.error ?? 'failed'}`);
        if (end.status === 'paused') await this.#recheckPaused(meta.id, graph, end.state);
        else if (end.status === 'stopped' || end.status === 'failed') await this.#c.humanInput()?.closeForms(meta.id).catch(() => undefined);
        return end;
      } catch (err) {
        if (err === journal.error || err instanceof FencedOut) {
          // the execution stopped here; the run continues from its last committed snapshot elsewhere
          if (err instanceof FencedOut) this.#c.logger.warn({ runId: meta.id, epoch }, err.message);
          else this.#c.logger.error({ err, runId: meta.id, epoch }, 'writing the run failed; its execution stops here and its job is retried');
          throw err;
        }
        this.#c.logger.error({ err, runId: meta.id }, 'run loop crashed');
        await this.#c.failRun(meta.id, `internal error: ${(err as Error).message}`).catch(() => undefined);
        return { status: 'failed', outputs: {}, error: `internal error: ${(err as Error).message}`, state, elapsedMs: 0, finishedAt: this.#c.clock.now() } satisfies RunEnd;
      } finally {
        await unsubscribe();
        if (this.#active.get(meta.id)?.loop === loop) this.#active.delete(meta.id);
      }
    })();
    this.#active.set(meta.id, { loop, done: done.catch(() => undefined), job });
    return done;
  }

  /**
   * The output moderation (the app's `features.sensitive_word_avoidance`) of the chatflow's answer as
   * it streams, or undefined. One that cannot be set up (its extension is gone) is logged and the
   * answer goes unchecked, as a check that fails.
   */
  async #outputModeration(meta: RunMeta, onReplace: (answer: string, reason: string) => void): Promise<OutputModeration | undefined> {
    const app = await this.#c.findApp(meta.appId);
    if (!app) return undefined;
    try {
      return this.#c.outputModeration?.(app, onReplace);
    } catch (err) {
      this.#c.logger.warn({ err, runId: meta.id, appId: meta.appId }, 'output moderation cannot be set up; the answer is left as it is');
      return undefined;
    }
  }

  async #finishMessage(meta: RunMeta, end: RunEnd, retrieverResources: readonly RetrieverResource[]): Promise<void> {
    // a run output moderation stopped answered with the preset response: a normal message, as Dify's
    const moderated = end.status === 'stopped' && end.error === STOPPED_BY_OUTPUT_MODERATION;
    const status = end.status === 'succeeded' || end.status === 'partial-succeeded' || moderated ? 'normal' : end.status === 'stopped' ? 'stopped' : 'error';
    const usage = usageOf(end.state);
    await this.#c.messages.finish(meta.messageId!, {
      answer: end.state.answer,
      status,
      error: moderated ? null : end.error,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      usage: { ...usage },
      totalPrice: usage.total_price,
      currency: usage.currency,
      latency: end.elapsedMs / 1000,
      updatedAt: this.#c.clock.now(),
      retrieverResources,
    });
    if (meta.conversationId) {
      await this.#c.conversations.touch(meta.conversationId, this.#c.clock.now());
      const app = await this.#c.findApp(meta.appId);
      if (app) await this.#c.conversationVariables.save(app, meta.conversationId, end.state.pool.conversation ?? {});
    }
  }

  /**
   * After a pause is persisted, asks the gateway again for each paused node: a form submitted
   * (or timed out) while the run was pausing would otherwise leave it paused for ever (Dify #42103).
   */
  async #recheckPaused(runId: string, graph: Graph, state: RunState): Promise<void> {
    const gateway = this.#c.humanInput();
    if (!gateway) return;
    const run = await this.#c.runs.find(runId);
    if (!run || run.status !== 'paused') return;
    const pool = new VariablePool(state.pool);
    for (const r of state.paused) {
      const node = graph.nodes.get(r.node_id);
      const d = await gateway
        .decide({
          runId,
          appId: run.app_id,
          endUserId: run.end_user_id,
          nodeId: r.node_id,
          nodeTitle: r.node_title,
          data: node?.data ?? {},
          resolve: (selector) => pool.get(selector),
          render: (t) => pool.render(t),
          now: this.#c.clock.now(),
        })
        .catch(() => undefined);
      if (d && d.type !== 'pause') {
        await this.#c.resume(runId);
        return;
      }
    }
  }

  /**
   * Loads a run this process has just claimed under `epoch` (`running`) and starts executing it
   * from its snapshot: `initial` when its log is empty, `resumption` after a pause, `takeover`
   * when an earlier execution was cut short (its `workflow_started` is in the log already). A run
   * that cannot continue (its app is gone, its snapshot unknown) is failed, saying why.
   */
  async continue(runId: string, epoch: number, job = false): Promise<{ loop: RunLoop; done: Promise<RunEnd> } | undefined> {
    try {
      const run = (await this.#c.runs.find(runId))!;
      // the graph the run started with, although the app may have been updated since
      const app = await this.#c.findAppVersion(run.app_id, run.app_version);
      if (!app) throw new Error(`app ${run.app_id} (version ${run.app_version}) no longer exists`);
      const snap = await this.#c.events.snapshot(runId);
      if (!snap) throw new Error('the run has no snapshot');
      if (Number(snap.version) !== 1) throw new Error(`its snapshot has format version ${snap.version}, which this server does not know (it reads version 1)`);
      const graph = this.#c.ports.graph(app);
      // a reviver makes JSON.parse several times slower: only when the app has secrets to put back
      const mask = new SecretMask(graph.secrets);
      const state = readState(JSON.parse(snap.state, mask.empty ? undefined : mask.reviver));
      state.paused = [];
      const user = await this.#c.endUsers.sessionIdOf(run.end_user_id);
      const meta: RunMeta = {
        id: run.id,
        taskId: run.task_id,
        appId: run.app_id,
        workflowId: run.app_id,
        mode: run.mode === 'advanced-chat' ? 'advanced-chat' : 'workflow',
        endUserId: run.end_user_id,
        user,
        conversationId: run.conversation_id,
        messageId: run.message_id,
        createdAt: Number(run.created_at),
        inputs: JSON.parse(run.inputs) as Record<string, unknown>,
      };
      const reason = await this.#reasonOf(runId, Number(run.last_seq));
      const done = this.launch(meta, app.workspaceId, graph, state, Number(run.last_seq), epoch, reason, job);
      return { loop: this.#active.get(runId)!.loop, done };
    } catch (err) {
      this.#c.logger.error({ err, runId }, 'continuing the run failed');
      await this.#c.failRun(runId, `The run cannot be continued: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** How an execution of a run begins, from its log: see `#continue`. */
  async #reasonOf(runId: string, lastSeq: number): Promise<'initial' | 'resumption' | 'takeover'> {
    if (lastSeq === 0) return 'initial';
    const last = (event: RunEventName) => this.#c.events.lastSeqOf(runId, event);
    const [started, paused] = await Promise.all([last('workflow_started'), last('workflow_paused')]);
    // a pause after the last start: the form was answered; anything else: an execution was cut short
    return paused > started ? 'resumption' : 'takeover';
  }
}
