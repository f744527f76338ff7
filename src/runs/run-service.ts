import { runNotPickedUp } from './errors.js';
import { ConversationStore } from '../messages/conversation-store.js';
import type { Kysely, Transaction } from 'kysely';
import type { Queue } from '../infra/queue/queue.js';
import type { Database } from '../store/schema.js';
import { RunStore, type RunRecord } from './run-store.js';
import { RunEventStore } from './run-event-store.js';
import { MessageStore } from '../messages/message-store.js';
import { EndUserService } from '../apps/end-users.js';
import type { Bus } from '../infra/bus/bus.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import { NO_TRACING } from '../infra/tracing.js';
import type { HumanInputGateway, RunResumer } from '../forms/human-input-port.js';
import { runChannel } from './journal.js';
import { readRunEvents, type LoggedEvent } from './event-reader.js';
import { STOPPED_BY_USER } from './run-types.js';
import { ConversationVariables } from './conversation-variables.js';
import { finishedFrame } from './frames.js';
import { RUN_JOB, RUN_SWEEP_JOB, RunWaiters, STOP_CHANNEL, type RunContext, type RunJobPayload, type RunServiceConfig, type RunServiceDeps } from './run-context.js';
import { RunPorts } from './run-ports.js';
import { RunExecutions } from './run-execution.js';
import { awaitRunEnd, startRun, type StartRun, type StartedRun } from './run-start.js';

export { RUN_JOB, type RunJobPayload, type RunServiceConfig, type StartRun, type StartedRun };
export type RunRow = RunRecord;
export { finishedFrame };

/**
 * The run lifecycle: start, stop, pause, resume and recovery. A run executes as a queue job
 * (`run.execute`) on whichever worker claims it; claiming increments the run's owner epoch, and
 * every write of that execution is fenced by it (RunJournal). A worker that dies or stalls loses
 * its job's lease; another worker (or the next start) takes the job and continues the run from its
 * last committed snapshot. Streams and blocking callers read the event log, never the run itself.
 * Workflow-as-tool runs (call depth > 0) execute inline in the calling run's worker.
 *
 * Starting is in run-start.ts, executing (claim, continue, the run loop) in run-execution.ts; the
 * tables are the runs store's (run-store.ts, run-event-store.ts).
 */
export class RunService implements RunResumer {
  readonly #db: Kysely<Database>;
  readonly #runs: RunStore;
  readonly #c: RunContext;
  readonly #executions: RunExecutions;
  readonly #bus: Bus;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #config: RunServiceConfig;
  #humanInput: HumanInputGateway | undefined;
  /** Chatflow conversation variables, carried from turn to turn. */
  readonly conversationVariables: ConversationVariables;
  readonly #queue: Queue | undefined;
  readonly #executesJobs: boolean;
  /** Aborted by handBack / close: blocking callers stop waiting. */
  readonly #waiters = new RunWaiters();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #notPickedUp: { seconds: number; message: string } | undefined;

