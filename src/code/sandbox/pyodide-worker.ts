/**
 * The worker thread that hosts one Pyodide interpreter for python3 code nodes (see
 * pyodide-sandbox.ts). It loads Pyodide from node_modules (no network), unpacks the wheels of
 * CODE_PYTHON_PACKAGES_DIR into site-packages, runs the harness (pyodide-harness.ts), then cuts
 * every path from Python to this worker's JavaScript realm, and answers each job with
 * `{type: 'reply', reply, retire}` followed by `{type: 'idle', retire}` once the interpreter is
 * clean again.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { loadPyodide } from 'pyodide';
import type { RealmReply } from './quickjs-realm.js';
import { BLOCKED_PYTHON_MODULES, PYODIDE_HARNESS } from './pyodide-harness.js';

export interface PyodideWorkerData {
  /** Memory a run may add to the interpreter's WebAssembly heap (CODE_MAX_MEMORY_MB), bytes. */
  readonly memoryBytes: number;
  /** Pure-Python wheels to unpack into site-packages (CODE_PYTHON_PACKAGES_DIR). */
  readonly wheels: readonly string[];
  readonly interrupt: SharedArrayBuffer;
  /** The interpreter snapshot's file (CODE_PYTHON_SNAPSHOT_DIR), or none. */
  readonly snapshotFile?: string;
}

export interface PyodideJob {
  readonly code: string;
  readonly inputsJson: string;
  readonly maxOutputBytes: number;
}

const INTERRUPT_TIMEOUT = 1;
const OUTPUT_TOO_LARGE = '\u0000output too large';

const port = parentPort!;
const data = workerData as PyodideWorkerData;
const interrupt = new Int32Array(data.interrupt);
/** What the interpreter watchers (see watchInterpreterState) saw change: addresses (Python's id()). */
const watched = { dicts: new Set<number>(), classes: new Set<number>(), functions: new Set<number>() };
type Changes = { dicts: Set<number>; classes: Set<number>; functions: Set<number> };
/** The changes seen so far, and a fresh record for those that follow. */
function takeWatched(): Changes {
  const taken = { dicts: new Set(watched.dicts), classes: new Set(watched.classes), functions: new Set(watched.functions) };
  watched.dicts.clear();
  watched.classes.clear();
  watched.functions.clear();
  return taken;
}
/** How many times reset may put state back before the worker is replaced instead. */
const RESET_PASSES = 4;
/** Gives every watched class a version tag again; false if one cannot get one (the worker retires). */
let watchedClassesTagged: () => boolean = () => false;

// CODE_MAX_MEMORY_MB: Emscripten grows the heap through WebAssembly.Memory#grow and treats a
// failure as malloc returning NULL, which Python raises as MemoryError. The cap is set once the
// interpreter is ready (its own size plus the limit); the memory never shrinks, so a breach retires
// the worker.
const grow = WebAssembly.Memory.prototype.grow;
let heapCap = Number.POSITIVE_INFINITY;
let memoryHit = false;
WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, pages: number): number {
  if (this.buffer.byteLength + pages * 65536 > heapCap) {
    memoryHit = true;
    throw new RangeError('the code sandbox memory limit is reached');
  }
  return grow.call(this, pages);
};

const indexURL = `${path.dirname(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs'))}${path.sep}`;
const options = {
  indexURL,
  jsglobals: Object.create(null) as object,
  env: { HOME: '/home/pyodide' },
  stdin: () => null,
  stdout: () => undefined,
  stderr: () => undefined,
};

/** The file's snapshot when its SHA-256 header matches its bytes (a damaged or foreign file is not restored). */
function readSnapshot(file: string): Uint8Array | undefined {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch {
    return undefined;
  }
  const bytes = raw.subarray(32);
  if (raw.length > 32 && createHash('sha256').update(bytes).digest().equals(raw.subarray(0, 32))) return bytes;
  return undefined;
}

