import type { MessageStore } from '../messages/message-store.js';
import type { ConversationStore } from '../messages/conversation-store.js';
import type { EndUserService } from '../apps/end-users.js';
import type { Kysely } from 'kysely';
import type { ToolRuntime } from '../tools/tool.js';
import type { Queue } from '../infra/queue/queue.js';
import type { Database } from '../store/schema.js';
import type { App } from '../apps/app-service.js';
import type { Bus } from '../infra/bus/bus.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import type { ModelProviders } from '../llm/model-provider.js';
import type { ModelPrice } from '../config.js';
import type { Tracing } from '../infra/tracing.js';
import type { HumanInputGateway } from '../forms/human-input-port.js';
import type { CodeExecutor, TemplateRenderer, CodeOutputLimits, HttpRequester, RunFiles, KnowledgeRetriever } from '../engine/types.js';
import type { RunLimits } from './run-types.js';
import type { OutputModeration } from '../moderation/output-moderation.js';

/** The output moderation of an app's answer as it streams (`onReplace` gets each replacement), or undefined when it checks no output. */
export type OutputModerationOf = (app: App, onReplace: (answer: string, reason: string) => void) => OutputModeration | undefined;

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
  /** `RUN_QUEUE_WAIT_SECONDS`: a queued run no worker takes within it ends failed; 0 or absent: no bound. */
  readonly queueWaitSeconds?: number;
}

/** What the run service is built from. */
export interface RunServiceDeps {
  db: Kysely<Database>;
  /**
   * The output moderation of a chatflow's answer as it streams (ModerationService.outputModeration):
   * undefined when the app checks no output. Unset: not checked.
   */
  outputModeration?: OutputModerationOf;
  /** The messages, conversations and end users chatflow runs answer for (made from `db` when not given). */
  messages?: MessageStore;
  conversations?: ConversationStore;
  endUsers?: EndUserService;
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
  /** Told the seconds from a run's last write to its takeover by another execution (a metric). */
  observeTakeover?: (seconds: number) => void;
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
}
