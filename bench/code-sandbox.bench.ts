import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { loadConfig } from '../src/config.js';
import { PyodideSandbox } from '../src/code/sandbox/pyodide-sandbox.js';
import { benchServer, fmt, median, type BenchServer } from './lib.js';

const RUNS = 30;
const WARMUP = 3;

const dsl = (node: Record<string, unknown>, out: string) =>
  stringify({
    app: { name: 'bench-sandbox', mode: 'workflow' },
    kind: 'app',
    version: '0.3.1',
    workflow: {
      graph: {
        nodes: [
          { id: 'start', data: { type: 'start', title: 'start', variables: [{ variable: 'x', label: 'x', type: 'number', required: true }] } },
          { id: 'n', data: { title: 'n', variables: [{ variable: 'x', value_selector: ['start', 'x'] }], ...node } },
          { id: 'end', data: { type: 'end', title: 'end', outputs: [{ variable: 'r', value_selector: ['n', out] }] } },
        ],
        edges: [
          { source: 'start', target: 'n', sourceHandle: 'source' },
          { source: 'n', target: 'end', sourceHandle: 'source' },
        ],
      },
    },
  });

const NODES = {
  template: dsl({ type: 'template-transform', template: '{% for i in range(0, 3) %}{{ x * i }},{% endfor %}' }, 'output'),
  javascript: dsl({ type: 'code', code_language: 'javascript', code: 'function main({x}) { return { r: x * 2 }; }', outputs: { r: { type: 'number', children: null } } }, 'r'),
  python3: dsl({ type: 'code', code_language: 'python3', code: 'def main(x):\n    return {"r": x * 2}\n', outputs: { r: { type: 'number', children: null } } }, 'r'),
  // Changes interpreter state (re's pattern cache), which the reset after the run puts back.
  python3Re: dsl({ type: 'code', code_language: 'python3', code: 'import re\ndef main(x):\n    return {"r": len(re.findall(r"\\d", str(x * 7)))}\n', outputs: { r: { type: 'number', children: null } } }, 'r'),
};

async function timeRuns(s: BenchServer, yaml: string): Promise<number> {
  const a = await s.runtime.apps.importDsl(yaml);
  const key = (await s.runtime.keys.create('app', a.workspaceId, a.id)).apiKey;
  const ms: number[] = [];
  for (let i = 0; i < RUNS + WARMUP; i++) {
    const t0 = performance.now();
    const r = await fetch(`${s.url}/v1/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { x: i }, user: 'bench' }) });
    const b = (await r.json()) as { data: { status: string; error: string | null } };
    if (b.data.status !== 'succeeded') throw new Error(`run ${b.data.status}: ${b.data.error}`);
    if (i >= WARMUP) ms.push(performance.now() - t0);
  }
  return median(ms);
}

/** Time until one python3 worker is ready (a sandbox of one worker, started and closed), ms. */
async function pythonWorkerStart(snapshotDir: string): Promise<number> {
  const t0 = performance.now();
  const sb = new PyodideSandbox(loadConfig({ DOVETAIL_CONFIG: undefined as unknown as string, CODE_SANDBOX_PYTHON_WORKERS: '1', CODE_PYTHON_SNAPSHOT_DIR: snapshotDir }, {}).code);
  await sb.ready();
  const ms = performance.now() - t0;
  await sb.close();
  return ms;
}

/**
 * python3 worker starts: booting CPython (`CODE_PYTHON_SNAPSHOT_DIR=off`, the baseline), the first
 * start on an empty snapshot folder (boots, writes the snapshot, restores it) and later starts
 * (restore the snapshot).
 */
async function pythonWorkerStarts(): Promise<{ boot: number; first: number; restore: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-bench-snapshot-'));
  try {
    const boot = median([await pythonWorkerStart('off'), await pythonWorkerStart('off')]);
    const first = await pythonWorkerStart(dir);
    const restore = median([await pythonWorkerStart(dir), await pythonWorkerStart(dir), await pythonWorkerStart(dir)]);
    return { boot, first, restore };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Blocking workflow runs over HTTP of one node each: a template-transform node, a small javascript
 * and a small python3 code node, in `sandbox` mode (QuickJS workers for javascript and templates,
 * Pyodide workers for python3) and in `process` mode, in one run; plus the resident memory the
 * default sandbox pools add to the server (timed once the pools have started); and how long a
 * python3 worker takes to start, booted or restored from the interpreter snapshot.
 */
export async function run(): Promise<void> {
  const rss0 = process.memoryUsage().rss;
  const sandbox = await benchServer({ CODE_EXECUTION_MODE: 'sandbox' });
  sandbox.runtime.warmWorkers();
  await sandbox.runtime.codeSandboxReady();
  const sandboxResults = {
    template: await timeRuns(sandbox, NODES.template),
    javascript: await timeRuns(sandbox, NODES.javascript),
    python3: await timeRuns(sandbox, NODES.python3),
    python3Re: await timeRuns(sandbox, NODES.python3Re),
  };
  const rssSandbox = process.memoryUsage().rss;
  await sandbox.close();
  const proc = await benchServer({ CODE_EXECUTION_MODE: 'process', ...(process.env.CODE_PYTHON_COMMAND ? { CODE_PYTHON_COMMAND: process.env.CODE_PYTHON_COMMAND } : {}) });
  const processResults = { javascript: await timeRuns(proc, NODES.javascript), python3: await timeRuns(proc, NODES.python3) };
  await proc.close();
  const starts = await pythonWorkerStarts();
  console.log(`template-transform run (QuickJS sandbox):     median ${fmt(sandboxResults.template)} ms`);
  console.log(`javascript code node, sandbox (QuickJS):      median ${fmt(sandboxResults.javascript)} ms   vs process mode ${fmt(processResults.javascript)} ms (${fmt(processResults.javascript / sandboxResults.javascript)}x)`);
  console.log(`python3 code node, sandbox (Pyodide):         median ${fmt(sandboxResults.python3)} ms   vs process mode ${fmt(processResults.python3)} ms (${fmt(processResults.python3 / sandboxResults.python3)}x), vs javascript in the sandbox ${fmt(sandboxResults.javascript)} ms`);
  console.log(`python3 code node using re, sandbox (Pyodide):  median ${fmt(sandboxResults.python3Re)} ms   (fills re's cache, which the reset after each run puts back)`);
  console.log(`python3 worker start (Pyodide):               median ${fmt(starts.restore, 0)} ms from the interpreter snapshot   vs booting CPython ${fmt(starts.boot, 0)} ms (CODE_PYTHON_SNAPSHOT_DIR=off, ${fmt(starts.boot / starts.restore)}x); the first start, which writes the snapshot, ${fmt(starts.first, 0)} ms`);
  console.log(`server resident memory with the default pools (CODE_SANDBOX_JS_WORKERS=2, CODE_SANDBOX_PYTHON_WORKERS=1): ${fmt((rssSandbox - rss0) / 1024 / 1024, 0)} MB over the bench process before start (${fmt(rssSandbox / 1024 / 1024, 0)} MB in all)`);
}
