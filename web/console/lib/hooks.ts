import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { Session } from './console-api.js';

/** The signed-in session (account, role, workspace), given to every page. */
export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside the signed-in console');
  return s;
}

/**
 * Calls `fn` now and every `ms` while the page is visible (live progress: indexing, runs); stops
 * when the component goes. `fn`'s latest version is used; return false from it to stop polling.
 */
export function usePoll(fn: () => Promise<unknown> | unknown, ms: number, deps: readonly unknown[] = []): void {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      if (stopped) return;
      let again: unknown = true;
      if (document.visibilityState !== 'hidden') {
        try {
          again = await latest.current();
        } catch {
          // a failed poll tries again at the next tick
        }
      }
      if (!stopped && again !== false) timer = setTimeout(() => void tick(), ms);
    };
    void tick();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [ms, ...deps]);
}

/** Loads `fn()` (again when `deps` change, or on `reload()`): `{ data, error, loading, reload }`. */
export function useLoad<T>(fn: () => Promise<T>, deps: readonly unknown[]): { data: T | undefined; error: Error | undefined; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: Error | undefined; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error: Error) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  return { ...state, reload };
}
