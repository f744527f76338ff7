/**
 * The worker thread that hosts QuickJS for javascript code nodes (see quickjs-sandbox.ts). It
 * starts with an empty environment and answers `{type: 'reply', reply, retire}` to each job; `retire` asks the pool to replace it after a memory breach or a run that
 * left its memory grown.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core';
import * as variantModule from '@jitl/quickjs-wasmfile-release-sync';
import { runJavaScript, type RealmLimits, type RealmReply } from './quickjs-realm.js';

export type QuickJsJob = { readonly kind: 'javascript'; readonly code: string; readonly inputsJson: string; readonly limits: RealmLimits };

const port = parentPort!;
const memoryBytes = (workerData as { memoryBytes: number }).memoryBytes;
const mod = await newQuickJSWASMModuleFromVariant(variantModule as unknown as Parameters<typeof newQuickJSWASMModuleFromVariant>[0]);

// CODE_MAX_MEMORY_MB. QuickJS's own limit (JS_SetMemoryLimit, set on every runtime) counts only 8
// bytes per allocation in this build (no malloc_usable_size in Emscripten's malloc), so a run could
// take gigabytes. Every allocation of every runtime comes from this module's WebAssembly memory:
// its growth is capped at the size the worker had once ready plus the limit. A refused growth is
// malloc returning NULL, which QuickJS throws as "out of memory"; the memory never shrinks, so a
// breach, or a run that left it grown by more than half the limit, retires the worker.
const memory = mod.getWasmMemory();
const grow = memory.grow.bind(memory);
let heapCap = Number.POSITIVE_INFINITY;
let memoryHit = false;
memory.grow = (pages: number): number => {
  if (memory.buffer.byteLength + pages * 65536 > heapCap) {
    memoryHit = true;
    throw new RangeError('the code sandbox memory limit is reached');
  }
  return grow(pages);
};
port.on('message', (job: QuickJsJob) => {
  memoryHit = false;
  let reply: RealmReply;
  try {
    reply = runJavaScript(mod, job.code, job.inputsJson, job.limits);
  } catch (err) {
    reply = { ok: false, error: `Error: ${(err as Error).message}` };
  }
  // A breach is reported as such, whatever the program made of the exception it saw.
  if (memoryHit) reply = { ok: false, error: 'out of memory', limit: 'memory' };
  const grown = memory.buffer.byteLength > readySize + memoryBytes / 2;
  port.postMessage({ type: 'reply', reply, retire: memoryHit || grown || (!reply.ok && reply.limit === 'memory') });
});
const readySize = memory.buffer.byteLength;
heapCap = readySize + memoryBytes;
port.postMessage({ type: 'ready' });
