import { withCaller, type ToolRuntime } from '../tools/tool.js';
import type { Kysely } from 'kysely';
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
import { DEFAULT_ENGINE_LIMITS, type AppKind, type CodeExecutor, type TemplateRenderer, type CodeOutputLimits, type HttpRequester, type RunFiles, type EnginePorts, type Graph, type KnowledgeRetriever } from '../engine/types.js';
import { VariablePool } from '../engine/variable-pool.js';
import { RunJournal, runChannel } from './journal.js';
import { SecretMask } from './secret-mask.js';
import { readRunEvents, type LoggedEvent } from './event-reader.js';
import { RunLoop, STOPPED_BY_USER, type RunEnd, type RunLimits, type RunMeta } from './run-loop.js';
import { ConversationVariables } from './conversation-variables.js';
import { DbConversationMemory } from './conversation-memory.js';
import { finishedFrame, usageOf } from './frames.js';

export interface RunServiceConfig extends RunLimits {
  /** A `running` run whose heartbeat is older than this is an orphan (its process died). */
  readonly orphanAfterMs: number;
  /** `LOOP_NODE_MAX_COUNT`; Dify's default when absent. */
  readonly loopMaxCount?: number;
  /** `MAX_ITERATIONS_NUM`; Dify's default when absent. */
  readonly iterationMaxItems?: number;
  /** `ITERATION_MAX_PARALLEL`; the engine default when absent. */
  readonly iterationMaxParallel?: number;
  /** Code node output checks; Dify's defaults when absent. */
  readonly codeOutputs?: CodeOutputLimits;
  /** `AGENT_MAX_ITERATIONS`; the engine default when absent. */
  readonly agentMaxIterations?: number;
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
  /** Runs after the run row exists and before the run starts (chatflow writes its message row). */
  readonly beforeStart?: (ids: { runId: string; taskId: string }) => Promise<void>;
}

export interface StartedRun {
  readonly runId: string;
  readonly taskId: string;
  /** Settles when the run ends or pauses (never rejects). */
  readonly done: Promise<RunEnd | undefined>;
}

export type RunRow = WorkflowRunTable;
export { finishedFrame };

const STOP_CHANNEL = (runId: string) => `stop:${runId}`;