  constructor(deps: RunServiceDeps) {
    this.#executesJobs = deps.executesJobs ?? true;
    this.#queue = deps.queue;
    deps.queue?.register<RunJobPayload>(
      RUN_JOB,
      {
        run: (p, ctx) => this.#executions.executeJob(p.runId, ctx.jobId, ctx.signal),
        onFailed: async (p, error) => {
          await this.#failRun(p.runId, `The run could not be continued: ${error}`);
        },
      },
      { concurrency: deps.config.concurrency, leaseMs: deps.config.leaseMs },
    );
    deps.queue?.register(RUN_SWEEP_JOB, { run: async () => void (await this.sweepInline()) });
    this.#db = deps.db;
    this.#runs = new RunStore(deps.db);
    this.#bus = deps.bus;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#config = deps.config;
    this.#humanInput = deps.humanInput;
    this.conversationVariables = new ConversationVariables(deps.db, deps.clock);
    const messages = deps.messages ?? new MessageStore(deps.db);
    this.#c = {
      db: deps.db,
      runs: this.#runs,
      events: new RunEventStore(deps.db, this.#runs),
      messages,
      conversations: deps.conversations ?? new ConversationStore(deps.db),
      endUsers: deps.endUsers ?? new EndUserService(deps.db, deps.clock),
      bus: deps.bus,
      clock: deps.clock,
      logger: deps.logger,
      config: deps.config,
      tracing: deps.tracing ?? NO_TRACING,
      queue: deps.queue,
      executesJobs: this.#executesJobs,
      flushHoldLimitMs: deps.flushHoldLimitMs,
      ports: new RunPorts(deps, () => this.#humanInput, messages),
      conversationVariables: this.conversationVariables,
      findApp: deps.findApp,
      findAppVersion: deps.findAppVersion,
      outputModeration: deps.outputModeration,
      humanInput: () => this.#humanInput,
      closed: () => this.#closed,
      waiters: this.#waiters,
      observeTakeover: deps.observeTakeover,
      failRun: (runId, error) => this.#failRun(runId, error),
      resume: (runId) => this.resume(runId),
    };
    this.#executions = new RunExecutions(this.#c);
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
    const legacy = await this.#runs.legacyRunning();
    for (const id of legacy) {
      if (!this.#queue) break;
      await this.#db.transaction().execute(async (tx) => {
        if (await this.#runs.adoptLegacy(id, tx)) await this.#queue!.enqueue(RUN_JOB, { runId: id } satisfies RunJobPayload, { tx });
      });
    }
    if (legacy.length > 0) this.#queue?.notify();
    await this.#queue?.repeat(RUN_SWEEP_JOB, Math.max(200, Math.floor(this.#config.leaseMs / 2)));
    const every = Math.max(50, Math.floor(this.#config.leaseMs / 3));
    this.#timer = setInterval(() => void this.#tick().catch((err) => this.#logger.warn({ err }, 'run stop-flag check failed')), every);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    const ids = this.#executions.ids();
    if (ids.length === 0) return;
    // the inline runs executing here (no queue lease speaks for them) are kept alive
    const inline = this.#executions.inlineIds();
    if (inline.length > 0) await this.#runs.heartbeatInline(inline, this.#clock.now());
    const stopped = await this.#runs.stopRequested(ids);
    for (const id of stopped) this.#executions.requestStop(id);
  }

  /**
   * Ends the inline runs whose process died: still `running`, no heartbeat for two leases (their
   * process beats every third of one). No other process can continue an inline run — a workflow
   * tool's run is run again by its caller's node, which another worker continues — so it is
   * failed, with a message that says why. Run by one worker per tick (a repeatable job); returns
   * how many it ended.
   */
  async sweepInline(): Promise<number> {
    const ids = await this.#runs.silentInline(this.#clock.now() - 2 * this.#config.leaseMs, 500);
    let ended = 0;
    for (const id of ids) {
      if (await this.#failRun(id, 'The process that ran this run stopped. It ran inside its caller (a workflow tool, or a process without a job worker), so it cannot be continued elsewhere; a calling workflow runs its tool again.')) ended++;
    }
    return ended;
  }

  /**
   * Creates the run row and starts the run in the background. A run queued for the workers that
   * none has taken after RUN_QUEUE_WAIT_SECONDS ends `failed` (never taken later by surprise: its
   * caller was told), and its `done` says `notPickedUp`.
   */
  async start(input: StartRun): Promise<StartedRun> {
    const started = await startRun(this.#c, this.#executions, input);
    const seconds = this.#config.queueWaitSeconds ?? 0;
    if (!started.queued || seconds <= 0) return started;
    // the message is made once per setting, not per run (an Error captures a stack trace)
    if (this.#notPickedUp?.seconds !== seconds) this.#notPickedUp = { seconds, message: runNotPickedUp(seconds).message };
    const error = this.#notPickedUp.message;
    const timer = setTimeout(() => {
      void this.#failUnclaimed(started.runId, error, seconds).catch((err: unknown) => this.#logger.warn({ err, runId: started.runId }, 'ending a run no worker took failed'));
    }, seconds * 1000);
    timer.unref();
    const done = started.done.then((end) => {
      clearTimeout(timer);
      return end && end.status === 'failed' && end.error === error ? { ...end, notPickedUp: true } : end;
    });
    return { ...started, done };
  }

  /** Ends a queued run that no worker claimed (owner epoch still 0); false when one took it meanwhile. */
  async #failUnclaimed(runId: string, error: string, seconds: number): Promise<boolean> {
    const run = await this.#endWithFrame(runId, ['running'], 'failed', error, { unclaimed: true });
    if (!run) return false;
    if (run.message_id) await this.#c.messages.end(run.message_id, 'error', error, this.#clock.now());
    this.#logger.warn({ runId, appId: run.app_id, waitedSeconds: seconds }, `run failed: no worker process took it within RUN_QUEUE_WAIT_SECONDS=${seconds} s`);
    return true;
  }

  async find(runId: string): Promise<RunRow | undefined> {
    return this.#runs.find(runId);
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
    await awaitRunEnd(this.#c, runId, Number(row.last_seq));
  }

  /**
   * Stops a task of this app: a running run stops before its next node (in-flight calls are
   * aborted), a paused one ends `stopped` at once; unknown or finished tasks are left alone.
   */
  async stopTask(appId: string, taskId: string, opts: { reason?: string; endUserId?: string } = {}): Promise<void> {
    const reason = opts.reason ?? STOPPED_BY_USER;
    const runs = await this.#runs.byTask(appId, taskId, opts.endUserId);
    for (const r of runs) {
      if (r.status === 'paused') await this.stop(r.id, reason);
      else if (r.status === 'running') {
        await this.#runs.requestStop(r.id);
        this.#executions.requestStop(r.id, reason);
        await this.#bus.publish(STOP_CHANNEL(r.id), reason).catch(() => undefined);
      }
    }
  }

  /** RunResumer: a paused run ends `stopped` (user stop or global timeout) and its forms close. */
  async stop(runId: string, reason: string): Promise<void> {
    const run = await this.#endWithFrame(runId, ['paused'], 'stopped', reason);
    if (!run) return;
    if (run.message_id) await this.#c.messages.end(run.message_id, 'stopped', reason, this.#clock.now());
    await this.#humanInput?.closeForms(runId).catch(() => undefined);
  }

  /**
   * Ends a run that is not executing anywhere (paused, or orphaned): in one transaction a
   * compare-and-set of its status and the append of its `workflow_finished` frame, then the
   * doorbell. Returns the ended row, or undefined when the run was not in `from`.
   */
  async #endWithFrame(runId: string, from: RunRow['status'][], status: 'stopped' | 'failed', error: string, opts: { unclaimed?: boolean } = {}): Promise<RunRow | undefined> {
    const now = this.#clock.now();
    const ended = await this.#db.transaction().execute(async (trx) => {
      const run = await this.#runs.end(runId, from, status, error, now, trx, opts);
      if (!run) return undefined;
      const frame = finishedFrame(run, await this.#c.endUsers.sessionIdOf(run.end_user_id, trx), run.app_id);
      await this.#c.events.append({ runId, seq: Number(run.last_seq), event: 'workflow_finished', payload: JSON.stringify(frame), createdAt: now }, trx);
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
      if (!(await this.#runs.markResumed(runId, this.#clock.now(), t))) return false;
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
    const epoch = await this.#runs.bumpEpoch(runId);
    const run = await this.#executions.continue(runId, epoch);
    void run?.done.catch(() => undefined);
  }

  /**
   * Where a stream reopened without a snapshot starts: just after the latest `workflow_paused`
   * (so a resumed run's events are never missed), or at the start when the run never paused.
   */
  async lastPauseSeq(runId: string): Promise<number> {
    return this.#c.events.lastSeqOf(runId, 'workflow_paused');
  }

  /** Replays a run's log after `afterSeq`, then tails it. */
  events(runId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<LoggedEvent> {
    return readRunEvents(this.#c.events, this.#bus, runId, afterSeq, signal);
  }

  async #failRun(runId: string, error: string): Promise<boolean> {
    const run = await this.#endWithFrame(runId, ['running', 'paused'], 'failed', error);
    if (!run) return false;
    if (run.message_id) await this.#c.messages.end(run.message_id, 'error', error, this.#clock.now());
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
    this.#waiters.close();
    const active = this.#executions.size;
    if (this.#queue) await this.#queue.close();
    await this.#executions.handBackAll();
    return active;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#waiters.close();
    await this.#executions.stopAll('The server is shutting down.');
  }
}
