import type { Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
import type { App } from '../apps/app-service.js';
import { newId } from '../infra/ids.js';
import { initialState, readState } from '../engine/run-state.js';
import type { AppKind } from '../engine/types.js';
import { SecretMask } from './secret-mask.js';
import { readRunEvents } from './event-reader.js';
import type { RunEnd, RunMeta } from './run-types.js';
import { RUN_JOB, type RunContext, type RunJobPayload } from './run-context.js';
import type { RunExecutions } from './run-execution.js';
import type { LocalJob } from '../infra/queue/queue.js';
import { runWaitFailed } from './errors.js';
import type { RunTrigger } from './run-store.js';
import { isTerminal, TERMINAL_RUN_EVENTS } from './run-events.js';

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
  /**
   * The entry node the run starts at (a trigger node of the graph); default the graph's start. Its
   * variables are `inputs`; the graph's other entry points are skipped.
   */
  readonly rootNodeId?: string;
  /** Dify's `WorkflowRunTriggeredFrom` of the run (default `app-run`); the logs show it. */
  readonly triggeredFrom?: RunTrigger;
  /** Runs in the transaction that creates the run row and its job (chatflow writes its message row). */
  readonly beforeStart?: (ids: { runId: string; taskId: string }, tx: Transaction<Database>) => Promise<void>;
}

export interface StartedRun {
  readonly runId: string;
  readonly taskId: string;
  /**
   * Settles when the run ends or pauses, wherever it executes: undefined when this process shuts
   * down first; rejects with `runWaitFailed` when the run's log cannot be read.
   */
  readonly done: Promise<RunEnd | undefined>;
  /** Queued for a worker (not executing in this process). */
  readonly queued: boolean;
}

/** Creates the run row and starts the run in the background. */
export async function startRun(c: RunContext, executions: RunExecutions, input: StartRun): Promise<StartedRun> {
  const app = input.app;
  const mode: AppKind = app.mode === 'advanced-chat' ? 'advanced-chat' : 'workflow';
  const graph = c.ports.graph(app);
  const now = c.clock.now();
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
  const rootId = input.rootNodeId ?? graph.startId;
  const state = initialState(graph, {
    sys,
    env: { ...graph.environment },
    conversation: {
      ...graph.conversationDefaults,
      ...(mode === 'advanced-chat' && meta.conversationId ? await c.conversationVariables.load(app, meta.conversationId) : {}),
    },
    [rootId]: { ...input.inputs, ...(mode === 'advanced-chat' ? { 'sys.query': input.query ?? '' } : {}) },
  }, rootId);
  const inline = !c.queue || !c.executesJobs || (input.callDepth ?? 0) > 0;
  const mask = new SecretMask(graph.secrets);
  // A job this process will run itself (the embedded queue with a free slot) is written already
  // claimed, and the run owned by it: no poll, no read of the table before the run starts.
  let local: LocalJob | undefined;
  const started = c.db.transaction().execute(async (tx) => {
    if (!inline) local = await c.queue!.claimLocal?.(RUN_JOB, { runId: meta.id } satisfies RunJobPayload, tx);
    await c.runs.insert(
      {
        id: meta.id,
        app_id: app.id,
        app_version: app.version,
        task_id: meta.taskId,
        mode,
        end_user_id: meta.endUserId,
        conversation_id: meta.conversationId,
        message_id: meta.messageId,
        inputs: JSON.stringify(input.inputs),
        heartbeat_at: now,
        created_at: now,
        // an inline run is owned by this process from the start (epoch 1), a locally claimed one by
        // its job (epoch 1); a queued one by the job that claims it
        owner_epoch: inline || local ? 1 : 0,
        ...(input.triggeredFrom ? { triggered_from: input.triggeredFrom } : {}),
      },
      tx,
      { inline, ...(local ? { ownerJob: local.id } : {}) },
    );
    // the initial state is the first snapshot: whichever worker claims the job starts from it
    if (!inline) await c.events.insertSnapshot(meta.id, JSON.stringify(state, mask.empty ? undefined : mask.snapshotReplacer), now, tx);
    if (input.beforeStart) await input.beforeStart({ runId: meta.id, taskId: meta.taskId }, tx);
    if (!inline && !local) await c.queue!.enqueue(RUN_JOB, { runId: meta.id } satisfies RunJobPayload, { tx });
  });
  try {
    await started;
  } catch (err) {
    local?.release();
    throw err;
  }
  if (local) {
    // the blocking caller is answered from this execution (not from the log), unless it was
    // handed back (shutdown, lost lease): then from the log, wherever the run continues
    let execution: Promise<RunEnd> | undefined;
    local.start((ctx) => {
      const claimed = executions.executeClaimed(meta, app.workspaceId, graph, state, ctx.jobId, ctx.signal);
      execution = claimed.done;
      return claimed.job;
    });
    const done = execution ? execution.then((end) => (end.status === 'handed-back' ? awaitRunEnd(c, meta.id, 0) : end)) : awaitRunEnd(c, meta.id, 0);
    done.catch(() => undefined);
    return { runId: meta.id, taskId: meta.taskId, done, queued: false };
  }
  if (inline) {
    const done = executions.launch(meta, app.workspaceId, graph, state, 0, 1, 'initial');
    return { runId: meta.id, taskId: meta.taskId, done: done.catch(() => undefined), queued: false };
  }
  c.queue!.notify();
  const done = awaitRunEnd(c, meta.id, 0);
  // a streaming caller never awaits it: its failure must not be an unhandled rejection
  done.catch(() => undefined);
  return { runId: meta.id, taskId: meta.taskId, done, queued: true };
}

/**
 * Waits on the run's event log (wherever it executes) for the next `workflow_finished` or
 * `workflow_paused` after `afterSeq`, then describes that end; undefined when this process
 * shuts down first. The log is read from the database (the bus only rings the doorbell, and is
 * done without when it fails); when the log itself cannot be read the wait fails with
 * `runWaitFailed` (503) naming the cause, never with an end that did not happen.
 */
export async function awaitRunEnd(c: RunContext, runId: string, afterSeq: number): Promise<RunEnd | undefined> {
  const stop = new AbortController();
  const unregister = c.waiters.add(() => stop.abort());
  if (c.waiters.closed) return undefined;
  let busDown = false;
  const onBusError = (err: Error) => {
    busDown = true;
    c.logger.warn({ runId, err: err.message }, 'waiting for a run without the bus (it failed): polling its event log');
  };
  try {
    for await (const e of readRunEvents(c.events, c.bus, runId, afterSeq, stop.signal, onBusError, TERMINAL_RUN_EVENTS)) {
      if (!isTerminal(e.payload.event)) continue;
      const data = (e.payload.data ?? {}) as Record<string, unknown>;
      const snap = await c.events.snapshot(runId);
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
    if (c.waiters.closed) return undefined;
    c.logger.error({ err, runId, busDown }, 'waiting for a run failed');
    throw runWaitFailed(runId, (err as Error).message);
  } finally {
    stop.abort();
    unregister();
  }
}