/**
 * The interpreter: restored from the snapshot file when there is a good one (~0.4 s), else booted
 * (CPython and its standard library, ~5 s), snapshotted before any wheel, the harness or a run
 * touched it, and the snapshot written for the workers after this one (in any process on the same
 * folder: written to a temporary file and renamed, so a reader never sees half of one) and restored.
 * Either way every worker runs an interpreter restored from the same kind of snapshot. A snapshot
 * that does not restore is removed and this worker boots.
 */
async function interpreter(file: string | undefined): Promise<Awaited<ReturnType<typeof loadPyodide>>> {
  if (!file) return loadPyodide(options);
  const saved = readSnapshot(file);
  if (saved) {
    try {
      const restored = await loadPyodide({ ...options, _loadSnapshot: saved });
      if (restored.runPython('6 * 7') !== 42) throw new Error('the restored interpreter does not compute');
      return restored;
    } catch {
      try {
        unlinkSync(file);
      } catch {
        // another worker may have replaced it already
      }
    }
  }
  const made = (await loadPyodide({ ...options, _makeSnapshot: true })).makeMemorySnapshot();
  const tmp = `${file}.${process.pid}.${threadId}.tmp`;
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(tmp, Buffer.concat([createHash('sha256').update(made).digest(), made]));
    renameSync(tmp, file);
  } catch {
    // an unwritable folder or a full disk: the next worker boots too
    try {
      unlinkSync(tmp);
    } catch {
      // nothing was written
    }
  }
  return loadPyodide({ ...options, _loadSnapshot: made });
}
const py = await interpreter(data.snapshotFile);
py.setStdout({ batched: () => undefined });
py.setStderr({ batched: () => undefined });

for (const [i, file] of data.wheels.entries()) {
  const tmp = `/tmp/dovetail-${i}.whl`;
  py.FS.writeFile(tmp, readFileSync(file));
  py.runPython(`import sysconfig, zipfile, os\nwith zipfile.ZipFile(${JSON.stringify(tmp)}) as z:\n    z.extractall(sysconfig.get_paths()["purelib"])\nos.unlink(${JSON.stringify(tmp)})`, {
    globals: py.runPython('dict()') as never,
  });
}
py.setInterruptBuffer(new Int32Array(data.interrupt, 0, 1));

type Py = ((...args: unknown[]) => unknown) & { toJs(o?: { depth: number }): Py[] };
const harnessGlobals = py.runPython('dict()') as unknown as { get(k: string): Py };
py.runPython(PYODIDE_HARNESS, { globals: harnessGlobals as never });
const [run, reset, settrace, setprofile, dictIds, classIds, intact] = (harnessGlobals.get('_dovetail_setup')([...BLOCKED_PYTHON_MODULES], OUTPUT_TOO_LARGE) as Py).toJs({ depth: 1 }) as [Py, Py, Py, Py, Py, Py, Py];
watchInterpreterState(dictIds.toJs() as unknown as number[], classIds.toJs() as unknown as number[]);

/**
 * What a run changed of the state the harness keeps, seen by CPython's own watchers (the ones its
 * attribute caches and specializer rely on) instead of comparing ~60,000 objects after every run:
 * a dict watcher on every kept dict (module globals, the dicts they hold, function __dict__s), a
 * type watcher on every kept class, a function watcher for assignments to any function's
 * __code__, __defaults__ or __kwdefaults__. The callbacks are WebAssembly-to-JavaScript calls
 * that only note the address of what changed (`watched`): nothing of them is visible to Python,
 * and only the C API (which a run cannot reach: no ctypes) could remove them. A type watcher fires
 * only for a class with a version tag, so each reset gives them one again.
 */
