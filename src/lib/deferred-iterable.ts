/**
 * An async iterable whose items come from the iterable `open` resolves to, opened at the first
 * read. Unlike an `async function*` that awaits `open()` and then `yield*`s, it adds nothing per
 * item: once open, every read goes straight to the inner iterator (a generator layer costs a
 * resumption and its promises on every item — on every streamed token). `return` before the first
 * read does not open it; a `return` once it was opened closes the inner iterator (when it is open)
 * and then calls `close` — for what an inner generator that never ran holds (a generator's
 * `finally` does not run if it was never started).
 */
export function deferredIterable<T>(open: () => Promise<AsyncIterable<T>>, close?: () => void): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      let inner: AsyncIterator<T> | undefined;
      let opening: Promise<AsyncIterator<T>> | undefined;
      let closed = false;
      const start = () => (opening ??= open().then((it) => (inner = it[Symbol.asyncIterator]())));
      return {
        next: () => {
          if (inner) return inner.next();
          if (closed) return Promise.resolve({ done: true, value: undefined });
          return start().then((it) => (closed ? { done: true as const, value: undefined } : it.next()));
        },
        return: async (value?: unknown) => {
          closed = true;
          if (!opening) return { done: true, value: value as T };
          const it = await opening.catch(() => undefined);
          if (it?.return) await it.return(value);
          close?.();
          return { done: true, value: value as T };
        },
      };
    },
  };
}
