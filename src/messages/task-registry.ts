import type { Bus } from '../infra/bus/bus.js';

/** A generation in flight that a caller may stop. */
export interface RunningTask {
  readonly appId: string;
  readonly endUserId: string;
  /** An `AbortController` or a `Cancellation`: a stop aborts it with `StopRequested`. */
  readonly controller: { abort(reason?: unknown): void };
}

interface StopMessage {
  readonly taskId: string;
  readonly appId: string;
  readonly endUserId: string;
}

/** Bus channel on which a stop for a task another instance runs is passed on. */
export const TASK_STOP_CHANNEL = 'task-stop';

/**
 * Task id → abort controller and owner, for the generations this process runs. A stop from the
 * owning end user aborts the in-flight upstream request; anyone else's stop, or an unknown task,
 * does nothing (as Dify). With a bus, a stop for a task this process does not run is published,
 * and every instance applies it to its own tasks, so a stop may reach any instance.
 */
export class TaskRegistry {
  readonly #tasks = new Map<string, RunningTask>();
  readonly #bus: Bus | undefined;
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(bus?: Bus) {
    this.#bus = bus;
  }

  /** Starts applying stops published by other instances. */
  async listen(): Promise<void> {
    if (!this.#bus || this.#unsubscribe) return;
    this.#unsubscribe = await this.#bus.subscribe(TASK_STOP_CHANNEL, (raw) => {
      try {
        const m = JSON.parse(raw) as StopMessage;
        this.stopLocal(m.taskId, m.appId, m.endUserId);
      } catch {
        // not a stop message: ignore
      }
    });
  }

  async close(): Promise<void> {
    await this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /** Registers a task; the returned function removes it. */
  register(taskId: string, task: RunningTask): () => void {
    this.#tasks.set(taskId, task);
    return () => {
      if (this.#tasks.get(taskId) === task) this.#tasks.delete(taskId);
    };
  }

  /** Stops the task here, or asks the other instances through the bus. */
  async stop(taskId: string, appId: string, endUserId: string): Promise<void> {
    if (this.stopLocal(taskId, appId, endUserId) || !this.#bus) return;
    await this.#bus.publish(TASK_STOP_CHANNEL, JSON.stringify({ taskId, appId, endUserId } satisfies StopMessage));
  }

  /** Aborts the task when this process runs it for this app and end user; returns whether it did. */
  stopLocal(taskId: string, appId: string, endUserId: string): boolean {
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
