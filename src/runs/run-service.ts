import { withCaller, type ToolRuntime } from '../tools/tool.js';
import type { Kysely, Transaction } from 'kysely';
import type { Queue } from '../infra/queue/queue.js';
import type { Database, WorkflowRunTable } from '../store/schema.js';
import type { App } from '../apps/app-service.js';
import type { Bus } from '../infra/bus/bus.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import { newId } from '../infra/ids.js';
import type { ModelProviders } from '../llm/model-provider.js';
import type { ModelPrice } from '../config.js';
import { NO_TRACING, type Tracing } from '../infra/tracing.js';
import type { HumanInputGateway, RunResumer } from '../forms/human-input-port.js';
import { compileGraph } from '../engine/graph.js';
import { initialState, readState, type RunState } from '../engine/run-state.js';
import { type AppKind, type CodeExecutor, type TemplateRenderer, type CodeOutputLimits, type HttpRequester, type RunFiles, type EnginePorts, type Graph, type KnowledgeRetriever } from '../engine/types.js';
import { VariablePool } from '../engine/variable-pool.js';
import { FencedOut, RunJournal, runChannel } from './journal.js';
import { SecretMask } from './secret-mask.js';
import { readRunEvents, type LoggedEvent } from './event-reader.js';
import { RunLoop, STOPPED_BY_USER, type RunEnd, type RunLimits, type RunMeta } from './run-loop.js';
import { ConversationVariables } from './conversation-variables.js';
import { DbConversationMemory } from './conversation-memory.js';
import { finishedFrame, usageOf } from './frames.js';

export interface RunServiceConfig extends RunLimits {
  /** Runs one worker executes at once (`RUN_CONCURRENCY`). */
  readonly concurrency: number;
  /** The lease of a run's job: a dead or stalled worker's run is taken over after it (`RUN_LEASE_SECONDS`). */
  readonly leaseMs: number;
  /** `LOOP_NODE_MAX_COUNT`. */
  readonly loopMaxCount: number;
  /** `MAX_ITERATIONS_NUM`. */
  readonly iterationMaxItems: number;
  /** `ITERATION_MAX_PARALLEL`. */
  readonly iterationMaxParallel: number;
  /** Code node output checks (`CODE_MAX_*`). */
  readonly codeOutputs: CodeOutputLimits;
  /** `AGENT_MAX_ITERATIONS`. */
  readonly agentMaxIterations: number;
}

export interface StartRun {
  readonly app: App;
  readonly endUserId: string;
  readonly user: string;
  readonly inputs: Record<string, unknown>;
  readonly files?: readonly unknown[];
  /** Chatflow only. */
  readonly query?: string;
  readonly conversationId?: string | null;
  readonly messageId?: string | null;
  readonly dialogueCount?: number;
  /** Workflow as tool: how many workflow tools deep this run is (0 when the API starts it). */
  readonly callDepth?: number;
  /** Runs in the transaction that creates the run row and its job (chatflow writes its message row). */
  readonly beforeStart?: (ids: { runId: string; taskId: string }, tx: Transaction<Database>) => Promise<void>;
}

export interface StartedRun {
  readonly runId: string;
  readonly taskId: string;
  /** Settles when the run ends or pauses, wherever it executes (never rejects; undefined when this process shuts down first). */
  readonly done: Promise<RunEnd | undefined>;
}

export type RunRow = WorkflowRunTable;
export { finishedFrame };

const STOP_CHANNEL = (runId: string) => `stop:${runId}`;

/** The job that executes a run: its start, its resume after a form, its takeover after a crash. */
export const RUN_JOB = 'run.execute';
export interface RunJobPayload {
  readonly runId: string;
}

/** The events that end an execution of a run (it ended, or it waits for a form). */
const TERMINAL = new Set(['workflow_finished', 'workflow_paused']);

/**
 * The run lifecycle: start, stop, pause, resume and recovery. A run executes as a queue job
 * (`run.execute`) on whichever worker claims it; claiming increments the run's owner epoch, and
 * every write of that execution is fenced by it (RunJournal). A worker that dies or stalls loses
 * its job's lease; another worker (or the next start) takes the job and continues the run from its
 * last committed snapshot. Streams and blocking callers read the event log, never the run itself.
 * Workflow-as-tool runs (call depth > 0) execute inline in the calling run's worker.
 */
