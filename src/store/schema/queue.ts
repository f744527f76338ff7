/** Row types of the job queue and its outbox (see src/store/schema.ts). */

export interface JobTable {
  id: string;
  kind: string;
  /** JSON. */
  payload: string;
  /** queued | running | done | failed */
  status: string;
  attempts: number;
  max_attempts: number;
  run_at: number;
  lease_until: number | null;
  locked_by: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

/** Jobs written inside a transaction, waiting for the relay to hand them to BullMQ (`QUEUE=bullmq`). */
export interface JobOutboxTable {
  /** Becomes the BullMQ job id, so a repeated hand-over adds nothing. */
  id: string;
  kind: string;
  /** JSON. */
  payload: string;
  run_at: number;
  max_attempts: number;
  created_at: number;
}

/** A process that runs the job worker, and when it was last seen (migration 025). */
export interface WorkerHeartbeatTable {
  id: string;
  role: string;
  host: string;
  pid: number;
  started_at: number;
  seen_at: number;
}