function watchInterpreterState(dicts: readonly number[], classes: readonly number[]): void {
  const m = (py as unknown as { _module: Record<string, (...a: number[]) => number> & { addFunction(f: (...a: number[]) => number, sig: string): number } })._module;
  // One JavaScript function per signature: addFunction reuses the table slot of a function it has seen.
  // Addresses arrive as signed 32-bit ints; `>>> 0` gives Python's id().
  const dictChanged = (_event: number, dict: number) => {
    watched.dicts.add(dict >>> 0);
    return 0;
  };
  const classChanged = (cls: number) => {
    watched.classes.add(cls >>> 0);
    return 0;
  };
  // PyFunction_WatchEvent: 0 CREATE, 1 DESTROY, then MODIFY_CODE, MODIFY_DEFAULTS, MODIFY_KWDEFAULTS.
  const functionChanged = (event: number, fn: number) => {
    if (event >= 2) watched.functions.add(fn >>> 0);
    return 0;
  };
  const dictWatcher = m._PyDict_AddWatcher(m.addFunction(dictChanged, 'iiiii'));
  const typeWatcher = m._PyType_AddWatcher(m.addFunction(classChanged, 'ii'));
  const functionWatcher = m._PyFunction_AddWatcher(m.addFunction(functionChanged, 'iiii'));
  if (dictWatcher < 0 || typeWatcher < 0 || functionWatcher < 0) throw new Error('the Python sandbox could not add its interpreter watchers');
  for (const d of dicts) if (m._PyDict_Watch(dictWatcher, d) !== 0) throw new Error('the Python sandbox could not watch a dict');
  for (const c of classes) if (m._PyType_Watch(typeWatcher, c) !== 0) throw new Error('the Python sandbox could not watch a class');
  const assignVersionTag = m._PyUnstable_Type_AssignVersionTag;
  watchedClassesTagged = () => classes.every((c) => assignVersionTag(c) === 1);
  if (!watchedClassesTagged()) throw new Error('the Python sandbox could not watch a class');
  takeWatched();
}

heapCap = ((py as unknown as { _module: { HEAPU8: Uint8Array } })._module.HEAPU8.length) + data.memoryBytes;

// Nothing of the Pyodide API stays reachable (FS, mountNodeFS, loadPackage, runPython, _module …),
// and the realm loses its ways to turn a string into code: the global eval (Emscripten's
// emscripten_run_script uses it) and the `constructor` of every kind of function.
for (const key of Reflect.ownKeys(py)) Reflect.deleteProperty(py, key);
for (const fn of [function () {}, async function () {}, function* () {}, async function* () {}]) Reflect.deleteProperty(Object.getPrototypeOf(fn) as object, 'constructor');
for (const name of ['eval', 'process', 'fetch', 'require', 'BroadcastChannel', 'WebSocket', 'XMLHttpRequest', 'EventSource', 'importScripts']) Reflect.deleteProperty(globalThis, name);

/**
 * Every timer and immediate this worker's realm sets from here on: only Python can set one (Pyodide
 * schedules its event loop's callbacks with setTimeout / setImmediate; the harness takes that away,
 * this is the backstop). Whatever a run left pending is cancelled before the reset and the worker
 * is replaced, so no Python runs between runs.
 */
const pendingTimers = new Set<ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate>>();
const realSetImmediate = globalThis.setImmediate;
const realClearTimeout = globalThis.clearTimeout;
const realClearImmediate = globalThis.clearImmediate;
{
  const realSetTimeout = globalThis.setTimeout;
  const realSetInterval = globalThis.setInterval;
  const realClearInterval = globalThis.clearInterval;
  type Fn = (...args: unknown[]) => void;
  globalThis.setTimeout = ((fn: Fn, ms?: number, ...args: unknown[]) => {
    const h = realSetTimeout(() => {
      pendingTimers.delete(h);
      fn(...args);
    }, ms);
    pendingTimers.add(h);
    return h;
  }) as unknown as typeof setTimeout;
  globalThis.setImmediate = ((fn: Fn, ...args: unknown[]) => {
    const h = realSetImmediate(() => {
      pendingTimers.delete(h);
      fn(...args);
    });
    pendingTimers.add(h);
    return h;
  }) as unknown as typeof setImmediate;
  globalThis.setInterval = ((fn: Fn, ms?: number, ...args: unknown[]) => {
    const h = realSetInterval(() => fn(...args), ms);
    pendingTimers.add(h);
    return h;
  }) as unknown as typeof setInterval;
  globalThis.clearTimeout = ((h: ReturnType<typeof setTimeout>) => (pendingTimers.delete(h), realClearTimeout(h))) as typeof clearTimeout;
  globalThis.clearInterval = ((h: ReturnType<typeof setInterval>) => (pendingTimers.delete(h), realClearInterval(h))) as typeof clearInterval;
  globalThis.clearImmediate = ((h: ReturnType<typeof setImmediate>) => (pendingTimers.delete(h), realClearImmediate(h))) as typeof clearImmediate;
}

