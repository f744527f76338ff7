/* The annotation jobs' queue kinds and payloads: the service enqueues them, jobs.ts handles them. */

/** Queue kind of an enable/disable job; payload `{ jobId }`. */
export const REPLY_JOB = 'annotation-reply';
/** Queue kind that brings one app's embeddings up to date after an edit; payload `{ appId }`. */
export const SYNC_JOB = 'annotation-sync';

export interface ReplyJobPayload {
  readonly jobId: string;
}
export interface SyncJobPayload {
  readonly appId: string;
}
