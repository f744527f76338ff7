/**
 * The worker thread that hosts one Pyodide interpreter for python3 code nodes (see
 * pyodide-sandbox.ts). It loads Pyodide from node_modules (no network), unpacks the wheels of
 * CODE_PYTHON_PACKAGES_DIR into site-packages, runs the harness (pyodide-harness.ts), then cuts
 * every path from Python to this worker's JavaScript realm, and answers each job with
 * `{type: 'reply', reply, retire}` followed by `{type: 'idle', retire}` once the interpreter is
 * clean again.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { loadPyodide } from 'pyodide';
import type { RealmReply } from './quickjs-realm.js';
import { BLOCKED_PYTHON_MODULES, PYODIDE_HARNESS } from './pyodide-harness.js';

export interface PyodideWorkerData {
  /** Memory a run may add to the interpreter's WebAssembly heap (CODE_MAX_MEMORY_MB), bytes. */
  readonly memoryBytes: number;
  /** Pure-Python wheels to unpack into site-packages (CODE_PYTHON_PACKAGES_DIR). */
  readonly wheels: readonly string[];
  readonly interrupt: SharedArrayBuffer;
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
const py = await loadPyodide({
  indexURL,
  jsglobals: Object.create(null) as object,
  env: { HOME: '/home/pyodide' },
  stdin: () => null,
  stdout: () => undefined,
  stderr: () => undefined,
});
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

type Py = ((...args: unknown[]) => unknown) & { toJs(o: { depth: number }): Py[] };
const harnessGlobals = py.runPython('dict()') as unknown as { get(k: string): Py };
py.runPython(PYODIDE_HARNESS, { globals: harnessGlobals as never });
const [run, reset, settrace, setprofile] = (harnessGlobals.get('_dovetail_setup')([...BLOCKED_PYTHON_MODULES], OUTPUT_TOO_LARGE) as Py).toJs({ depth: 1 }) as [Py, Py, Py, Py];

heapCap = ((py as unknown as { _module: { HEAPU8: Uint8Array } })._module.HEAPU8.length) + data.memoryBytes;

// Nothing of the Pyodide API stays reachable (FS, mountNodeFS, loadPackage, runPython, _module …),
// and the realm loses its ways to turn a string into code: the global eval (Emscripten's
// emscripten_run_script uses it) and the `constructor` of every kind of function.
for (const key of Reflect.ownKeys(py)) Reflect.deleteProperty(py, key);
for (const fn of [function () {}, async function () {}, function* () {}, async function* () {}]) Reflect.deleteProperty(Object.getPrototypeOf(fn) as object, 'constructor');
for (const name of ['eval', 'process', 'fetch', 'require', 'BroadcastChannel', 'WebSocket', 'XMLHttpRequest', 'EventSource', 'importScripts']) Reflect.deleteProperty(globalThis, name);

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

port.on('message', (job: PyodideJob) => {
  const { reply, retire } = handle(job);
  port.postMessage({ type: 'reply', reply, retire });
  let clean = false;
  try {
    settrace(undefined);
    setprofile(undefined);
    clean = reset() === true;
  } catch {
    clean = false;
  }
  port.postMessage({ type: 'idle', retire: retire || !clean });
});
port.postMessage({ type: 'ready' });
