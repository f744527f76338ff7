/**
 * What a cancellable operation reads of its caller's cancellation: whether it happened, why, and a
 * way to hear of it. An `AbortSignal` is adapted with `fromSignal`; a `Cancellation` is one.
 */
export interface CancelSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Calls `fn` once when cancelled (never when already cancelled); the returned function removes it. */
  onAbort(fn: () => void): () => void;
}

/**
 * An abort controller whose web `AbortSignal` is made only when something asks for it.
 *
 * On Node 20 an `AbortSignal` made, listened to and let go costs about 6 µs (each signal is an
 * `EventTarget` given another prototype); this, 0.14 µs (`npm run bench cancellation`), on every
 * model request of a burst. A generation's model request over Dovetail's own HTTP client needs no
 * signal: it is cancelled through `onAbort`. The SDK-based providers and the agent's tools ask for
 * `signal`, which follows this cancellation from then on (and is made aborted when it came later).
 */
export class Cancellation implements CancelSource {
  #aborted = false;
  #reason: unknown;
  #listeners: (() => void)[] | undefined;
  #controller: AbortController | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Cancels (once): the reason defaults to an `AbortError`, as `AbortController.abort()`'s. */
  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    // as an `abort` event's listeners: each runs, and one that throws is reported without stopping the rest
    for (const fn of listeners ?? []) {
      try {
        fn();
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
    this.#controller?.abort(reason);
  }

  onAbort(fn: () => void): () => void {
    if (this.#aborted) return noop;
    (this.#listeners ??= []).push(fn);
    return () => {
      const i = this.#listeners?.indexOf(fn) ?? -1;
      if (i >= 0) this.#listeners!.splice(i, 1);
    };
  }
}

const noop = (): void => undefined;

/** A request's cancellation: its own `cancel` when it has one, else its `signal` adapted (`fromSignal`). */
export function cancelSourceOf(req: { readonly cancel?: CancelSource; readonly signal?: AbortSignal | null }): CancelSource | undefined {
  return req.cancel ?? (req.signal ? fromSignal(req.signal) : undefined);
}

/** `signal` as a `CancelSource` (its listener added with `onAbort`). */
export function fromSignal(signal: AbortSignal): CancelSource {
  return {
    get aborted() {
      return signal.aborted;
    },
    get reason() {
      return signal.reason as unknown;
    },
    onAbort(fn) {
      if (signal.aborted) return noop;
      signal.addEventListener('abort', fn, { once: true });
      return () => signal.removeEventListener('abort', fn);
    },
  };
}
