import type { AppKind } from '../engine/types.js';
import type { RunState } from '../engine/run-state.js';
import type { NodeStarted } from '../engine/node-started.js';

/** Terminal and paused statuses a run loop ends with. */
export const RUN_STATUSES = ['running', 'succeeded', 'failed', 'stopped', 'partial-succeeded', 'paused'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The identity of a run, fixed for its whole life (across resumes). */
export interface RunMeta {
  readonly id: string;
  readonly taskId: string;
  readonly appId: string;
  readonly workflowId: string;
  readonly mode: AppKind;
  readonly endUserId: string;
  /** The caller's `user` string. */
  readonly user: string;
  readonly conversationId: string | null;
  readonly messageId: string | null;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly inputs: Readonly<Record<string, unknown>>;
  /** How many workflow tools deep this run was started (0 or absent: by the API). */
  readonly callDepth?: number;
}

export interface RunLimits {
  readonly maxSteps: number;
  readonly maxTimeMs: number;
}

export interface RunEnd {
  /** `handed-back`: this process is shutting down; the run stays `running` with its snapshot saved, for any instance to continue. */
  readonly status: Exclude<RunStatus, 'running'> | 'handed-back';
  readonly outputs: Record<string, unknown>;
  readonly error: string | null;
  readonly state: RunState;
  readonly elapsedMs: number;
  readonly finishedAt: number | null;
  /** The run ended because no worker took it within RUN_QUEUE_WAIT_SECONDS (a blocking request answers 503). */
  readonly notPickedUp?: boolean;
}

export { STOPPED_BY_USER } from '../engine/scheduler.js';

export interface Flight {
  readonly nodeId: string;
  readonly execId: string;
  readonly from: string | null;
  readonly index: number;
  readonly startedAt: number;
  readonly started: NodeStarted;
}
