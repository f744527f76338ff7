import type { Queue } from '../infra/queue/queue.js';
import type { AnnotationIndex } from './annotation-index.js';
import type { AnnotationService } from './annotation-service.js';

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

/** Registers the annotation job handlers (before the queue starts); each calls one idempotent method. */
export function registerAnnotationJobs(queue: Queue, service: AnnotationService, index: AnnotationIndex): void {
  queue.register<ReplyJobPayload>(REPLY_JOB, {
    run: (p, ctx) => service.runReplyJob(p.jobId, ctx),
    onFailed: (p, error) => service.failReplyJob(p.jobId, error),
  });
  queue.register<SyncJobPayload>(SYNC_JOB, { run: (p, ctx) => index.sync(p.appId, ctx.signal) });
}