/** Cancels every timer a run left; true if there was one. */
function cancelPendingTimers(): boolean {
  if (pendingTimers.size === 0) return false;
  for (const h of pendingTimers) {
    realClearTimeout(h as ReturnType<typeof setTimeout>);
    realClearImmediate(h as ReturnType<typeof setImmediate>);
  }
  pendingTimers.clear();
  return true;
}

/**
 * Before a run: nothing changed the interpreter since the reset after the last one (no watcher saw
 * a change, builtins are the originals, no hook is set). Nothing should have run in between; if
 * something did, the worker refuses the job and is replaced.
 */
function untouchedSinceIdle(): boolean {
  const since = takeWatched();
  if (since.dicts.size + since.classes.size + since.functions.size > 0) return false;
  try {
    return intact() === true;
  } catch {
    return false;
  }
}

function handle(job: PyodideJob): { reply: RealmReply; retire: boolean } {
  Atomics.store(interrupt, 1, 0);
  Atomics.store(interrupt, 0, 0);
  memoryHit = false;
  let text: unknown;
  try {
    text = run(job.code, job.inputsJson, job.maxOutputBytes);
  } catch (err) {
    // Only the harness itself can throw (main's exceptions become {"error"}): an interrupt or a
    // memory failure outside main, or a fatal error of the interpreter.
    text = undefined;
    if (!memoryHit && Atomics.load(interrupt, 1) !== INTERRUPT_TIMEOUT) return { reply: { ok: false, error: `Error: ${(err as Error).message.split('\n').slice(-2).join(' ')}` }, retire: true };
  }
  if (memoryHit) return { reply: { ok: false, error: 'MemoryError', limit: 'memory' }, retire: true };
  if (Atomics.load(interrupt, 1) === INTERRUPT_TIMEOUT) return { reply: { ok: false, error: 'KeyboardInterrupt', limit: 'timeout' }, retire: false };
  if (text === OUTPUT_TOO_LARGE) return { reply: { ok: false, error: 'output too large', limit: 'output' }, retire: false };
  return { reply: { ok: true, json: String(text) }, retire: false };
}

port.on('message', (job: PyodideJob) => void onJob(job));

async function onJob(job: PyodideJob): Promise<void> {
  if (!untouchedSinceIdle()) {
    port.postMessage({ type: 'refused' });
    return;
  }
  const { reply, retire } = handle(job);
  port.postMessage({ type: 'reply', reply, retire });
  // What the run queued for right after it (microtasks) runs now, before the timers are cancelled
  // and the interpreter is reset.
  await new Promise((resolve) => realSetImmediate(resolve));
  const leftTimers = cancelPendingTimers();
  let clean = false;
  try {
    settrace(undefined);
    setprofile(undefined);
    // Reset with what the watchers saw change; again (with what changed since, the restore's own
    // changes and a finalizer's included, and what was put back) until a pass has nothing to do.
    let changes = takeWatched();
    for (let pass = 0; pass < RESET_PASSES && !clean; pass++) {
      const status = reset([...changes.dicts].join(','), [...changes.classes].join(','), [...changes.functions].join(','));
      if (status !== 1 && status !== 2) break;
      const since = takeWatched();
      clean = status === 1 && since.dicts.size + since.classes.size + since.functions.size === 0;
      if (status === 2) for (const k of ['dicts', 'classes', 'functions'] as const) for (const id of changes[k]) since[k].add(id);
      changes = since;
    }
    clean &&= watchedClassesTagged();
  } catch {
    clean = false;
  }
  port.postMessage({ type: 'idle', retire: retire || !clean || leftTimers });
}
port.postMessage({ type: 'ready' });
