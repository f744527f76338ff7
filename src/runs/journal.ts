import type { Bus } from '../infra/bus/bus.js';
import type { Clock } from '../infra/clock.js';
import type { SecretMask } from './secret-mask.js';
import type { RunEventStore, StoredRunEvent } from './run-event-store.js';
import type { RunPatch } from './run-store.js';
import type { RunEnd } from './run-types.js';

/** The run loop's change of the run row: its status is the end's (never `handed-back`: a handed-back run stays `running`). */
type LoopPatch = Omit<RunPatch, 'status'> & { readonly status?: RunEnd['status'] };

/** The bus channel that rings when a run's log grows. */
export const runChannel = (runId: string) => `run:${runId}`;

/** Another owner claimed the run (a higher epoch): this one must stop writing at once. */
export class FencedOut extends Error {
  constructor(runId: string, epoch: number) {
    super(`run ${runId}: another worker took the run over (this owner's epoch ${epoch} is stale); stopping here`);
    this.name = 'FencedOut';
  }
}

/**
 * Appends a run's events to its log with sequence numbers, group-committed: everything appended
 * before the next flush (one transaction with the latest snapshot and run-row changes) is
 * written together, and only then is the doorbell rung, so no reader sees an event the database
 * does not hold.
 *
 * Every flush is fenced: it updates the run row first, on the condition that the row still holds
 * the owner epoch this journal was opened with, and rolls back when it does not (FencedOut). The
 * first failed write (fenced out or any database error) ends the journal: later appends are
 * dropped, later flushes throw that error, and `onError` tells the loop to stop.
 */
export class RunJournal {
  readonly #store: Pick<RunEventStore, 'flush'>;
  readonly #bus: Bus;
  readonly #clock: Clock;
  readonly #runId: string;
  #seq: number;
  #queued: StoredRunEvent[] = [];
  #patch: RunPatch = {};
  #snapshot: (() => unknown) | undefined;
  readonly #mask: SecretMask | undefined;
  #scheduled = false;
  #flushing: Promise<void> = Promise.resolve();
  #error: unknown;
  readonly #epoch: number;
  /**
   * PostgreSQL: how long a flush transaction may sit idle (its process stalled inside it) before
   * the server ends the session and frees the run row's lock, so a new owner is not blocked by a
   * stalled one (`idle_in_transaction_session_timeout`, set for the flush's transaction only).
   */
  readonly #holdLimitMs: number | undefined;
  /** Called once, with the first write error (background flushes included). */
  onError: ((err: unknown) => void) | undefined;

  /**
   * `epoch`: the owner epoch claimed for this execution (every write is conditional on it).
   * `mask` keeps secret environment values out of every event and snapshot written.
   */
  constructor(events: Pick<RunEventStore, 'flush'>, bus: Bus, clock: Clock, runId: string, lastSeq: number, epoch: number, mask?: SecretMask, holdLimitMs?: number) {
    this.#epoch = epoch;
    this.#holdLimitMs = holdLimitMs && Number.isInteger(holdLimitMs) && holdLimitMs > 0 ? holdLimitMs : undefined;
    this.#mask = mask && !mask.empty ? mask : undefined;
    this.#store = events;
    this.#bus = bus;
    this.#clock = clock;
    this.#runId = runId;
    this.#seq = lastSeq;
  }

  get lastSeq(): number {
    return this.#seq;
  }

  /** Queues one wire payload (it must have an `event` key); returns its sequence number. */
  append(payload: { event: string; [k: string]: unknown }): number {
    if (this.#error !== undefined) return this.#seq;
    this.#seq += 1;
    this.#queued.push({ runId: this.#runId, seq: this.#seq, event: payload.event, payload: JSON.stringify(payload, this.#mask?.eventReplacer), createdAt: this.#clock.now() });
    this.#schedule();
    return this.#seq;
  }

  /** Updates the run row with the next flush. */
  patchRun(patch: LoopPatch): void {
    const { status, ...rest } = patch;
    if (status === 'handed-back') throw new Error(`run ${this.#runId}: a handed-back run is not ended`);
    Object.assign(this.#patch, rest, status !== undefined ? { status } : {});
    this.#schedule();
  }

  /** Saves the run state with the next flush (serialized then, so it is the latest state). */
  saveSnapshot(state: () => unknown): void {
    this.#snapshot = state;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      // the error is recorded and reported through onError (never swallowed)
      void this.flush().catch(() => undefined);
    });
  }

  /** Writes everything queued so far; resolves once it is durable. Throws the first write error. */
  flush(): Promise<void> {
    const next = this.#flushing.then(() => {
      if (this.#error !== undefined) throw this.#error;
      return this.#write();
    });
    this.#flushing = next.catch((err: unknown) => {
      if (this.#error !== undefined) return;
      this.#error = err;
      this.#queued = [];
      this.#patch = {};
      this.#snapshot = undefined;
      this.onError?.(err);
    });
    return next;
  }

  async #write(): Promise<void> {
    const events = this.#queued;
    const patch = this.#patch;
    const snapshot = this.#snapshot;
    if (events.length === 0 && Object.keys(patch).length === 0 && !snapshot) return;
    this.#queued = [];
    this.#patch = {};
    this.#snapshot = undefined;
    const lastSeq = events.length ? events[events.length - 1]!.seq : undefined;
    const written = await this.#store.flush({
      runId: this.#runId,
      epoch: this.#epoch,
      now: this.#clock.now(),
      patch,
      events,
      ...(snapshot ? { snapshot: () => JSON.stringify(snapshot(), this.#mask?.snapshotReplacer) } : {}),
      ...(this.#holdLimitMs ? { holdLimitMs: this.#holdLimitMs } : {}),
    });
    if (!written) throw new FencedOut(this.#runId, this.#epoch);
    if (lastSeq !== undefined) await this.#bus.publish(runChannel(this.#runId), String(lastSeq)).catch(() => undefined);
  }

  /** The first write error (a background flush's included), if any: the journal has stopped. */
  get error(): unknown {
    return this.#error;
  }
}
