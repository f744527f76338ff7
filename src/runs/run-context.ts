import type { ConversationStore } from '../messages/conversation-store.js';
import type { Kysely } from 'kysely';
import type { Queue } from '../infra/queue/queue.js';
import type { Database } from '../store/schema.js';
import type { App } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import type { MessageStore } from '../messages/message-store.js';
import type { Bus } from '../infra/bus/bus.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import type { Tracing } from '../infra/tracing.js';
import type { HumanInputGateway } from '../forms/human-input-port.js';
import type { RunStore } from './run-store.js';
import type { RunEventStore } from './run-event-store.js';
import type { RunPorts } from './run-ports.js';
import type { OutputModerationOf, RunServiceConfig } from './run-config.js';

export type { RunServiceConfig, RunServiceDeps } from './run-config.js';
import type { ConversationVariables } from './conversation-variables.js';

/** The job that executes a run: its start, its resume after a form, its takeover after a crash. */
export const RUN_JOB = 'run.execute';
/** The repeatable job that ends inline runs whose process died (`RunService`). */
export const RUN_SWEEP_JOB = 'runs.sweep-inline';
export interface RunJobPayload {
  readonly runId: string;
}

/** The bus channel that asks the process executing a run to stop it. */
export const STOP_CHANNEL = (runId: string) => `stop:${runId}`;

/** What the parts of the run lifecycle (start, execution, stop, resume) share. */
export interface RunContext {
  readonly db: Kysely<Database>;
  readonly runs: RunStore;
  readonly events: RunEventStore;
  readonly messages: MessageStore;
  readonly conversations: ConversationStore;
  readonly endUsers: EndUserService;
  readonly bus: Bus;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly config: RunServiceConfig;
  readonly tracing: Tracing;
  readonly queue: Queue | undefined;
  readonly executesJobs: boolean;
  readonly flushHoldLimitMs: number | undefined;
  readonly ports: RunPorts;
  readonly conversationVariables: ConversationVariables;
  readonly findApp: (id: string) => Promise<App | undefined>;
  readonly findAppVersion: (id: string, version: number) => Promise<App | undefined>;
  /** RunServiceDeps.outputModeration. */
  readonly outputModeration: OutputModerationOf | undefined;
  humanInput(): HumanInputGateway | undefined;
  /** Whether the service is closing (handBack / close). */
  closed(): boolean;
  /** RunServiceDeps.observeTakeover. */
  readonly observeTakeover: ((seconds: number) => void) | undefined;
  /** Blocking callers waiting for a run's end: told to stop waiting by handBack / close. */
  readonly waiters: RunWaiters;
  /** Ends a run that is not executing anywhere as `failed`; false when it was not running or paused. */
  failRun(runId: string, error: string): Promise<boolean>;
  /** RunResumer.resume. */
  resume(runId: string): Promise<void>;
}

/**
 * The callers waiting here for runs to end (blocking requests): one registry that the service
 * empties when it closes, rather than one listener per waiting run on a process-wide signal.
 */
export class RunWaiters {
  readonly #stops = new Set<() => void>();
  #closed = false;

  get closed(): boolean {
    return this.#closed;
  }

  /** Registers `stop`, called once when the service closes; returns the unregistration. */
  add(stop: () => void): () => void {
    if (this.#closed) {
      stop();
      return () => undefined;
    }
    this.#stops.add(stop);
    return () => void this.#stops.delete(stop);
  }

  /** Tells every waiter to stop waiting (idempotent). */
  close(): void {
    this.#closed = true;
    const stops = [...this.#stops];
    this.#stops.clear();
    for (const stop of stops) stop();
  }
}
