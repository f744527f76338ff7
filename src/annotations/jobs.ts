import type { Queue } from '../infra/queue/queue.js';
import type { AnnotationIndex } from './annotation-index.js';
import type { AnnotationService } from './annotation-service.js';
import { REPLY_JOB, SYNC_JOB, type ReplyJobPayload, type SyncJobPayload } from './annotation-job-kinds.js';

/** Registers the annotation job handlers (before the queue starts); each calls one idempotent method. */
export function registerAnnotationJobs(queue: Queue, service: AnnotationService, index: AnnotationIndex): void {
  queue.register<ReplyJobPayload>(REPLY_JOB, {
    run: (p, ctx) => service.runReplyJob(p.jobId, ctx),
    onFailed: (p, error) => service.failReplyJob(p.jobId, error),
  });
  queue.register<SyncJobPayload>(SYNC_JOB, { run: (p, ctx) => index.sync(p.appId, ctx.signal) });
}