/**
 * The run lifecycle: start, stop, pause, resume and recovery. Runs execute in the background of
 * the process that starts or resumes them; streams read the event log, never the run itself.
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
  }) {
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

  /** Recovers orphans now and then every `orphanAfterMs / 2`; refreshes heartbeats of own runs. */
  async startBackground(): Promise<void> {
    await this.recoverOrphans();
    const every = Math.max(50, Math.floor(this.#config.orphanAfterMs / 3));
    this.#timer = setInterval(() => void this.#tick().catch((err) => this.#logger.warn({ err }, 'run heartbeat failed')), every);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    const ids = [...this.#active.keys()];
    if (ids.length > 0) {
      await this.#db.updateTable('workflow_runs').set({ heartbeat_at: this.#clock.now() }).where('id', 'in', ids).where('status', '=', 'running').execute();
      // the durable stop flag, for stops sent by an instance whose bus message did not reach us
      const stopped = await this.#db.selectFrom('workflow_runs').select('id').where('id', 'in', ids).where('stop_requested', '=', 1).execute();
      for (const r of stopped) this.#active.get(r.id)?.loop.requestStop();
    }
    await this.recoverOrphans();
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
        loopMaxCount: this.#config.loopMaxCount ?? DEFAULT_ENGINE_LIMITS.loopMaxCount,
        iterationMaxItems: this.#config.iterationMaxItems ?? DEFAULT_ENGINE_LIMITS.iterationMaxItems,
        iterationMaxParallel: this.#config.iterationMaxParallel ?? DEFAULT_ENGINE_LIMITS.iterationMaxParallel,
        code: this.#config.codeOutputs ?? DEFAULT_ENGINE_LIMITS.code,
        agentMaxIterations: this.#config.agentMaxIterations ?? DEFAULT_ENGINE_LIMITS.agentMaxIterations,
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
    await this.#db
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
      })
      .execute();
    if (input.beforeStart) await input.beforeStart({ runId: meta.id, taskId: meta.taskId });
    const done = this.#launch(meta, app.workspaceId, graph, state, 0, 'initial');
    return { runId: meta.id, taskId: meta.taskId, done };
  }

  #launch(meta: RunMeta, workspaceId: string, graph: Graph, state: RunState, lastSeq: number, reason: 'initial' | 'resumption'): Promise<RunEnd | undefined> {
    const journal = new RunJournal(this.#db, this.#bus, this.#clock, meta.id, lastSeq, new SecretMask(graph.secrets));
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
        this.#logger.error({ err, runId: meta.id }, 'run loop crashed');
        await this.#failRun(meta.id, `internal error: ${(err as Error).message}`).catch(() => undefined);
        return undefined;
      } finally {
        await unsubscribe();
        if (this.#active.get(meta.id)?.loop === loop) this.#active.delete(meta.id);
      }
    })();
    this.#active.set(meta.id, { loop, done });
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

  /** Waits for a run started or resumed by this process (blocking responses). */
  async wait(runId: string): Promise<void> {
    await this.#active.get(runId)?.done;
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
        .set((eb) => ({ status, error, finished_at: now, stop_requested: status === 'stopped' ? 1 : eb.ref('stop_requested'), last_seq: eb('last_seq', '+', 1) }))
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
   * RunResumer: compare-and-set `paused → running`, clear the stale stop flag, load the snapshot
   * and continue in the background. A run that is not paused is left alone (idempotent).
   */
  async resume(runId: string): Promise<void> {
    if (this.#closed) return;
    const r = await this.#db
      .updateTable('workflow_runs')
      .set({ status: 'running', stop_requested: 0, heartbeat_at: this.#clock.now() })
      .where('id', '=', runId)
      .where('status', '=', 'paused')
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return;
    await this.#continue(runId, 'resume');
  }

  /** Continues a run this process has just claimed (`running`, fresh heartbeat) from its snapshot. */
  async #continue(runId: string, why: 'resume' | 'recovery'): Promise<void> {
    try {
      const run = (await this.find(runId))!;
      // the graph the run started with, although the app may have been updated since
      const app = await this.#findAppVersion(run.app_id, run.app_version);
      if (!app) throw new Error(`app ${run.app_id} (version ${run.app_version}) no longer exists`);
      const snap = await this.#db.selectFrom('workflow_run_snapshots').select('state').where('run_id', '=', runId).executeTakeFirst();
      if (!snap) throw new Error('the run has no snapshot');
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
      void this.#launch(meta, app.workspaceId, graph, state, Number(run.last_seq), 'resumption');
    } catch (err) {
      this.#logger.error({ err, runId }, `${why} failed`);
      await this.#failRun(runId, `${why} failed: ${(err as Error).message}`);
    }
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

  /**
   * Continues runs handed back by a process that shut down (`running`, `heartbeat_at` 0; one
   * instance claims each by compare-and-set), and marks `running` runs whose process died (stale
   * heartbeat) as failed, ending their streams.
   */
  async recoverOrphans(): Promise<number> {
    if (this.#closed) return 0;
    const handedBack = await this.#db.selectFrom('workflow_runs').select('id').where('status', '=', 'running').where('heartbeat_at', '=', 0).execute();
    for (const r of handedBack) {
      const claimed = await this.#db
        .updateTable('workflow_runs')
        .set({ heartbeat_at: this.#clock.now() })
        .where('id', '=', r.id)
        .where('status', '=', 'running')
        .where('heartbeat_at', '=', 0)
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 1) {
        this.#logger.info({ runId: r.id }, 'continuing a run handed back by a process that shut down');
        await this.#continue(r.id, 'recovery');
      }
    }
    const cutoff = this.#clock.now() - this.#config.orphanAfterMs;
    const rows = await this.#db.selectFrom('workflow_runs').select('id').where('status', '=', 'running').where('heartbeat_at', '>', 0).where('heartbeat_at', '<', cutoff).execute();
    let n = 0;
    for (const r of rows) {
      if (this.#active.has(r.id)) continue;
      if (await this.#failRun(r.id, 'The run was interrupted because the process executing it stopped; it was marked failed on recovery.')) n++;
    }
    return n;
  }

  async #failRun(runId: string, error: string): Promise<boolean> {
    const run = await this.#endWithFrame(runId, ['running', 'paused'], 'failed', error);
    if (!run) return false;
    if (run.message_id) await this.#db.updateTable('messages').set({ status: 'error', error, updated_at: this.#clock.now() }).where('id', '=', run.message_id).execute();
    this.#logger.warn({ runId, error }, 'run failed by recovery');
    return true;
  }

  /**
   * Shutdown: hands every run executing here back (see RunLoop.requestHandBack) and waits until
   * their snapshots are saved; recovery on any instance, or on the next start, continues them.
   * Resumes and recoveries are refused from now on.
   */
  async handBack(): Promise<number> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    const active = [...this.#active.values()];
    for (const { loop } of active) loop.requestHandBack();
    await Promise.all(active.map((a) => a.done));
    return active.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const { loop } of this.#active.values()) loop.requestStop('The server is shutting down.');
    await Promise.all([...this.#active.values()].map((a) => a.done));
  }
}