export class RunService implements RunResumer {
  readonly #db: Kysely<Database>;
  readonly #bus: Bus;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #config: RunServiceConfig;
  readonly #providers: () => ModelProviders | undefined;
  #humanInput: HumanInputGateway | undefined;
  readonly #graphs = new WeakMap<App, Graph>();
  readonly #active = new Map<string, { loop: RunLoop; done: Promise<RunEnd | undefined> }>();

  readonly #memory: DbConversationMemory;
  /** Chatflow conversation variables, carried from turn to turn. */
  readonly conversationVariables: ConversationVariables;
  readonly #findApp: (id: string) => Promise<App | undefined>;
  readonly #findAppVersion: (id: string, version: number) => Promise<App | undefined>;
  readonly #knowledge: () => KnowledgeRetriever | undefined;
  readonly #code: CodeExecutor | undefined;
  readonly #templates: TemplateRenderer | undefined;
  readonly #http: HttpRequester | undefined;
  readonly #priceOf: ((model: string) => ModelPrice | undefined) | undefined;
  readonly #files: RunFiles | undefined;
  readonly #tools: ToolRuntime | undefined;
  readonly #tracing: Tracing;
  readonly #queue: Queue | undefined;
  readonly #flushHoldLimitMs: number | undefined;
  readonly #executesJobs: boolean;
  /** Aborted by handBack / close: blocking callers stop waiting. */
  readonly #waiters = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: {
    db: Kysely<Database>;
    bus: Bus;
    clock: Clock;
    logger: Logger;
    config: RunServiceConfig;
    providers: () => ModelProviders | undefined;
    findApp: (id: string) => Promise<App | undefined>;
    /** The app with the graph of an earlier version (runs resume on the version they started with). */
    findAppVersion: (id: string, version: number) => Promise<App | undefined>;
    humanInput?: HumanInputGateway;
    /** The knowledge-retrieval node's port (built after the run service, hence lazy). */
    knowledge?: () => KnowledgeRetriever | undefined;
    /** Runs code nodes (src/code); unset: code nodes fail with a clear error. */
    code?: CodeExecutor;
    templates?: TemplateRenderer;
    /** Sends http-request nodes' requests (src/outbound); unset: those nodes fail with a clear error. */
    http?: HttpRequester;
    /** The price table row of a model name; unset: model calls are free. */
    priceOf?: (model: string) => ModelPrice | undefined;
    /** Reads files in runs (document-extractor, list-operator on files); unset: those nodes fail with a clear error. */
    files?: RunFiles;
    /** Tools for tool and agent nodes (src/tools); unset: those nodes fail naming the tool. */
    tools?: ToolRuntime;
    /** Spans per run and node; unset: none. */
    tracing?: Tracing;
    /** Runs execute as its jobs (registered here); unset: every run executes inline. */
    queue?: Queue;
    /**
     * Whether this process runs the queue's worker (`QUEUE_WORKER`); default true. A process
     * without one executes the runs it starts (and resumes without a transaction) inline, as
     * before runs were jobs; resumes written in a form's transaction wait for a worker.
     */
    executesJobs?: boolean;
    /** PostgreSQL: the longest a stalled owner may hold a run row inside a journal flush (see RunJournal); unset on SQLite. */
    flushHoldLimitMs?: number;
  }) {
    this.#flushHoldLimitMs = deps.flushHoldLimitMs;
    this.#executesJobs = deps.executesJobs ?? true;
    this.#queue = deps.queue;
    deps.queue?.register<RunJobPayload>(
      RUN_JOB,
      {
        run: (p, ctx) => this.#executeJob(p.runId, ctx.jobId, ctx.signal),
        onFailed: async (p, error) => {
          await this.#failRun(p.runId, `The run could not be continued: ${error}`);
        },
      },
      { concurrency: deps.config.concurrency, leaseMs: deps.config.leaseMs },
    );
    this.#tracing = deps.tracing ?? NO_TRACING;
    this.#db = deps.db;
    this.#bus = deps.bus;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#config = deps.config;
    this.#providers = deps.providers;
    this.#findApp = deps.findApp;
    this.#findAppVersion = deps.findAppVersion;
    this.#humanInput = deps.humanInput;
    this.#knowledge = deps.knowledge ?? (() => undefined);
    this.#code = deps.code;
    this.#templates = deps.templates;
    this.#http = deps.http;
    this.#priceOf = deps.priceOf;
    this.#files = deps.files;
    this.#tools = deps.tools;
    this.#memory = new DbConversationMemory(deps.db);
    this.conversationVariables = new ConversationVariables(deps.db, deps.clock);
  }

  /** Plugs the Human Input form store in (the lead's `src/forms`); tests plug an in-memory one. */
  setHumanInputGateway(gateway: HumanInputGateway | undefined): void {
    this.#humanInput = gateway;
  }

  get humanInput(): HumanInputGateway | undefined {
    return this.#humanInput;
  }

  /**
   * Queues the runs an earlier version left `running` (owner epoch -1, set by migration 021): they
   * continue from their snapshots. Then checks the durable stop flag of runs executing here every
   * third of the lease (for stops whose bus message did not reach this instance).
   */
  async startBackground(): Promise<void> {
    const legacy = await this.#db.selectFrom('workflow_runs').select('id').where('status', '=', 'running').where('owner_epoch', '=', -1).execute();
    for (const r of legacy) {
      if (!this.#queue) break;
      await this.#db.transaction().execute(async (tx) => {
        const res = await tx.updateTable('workflow_runs').set({ owner_epoch: 0 }).where('id', '=', r.id).where('owner_epoch', '=', -1).executeTakeFirst();
        if (Number(res.numUpdatedRows) === 1) await this.#queue!.enqueue(RUN_JOB, { runId: r.id } satisfies RunJobPayload, { tx });
      });
    }
    if (legacy.length > 0) this.#queue?.notify();
    const every = Math.max(50, Math.floor(this.#config.leaseMs / 3));
    this.#timer = setInterval(() => void this.#tick().catch((err) => this.#logger.warn({ err }, 'run stop-flag check failed')), every);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    const ids = [...this.#active.keys()];
    if (ids.length === 0) return;
    const stopped = await this.#db.selectFrom('workflow_runs').select('id').where('id', 'in', ids).where('stop_requested', '=', 1).execute();
    for (const r of stopped) this.#active.get(r.id)?.loop.requestStop();
  }

  #graph(app: App): Graph {
    let g = this.#graphs.get(app);
    if (!g) {
      g = compileGraph(app.dsl);
      this.#graphs.set(app, g);
    }
    return g;
  }

  #ports(meta: RunMeta, workspaceId: string): EnginePorts {
    const caller = { workspaceId, appId: meta.appId, runId: meta.id, endUserId: meta.endUserId, user: meta.user, callDepth: meta.callDepth ?? 0 };
    return {
      providers: this.#providers(),
      humanInput: this.#humanInput,
      memory: this.#memory,
      knowledge: this.#knowledge(),
      limits: {
        loopMaxCount: this.#config.loopMaxCount,
        iterationMaxItems: this.#config.iterationMaxItems,
        iterationMaxParallel: this.#config.iterationMaxParallel,
        code: this.#config.codeOutputs,
        agentMaxIterations: this.#config.agentMaxIterations,
      },
      code: this.#code,
      templates: this.#templates,
      http: this.#http,
      ...(this.#priceOf ? { priceOf: this.#priceOf } : {}),
      files: this.#files,
      tools: this.#tools && withCaller(this.#tools, caller),
      now: () => this.#clock.now(),
      newId,
      sleep: (ms, signal) =>
        new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        }),
    };
  }

  /** Creates the run row and starts the run in the background. */
  async start(input: StartRun): Promise<StartedRun> {
    const app = input.app;
    const mode: AppKind = app.mode === 'advanced-chat' ? 'advanced-chat' : 'workflow';
    const graph = this.#graph(app);
    const now = this.#clock.now();
    const meta: RunMeta = {
      id: newId(),
      taskId: newId(),
      appId: app.id,
      workflowId: app.id,
      mode,
      endUserId: input.endUserId,
      user: input.user,
      conversationId: input.conversationId ?? null,
      messageId: input.messageId ?? null,
      createdAt: now,
      inputs: input.inputs,
      ...(input.callDepth ? { callDepth: input.callDepth } : {}),
    };
    const sys: Record<string, unknown> = {
      files: input.files ?? [],
      user_id: input.user,
      app_id: app.id,
      workflow_id: app.id,
      workflow_run_id: meta.id,
      workflow_execution_id: meta.id,
    };
    if (mode === 'advanced-chat') {
      Object.assign(sys, { query: input.query ?? '', conversation_id: meta.conversationId, dialogue_count: input.dialogueCount ?? 1 });
    }
    const state = initialState(graph, {
      sys,
      env: { ...graph.environment },
      conversation: {
        ...graph.conversationDefaults,
        ...(mode === 'advanced-chat' && meta.conversationId ? await this.conversationVariables.load(app, meta.conversationId) : {}),
      },
      [graph.startId]: { ...input.inputs, ...(mode === 'advanced-chat' ? { 'sys.query': input.query ?? '' } : {}) },
    });
    const inline = !this.#queue || !this.#executesJobs || (input.callDepth ?? 0) > 0;
    const mask = new SecretMask(graph.secrets);
    await this.#db.transaction().execute(async (tx) => {
      await tx
      .insertInto('workflow_runs')
      .values({
        id: meta.id,
        app_id: app.id,
        app_version: app.version,
        task_id: meta.taskId,
        mode,
        end_user_id: meta.endUserId,
        conversation_id: meta.conversationId,
        message_id: meta.messageId,
        status: 'running',
        inputs: JSON.stringify(input.inputs),
        outputs: null,
        error: null,
        total_steps: 0,
        total_tokens: 0,
        exceptions_count: 0,
        elapsed_ms: 0,
        stop_requested: 0,
        last_seq: 0,
        heartbeat_at: now,
        created_at: now,
        finished_at: null,
        // an inline run is owned by this process from the start (epoch 1); a queued one by the job that claims it
        owner_epoch: inline ? 1 : 0,
        owner_job: null,
      })
      .execute();
      if (!inline) {
        // the initial state is the first snapshot: whichever worker claims the job starts from it
        const snap = JSON.stringify(state, mask.snapshotReplacer);
        await tx.insertInto('workflow_run_snapshots').values({ run_id: meta.id, version: 1, state: snap, updated_at: now }).execute();
      }
      if (input.beforeStart) await input.beforeStart({ runId: meta.id, taskId: meta.taskId }, tx);
      if (!inline) await this.#queue!.enqueue(RUN_JOB, { runId: meta.id } satisfies RunJobPayload, { tx });
    });
    if (inline) {
      const done = this.#launch(meta, app.workspaceId, graph, state, 0, 1, 'initial');
      return { runId: meta.id, taskId: meta.taskId, done: done.catch(() => undefined) };
    }
    this.#queue!.notify();
    return { runId: meta.id, taskId: meta.taskId, done: this.#awaitEnd(meta.id, 0) };
  }

  /**
   * Waits on the run's event log (wherever it executes) for the next `workflow_finished` or
   * `workflow_paused` after `afterSeq`, then describes that end; undefined when this process
   * shuts down first.
   */
  async #awaitEnd(runId: string, afterSeq: number): Promise<RunEnd | undefined> {
    const stop = new AbortController();
    const onClose = () => stop.abort();
    this.#waiters.signal.addEventListener('abort', onClose, { once: true });
    if (this.#waiters.signal.aborted) return undefined;
    try {
      for await (const e of readRunEvents(this.#db, this.#bus, runId, afterSeq, stop.signal)) {
        if (!TERMINAL.has(e.payload.event)) continue;
        const data = (e.payload.data ?? {}) as Record<string, unknown>;
        const snap = await this.#db.selectFrom('workflow_run_snapshots').select('state').where('run_id', '=', runId).executeTakeFirst();
        const state = readState(JSON.parse(snap!.state));
        const paused = e.payload.event === 'workflow_paused';
        const elapsedMs = Math.round(Number(data.elapsed_time ?? 0) * 1000);
        return {
          status: paused ? 'paused' : (data.status as RunEnd['status']),
          outputs: (data.outputs as Record<string, unknown> | null) ?? {},
          error: paused ? null : ((data.error as string | null) ?? null),
          state,
          elapsedMs,
          finishedAt: paused ? null : Number(data.finished_at ?? 0) * 1000,
        };
      }
      return undefined;
    } catch (err) {
      this.#logger.error({ err, runId }, 'waiting for a run failed');
      return undefined;
    } finally {
      stop.abort();
      this.#waiters.signal.removeEventListener('abort', onClose);
    }
  }

  /**
   * The `run.execute` job: claims the run (compare-and-set of its owner epoch, only for the job
   * that owns it or when no job does) and executes it from its snapshot. Returns when the run
   * ended or paused, or was not this job's to run; throws to have the queue retry (a write failed,
   * or the run was fenced out) or hand the job back (the worker shuts down).
   */
  async #executeJob(runId: string, jobId: string, signal: AbortSignal): Promise<void> {
    if (this.#closed) throw new Error('the worker is shutting down');
    const row = await this.find(runId);
    if (!row || row.status !== 'running') return;
    if (row.owner_job !== null && row.owner_job !== jobId) {
      this.#logger.warn({ runId, jobId, owner: row.owner_job }, 'a second job for a run owned by another job; ignored');
      return;
    }
    const epoch = Number(row.owner_epoch) + 1;
    const claimed = await this.#db
      .updateTable('workflow_runs')
      .set({ owner_epoch: epoch, owner_job: jobId, heartbeat_at: this.#clock.now() })
      .where('id', '=', runId)
      .where('status', '=', 'running')
      .where('owner_epoch', '=', Number(row.owner_epoch))
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) return;
    this.#logger.info({ runId, jobId, epoch }, 'executing run');
    const run = await this.#continue(runId, epoch);
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
   * Executes a run this process claimed under `epoch`. Resolves with the end (or `handed-back`);
   * rejects when the journal failed (fenced out, a write error): the execution stopped at once.
   */
  #launch(meta: RunMeta, workspaceId: string, graph: Graph, state: RunState, lastSeq: number, epoch: number, reason: 'initial' | 'resumption' | 'takeover'): Promise<RunEnd> {
    const journal = new RunJournal(this.#db, this.#bus, this.#clock, meta.id, lastSeq, epoch, new SecretMask(graph.secrets), this.#flushHoldLimitMs);
    const loop = new RunLoop({
      meta,
      graph,
      state,
      ports: this.#ports(meta, workspaceId),
      journal,
      limits: this.#config,
      tracing: this.#tracing,
      beforeFinish: meta.mode === 'advanced-chat' && meta.messageId ? (end) => this.#finishMessage(meta, end) : undefined,
    });
    const done = (async () => {
      const unsubscribe = await this.#bus.subscribe(STOP_CHANNEL(meta.id), (r) => loop.requestStop(r || STOPPED_BY_USER));
      try {
        const end = await loop.run(reason);
        if (end.status === 'paused') await this.#recheckPaused(meta.id, graph, end.state);
        else if (end.status === 'stopped' || end.status === 'failed') await this.#humanInput?.closeForms(meta.id).catch(() => undefined);
        return end;
      } catch (err) {
        if (err === journal.error || err instanceof FencedOut) {
          // the execution stopped here; the run continues from its last committed snapshot elsewhere
          if (err instanceof FencedOut) this.#logger.warn({ runId: meta.id, epoch }, err.message);
          else this.#logger.error({ err, runId: meta.id, epoch }, 'writing the run failed; its execution stops here and its job is retried');
          throw err;
        }
        this.#logger.error({ err, runId: meta.id }, 'run loop crashed');
        await this.#failRun(meta.id, `internal error: ${(err as Error).message}`).catch(() => undefined);
        return { status: 'failed', outputs: {}, error: `internal error: ${(err as Error).message}`, state, elapsedMs: 0, finishedAt: this.#clock.now() } satisfies RunEnd;
      } finally {
        await unsubscribe();
        if (this.#active.get(meta.id)?.loop === loop) this.#active.delete(meta.id);
      }
    })();
    this.#active.set(meta.id, { loop, done: done.catch(() => undefined) });
    return done;
  }

  async #finishMessage(meta: RunMeta, end: RunEnd): Promise<void> {
    const status = end.status === 'succeeded' || end.status === 'partial-succeeded' ? 'normal' : end.status === 'stopped' ? 'stopped' : 'error';
    const usage = usageOf(end.state);
    await this.#db
      .updateTable('messages')
      .set({
        answer: end.state.answer,
        status,
        error: end.error,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        usage: JSON.stringify(usage),
        total_price: usage.total_price,
        currency: usage.currency,
        latency: end.elapsedMs / 1000,
        updated_at: this.#clock.now(),
      })
      .where('id', '=', meta.messageId!)
      .execute();
    if (meta.conversationId) {
      await this.#db.updateTable('conversations').set({ updated_at: this.#clock.now() }).where('id', '=', meta.conversationId).execute();
      const app = await this.#findApp(meta.appId);
      if (app) await this.conversationVariables.save(app, meta.conversationId, end.state.pool.conversation ?? {});
    }
  }

  /**
   * After a pause is persisted, asks the gateway again for each paused node: a form submitted
   * (or timed out) while the run was pausing would otherwise leave it paused for ever (Dify #42103).
   */
  async #recheckPaused(runId: string, graph: Graph, state: RunState): Promise<void> {
    const gateway = this.#humanInput;
    if (!gateway) return;
    const run = await this.find(runId);
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
          now: this.#clock.now(),
        })
        .catch(() => undefined);
      if (d && d.type !== 'pause') {
        await this.resume(runId);
        return;
      }
    }
  }

  async find(runId: string): Promise<RunRow | undefined> {
    return this.#db.selectFrom('workflow_runs').selectAll().where('id', '=', runId).executeTakeFirst();
  }

  /** A run of this app, or undefined. */
  async findForApp(appId: string, runId: string): Promise<RunRow | undefined> {
    const row = await this.find(runId);
    return row && row.app_id === appId ? row : undefined;
  }

  /** Waits until the run's current execution ends or pauses (wherever it executes); at once when it is not running. */
  async wait(runId: string): Promise<void> {
    const row = await this.find(runId);
    if (!row || row.status !== 'running') return;
    await this.#awaitEnd(runId, Number(row.last_seq));
  }

  /**
   * Stops a task of this app: a running run stops before its next node (in-flight calls are
   * aborted), a paused one ends `stopped` at once; unknown or finished tasks are left alone.
   */
  async stopTask(appId: string, taskId: string, opts: { reason?: string; endUserId?: string } = {}): Promise<void> {
    const reason = opts.reason ?? STOPPED_BY_USER;
    let q = this.#db.selectFrom('workflow_runs').select(['id', 'status']).where('task_id', '=', taskId).where('app_id', '=', appId);
    if (opts.endUserId) q = q.where('end_user_id', '=', opts.endUserId);
    const runs = await q.execute();
    for (const r of runs) {
      if (r.status === 'paused') await this.stop(r.id, reason);
      else if (r.status === 'running') {
        await this.#db.updateTable('workflow_runs').set({ stop_requested: 1 }).where('id', '=', r.id).where('status', '=', 'running').execute();
        this.#active.get(r.id)?.loop.requestStop(reason);
        await this.#bus.publish(STOP_CHANNEL(r.id), reason).catch(() => undefined);
      }
    }
  }

  /** RunResumer: a paused run ends `stopped` (user stop or global timeout) and its forms close. */
  async stop(runId: string, reason: string): Promise<void> {
    const run = await this.#endWithFrame(runId, ['paused'], 'stopped', reason);
    if (!run) return;
    if (run.message_id) await this.#db.updateTable('messages').set({ status: 'stopped', error: reason, updated_at: this.#clock.now() }).where('id', '=', run.message_id).execute();
    await this.#humanInput?.closeForms(runId).catch(() => undefined);
  }

  /**
   * Ends a run that is not executing anywhere (paused, or orphaned): in one transaction a
   * compare-and-set of its status and the append of its `workflow_finished` frame, then the
   * doorbell. Returns the ended row, or undefined when the run was not in `from`.
   */
  async #endWithFrame(runId: string, from: string[], status: 'stopped' | 'failed', error: string): Promise<RunRow | undefined> {
    const now = this.#clock.now();
    const ended = await this.#db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('workflow_runs')
        // a new epoch: an owner still executing it (stalled) is fenced out
        .set((eb) => ({ status, error, finished_at: now, stop_requested: status === 'stopped' ? 1 : eb.ref('stop_requested'), last_seq: eb('last_seq', '+', 1), owner_epoch: eb('owner_epoch', '+', 1), owner_job: null }))
        .where('id', '=', runId)
        .where('status', 'in', from)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return undefined;
      const run = await trx.selectFrom('workflow_runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
      const user = await trx.selectFrom('end_users').select('session_id').where('id', '=', run.end_user_id).executeTakeFirst();
      const frame = finishedFrame(run, user?.session_id ?? '', run.app_id);
      await trx
        .insertInto('workflow_run_events')
        .values({ run_id: runId, seq: Number(run.last_seq), event: 'workflow_finished', payload: JSON.stringify(frame), created_at: now })
        .execute();
      return run;
    });
    if (ended) await this.#bus.publish(runChannel(runId), String(ended.last_seq)).catch(() => undefined);
    return ended;
  }

  /**
   * RunResumer: compare-and-set `paused → running`, clear the stale stop flag, and queue the job
   * that continues the run from its snapshot, in `tx` when given (the form submission's
   * transaction: the decision and the resume commit together) or in a transaction of its own. A
   * run that is not paused is left alone (idempotent). Without a queue the run continues inline.
   */
  async resume(runId: string, tx?: Transaction<Database>): Promise<void> {
    if (this.#closed && !tx) return;
    const go = async (t: Transaction<Database>) => {
      const r = await t
        .updateTable('workflow_runs')
        .set({ status: 'running', stop_requested: 0, heartbeat_at: this.#clock.now(), owner_job: null })
        .where('id', '=', runId)
        .where('status', '=', 'paused')
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return false;
      if (this.#queue && (tx || this.#executesJobs)) await this.#queue.enqueue(RUN_JOB, { runId } satisfies RunJobPayload, { tx: t });
      return true;
    };
    if (tx) {
      await go(tx);
      return;
    }
    const resumed = await this.#db.transaction().execute(go);
    if (!resumed) return;
    if (this.#queue && this.#executesJobs) {
      this.#queue.notify();
      return;
    }
    // no queue: continue here
    const claimed = await this.#db
      .updateTable('workflow_runs')
      .set((eb) => ({ owner_epoch: eb('owner_epoch', '+', 1) }))
      .where('id', '=', runId)
      .returning('owner_epoch')
      .executeTakeFirst();
    const run = await this.#continue(runId, Number(claimed!.owner_epoch));
    void run?.done.catch(() => undefined);
  }

  /**
   * Loads a run this process has just claimed under `epoch` (`running`) and starts executing it
   * from its snapshot: `initial` when its log is empty, `resumption` after a pause, `takeover`
   * when an earlier execution was cut short (its `workflow_started` is in the log already). A run
   * that cannot continue (its app is gone, its snapshot unknown) is failed, saying why.
   */
  async #continue(runId: string, epoch: number): Promise<{ loop: RunLoop; done: Promise<RunEnd> } | undefined> {
    try {
      const run = (await this.find(runId))!;
      // the graph the run started with, although the app may have been updated since
      const app = await this.#findAppVersion(run.app_id, run.app_version);
      if (!app) throw new Error(`app ${run.app_id} (version ${run.app_version}) no longer exists`);
      const snap = await this.#db.selectFrom('workflow_run_snapshots').select(['state', 'version']).where('run_id', '=', runId).executeTakeFirst();
      if (!snap) throw new Error('the run has no snapshot');
      if (Number(snap.version) !== 1) throw new Error(`its snapshot has format version ${snap.version}, which this server does not know (it reads version 1)`);
      const graph = this.#graph(app);
      const state = readState(JSON.parse(snap.state, new SecretMask(graph.secrets).reviver));
      state.paused = [];
      const user = await this.#db.selectFrom('end_users').select('session_id').where('id', '=', run.end_user_id).executeTakeFirst();
      const meta: RunMeta = {
        id: run.id,
        taskId: run.task_id,
        appId: run.app_id,
        workflowId: run.app_id,
        mode: run.mode === 'advanced-chat' ? 'advanced-chat' : 'workflow',
        endUserId: run.end_user_id,
        user: user?.session_id ?? '',
        conversationId: run.conversation_id,
        messageId: run.message_id,
        createdAt: Number(run.created_at),
        inputs: JSON.parse(run.inputs) as Record<string, unknown>,
      };
      const reason = await this.#reasonOf(runId, Number(run.last_seq));
      const done = this.#launch(meta, app.workspaceId, graph, state, Number(run.last_seq), epoch, reason);
      return { loop: this.#active.get(runId)!.loop, done };
    } catch (err) {
      this.#logger.error({ err, runId }, 'continuing the run failed');
      await this.#failRun(runId, `The run cannot be continued: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** How an execution of a run begins, from its log: see `#continue`. */
  async #reasonOf(runId: string, lastSeq: number): Promise<'initial' | 'resumption' | 'takeover'> {
    if (lastSeq === 0) return 'initial';
    const last = async (event: string) => {
      const r = await this.#db.selectFrom('workflow_run_events').select('seq').where('run_id', '=', runId).where('event', '=', event).orderBy('seq', 'desc').limit(1).executeTakeFirst();
      return r ? Number(r.seq) : 0;
    };
    const [started, paused] = await Promise.all([last('workflow_started'), last('workflow_paused')]);
    // a pause after the last start: the form was answered; anything else: an execution was cut short
    return paused > started ? 'resumption' : 'takeover';
  }

  /**
   * Where a stream reopened without a snapshot starts: just after the latest `workflow_paused`
   * (so a resumed run's events are never missed), or at the start when the run never paused.
   */
  async lastPauseSeq(runId: string): Promise<number> {
    const row = await this.#db
      .selectFrom('workflow_run_events')
      .select('seq')
      .where('run_id', '=', runId)
      .where('event', '=', 'workflow_paused')
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? Number(row.seq) : 0;
  }

  /** Replays a run's log after `afterSeq`, then tails it. */
  events(runId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<LoggedEvent> {
    return readRunEvents(this.#db, this.#bus, runId, afterSeq, signal);
  }

  async #failRun(runId: string, error: string): Promise<boolean> {
    const run = await this.#endWithFrame(runId, ['running', 'paused'], 'failed', error);
    if (!run) return false;
    if (run.message_id) await this.#db.updateTable('messages').set({ status: 'error', error, updated_at: this.#clock.now() }).where('id', '=', run.message_id).execute();
    this.#logger.warn({ runId, error }, 'run failed by recovery');
    return true;
  }

  /**
   * Shutdown: closes the queue, which aborts the run jobs executing here; each hands its run back
   * (see RunLoop.requestHandBack: in-flight nodes are saved to run again, the snapshot is written)
   * and its job goes back to the queue, for another worker or the next start. Inline runs (workflow
   * tools) stop with their calling run. Blocking callers stop waiting.
   */
  async handBack(): Promise<number> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#waiters.abort();
    const active = [...this.#active.values()];
    if (this.#queue) await this.#queue.close();
    for (const { loop } of this.#active.values()) loop.requestHandBack();
    await Promise.all([...this.#active.values()].map((a) => a.done));
    return active.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#waiters.abort();
    for (const { loop } of this.#active.values()) loop.requestStop('The server is shutting down.');
    await Promise.all([...this.#active.values()].map((a) => a.done));
  }
}
