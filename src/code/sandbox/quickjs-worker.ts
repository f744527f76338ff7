/**
 * The worker thread that hosts QuickJS for javascript code nodes and templates (see
 * quickjs-pool.ts). It starts with an empty environment and answers `{type: 'reply', reply,
 * retire}` to each job; `retire` asks the pool to replace it after a limit breach.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core';
import * as variantModule from '@jitl/quickjs-wasmfile-release-sync';
import { runJavaScript, TemplateRealm, type RealmLimits, type RealmReply } from './quickjs-realm.js';

export type QuickJsJob =
  | { readonly kind: 'javascript'; readonly code: string; readonly inputsJson: string; readonly limits: RealmLimits }
  | { readonly kind: 'template'; readonly template: string; readonly varsJson: string; readonly limits: RealmLimits };

const port = parentPort!;
const mod = await newQuickJSWASMModuleFromVariant(variantModule as unknown as Parameters<typeof newQuickJSWASMModuleFromVariant>[0]);
const nunjucksSource = readFileSync(createRequire(import.meta.url).resolve('nunjucks/browser/nunjucks.min.js'), 'utf8');
let realm: TemplateRealm | undefined;

function handle(job: QuickJsJob): RealmReply {
  if (job.kind === 'javascript') return runJavaScript(mod, job.code, job.inputsJson, job.limits);
  realm ??= new TemplateRealm(mod, nunjucksSource, job.limits);
  const reply = realm.render(job.template, job.varsJson, job.limits);
  if (!reply.ok && reply.limit) {
    realm.dispose();
    realm = undefined;
  }
  return reply;
}

port.on('message', (job: QuickJsJob) => {
  let reply: RealmReply;
  try {
    reply = handle(job);
  } catch (err) {
    reply = { ok: false, error: `Error: ${(err as Error).message}` };
  }
  port.postMessage({ type: 'reply', reply, retire: !reply.ok && reply.limit === 'memory' });
});
// The first template realm is built before the worker reports ready, so no render waits for it.
realm = new TemplateRealm(mod, nunjucksSource, { timeoutMs: 60_000, memoryBytes: (workerData as { memoryBytes: number }).memoryBytes, maxOutputBytes: 1 });
port.postMessage({ type: 'ready' });
