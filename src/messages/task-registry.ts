/** A generation in flight that a caller may stop. */
export interface RunningTask {
  readonly appId: string;
  readonly endUserId: string;
  readonly controller: AbortController;
}

/**
 * In-process map of task id → abort controller and owner. A stop from the owning end user aborts
 * the in-flight upstream request; anyone else's stop, or an unknown task, does nothing (as Dify).
 */
export class TaskRegistry {
  readonly #tasks = new Map<string, RunningTask>();

  /** Registers a task; the returned function removes it. */
  register(taskId: string, task: RunningTask): () => void {
    this.#tasks.set(taskId, task);
    return () => {
      if (this.#tasks.get(taskId) === task) this.#tasks.delete(taskId);
    };
  }

  /** Aborts the task when it belongs to this app and end user; returns whether it did. */
  stop(taskId: string, appId: string, endUserId: string): boolean {
    const t = this.#tasks.get(taskId);
    if (!t || t.appId !== appId || t.endUserId !== endUserId) return false;
    t.controller.abort(new StopRequested());
    return true;
  }

  get size(): number {
    return this.#tasks.size;
  }
}

/** The abort reason of a user stop, so the generation ends `stopped` rather than failed. */
export class StopRequested extends Error {
  override name = 'StopRequested';
  constructor() {
    super('stopped by the user');
  }
}
