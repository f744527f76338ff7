import type { Bus } from '../infra/bus/bus.js';
import { runChannel } from './journal.js';
import type { RunEventStore } from './run-event-store.js';

export interface LoggedEvent {
  readonly seq: number;
  readonly payload: Record<string, unknown> & { event: string };
}

/** How long a reader waits for the doorbell before looking at the log anyway. */
const POLL_MS = 1000;

/**
 * Replays a run's event log after `afterSeq`, then tails it: waits for the bus doorbell (or a
 * poll, in case a ring was missed) and reads again. Ends when `signal` aborts; the caller stops
 * iterating at its own terminal event. The log is the truth and the doorbell only a speed-up: a
 * bus that cannot subscribe (Redis unreachable) leaves the reader polling the log every second
 * (`onBusError` is told why), instead of failing it. With `only`, just the events of those names
 * are read and yielded.
 */
export async function* readRunEvents(
  store: Pick<RunEventStore, 'after' | 'named'>,
  bus: Bus,
  runId: string,
  afterSeq: number,
  signal: AbortSignal,
  onBusError?: (err: Error) => void,
  only?: readonly string[],
): AsyncGenerator<LoggedEvent> {
  let cursor = afterSeq;
  let rang = false;
  let wake: (() => void) | undefined;
  // subscribed alongside the first read, not before it: a bus that hangs delays nothing
  const subscribed = bus
    .subscribe(runChannel(runId), () => {
      rang = true;
      wake?.();
    })
    .catch((err: unknown) => {
      onBusError?.(err as Error);
      return async () => undefined;
    });
  const unsubscribe = async () => (await subscribed)();
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    while (!signal.aborted) {
      rang = false;
      // `only`: the named events alone (a blocking waiter reads the terminal ones, not every payload)
      const rows = [...(await (only ? store.named(runId, only, { afterSeq: cursor, limit: 500 }) : store.after(runId, cursor, 500)))];
      const read = rows.length;
      // each row is let go once yielded: a reader paused by a slow client holds only the rest
      for (let r = rows.shift(); r; r = rows.shift()) {
        cursor = Number(r.seq);
        yield { seq: cursor, payload: JSON.parse(r.payload) as LoggedEvent['payload'] };
        if (signal.aborted) return;
      }
      if (read === 500 || rang) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
        if (rang || signal.aborted) wake();
      });
      wake = undefined;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    await unsubscribe();
  }
}
