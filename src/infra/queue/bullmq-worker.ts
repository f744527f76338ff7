import { Worker, type Job } from 'bullmq';

/**
 * A BullMQ worker that can hold two processings of one job at once, as happens when this worker
 * stalled past its lock (a paused process, Redis unreachable) and then took the job again while
 * its first processing had not ended yet.
 *
 * BullMQ renews locks per job id: the first processing, when it ends, untracks the job id and so
 * stops the renewal of the second processing's lock, which then stalls after one lease and is
 * taken again, and again, until the stalled limit fails the job. Here the processings in flight
 * are kept per job id and token: when one ends while a later one of the same job is still running,
 * the later one's lock is tracked again. A lock that could not be renewed is reported with its
 * token (`onLockLost`), so that only the processing holding it is stopped.
 */
export class RetakingWorker extends Worker {
  /** Tokens of the processings in flight here, per job id, oldest first. */
  readonly #tokens = new Map<string, string[]>();
  #onLockLost: (jobId: string, token: string) => void = () => undefined;

  /** Called for each job whose lock (held with `token`) could not be renewed. */
  onLockLost(fn: (jobId: string, token: string) => void): void {
    this.#onLockLost = fn;
  }

  override async processJob(job: Job, token: string, fetchNextCallback?: () => boolean): Promise<void | Job> {
    const id = job.id;
    if (!id) return super.processJob(job, token, fetchNextCallback);
    const tokens = this.#tokens.get(id) ?? [];
    tokens.push(token);
    this.#tokens.set(id, tokens);
    try {
      return await super.processJob(job, token, fetchNextCallback);
    } finally {
      tokens.splice(tokens.indexOf(token), 1);
      if (tokens.length === 0) this.#tokens.delete(id);
      else {
        // BullMQ has just untracked the job id: the newest processing still running keeps its lease
        const newest = tokens.at(-1)!;
        this.lockManager.trackJob(id, newest, Date.now());
        await this.extendJobLocks([id], [newest], this.opts.lockDuration ?? 30_000).catch((err: unknown) => this.emit('error', err as Error));
      }
    }
  }

  override async extendJobLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    const failed = await super.extendJobLocks(jobIds, tokens, duration);
    for (const id of failed) {
      const token = tokens[jobIds.indexOf(id)];
      if (token) this.#onLockLost(id, token);
    }
    return failed;
  }
}
