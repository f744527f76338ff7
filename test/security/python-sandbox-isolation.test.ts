import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { readSse } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';

/**
 * python3 code nodes of different apps on one server with one Pyodide worker
 * (CODE_SANDBOX_PYTHON_WORKERS=1): one app's code can neither read another app's runs (a timer of
 * Pyodide's event loop that outlived its run used to wrap builtins.exec and record every later run
 * of any app) nor keep another app's runs waiting behind all of its own, and an app's queue is
 * bounded (CODE_MAX_QUEUED_PER_APP).
 */
let s: TestServer;

beforeAll(async () => {
  s = await startServer({ env: { CODE_EXECUTION_TIMEOUT: '2', CODE_SANDBOX_PYTHON_WORKERS: '1', CODE_MAX_QUEUED_PER_APP: '2' } });
  await s.runtime.codeSandboxReady();
}, 120_000);
afterAll(async () => {
  await s?.close();
});

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** A workflow of one python3 code node `code` whose string output `out` the run returns. */
async function pythonApp(code: string): Promise<string> {
  const dsl = workflowDsl(
    [
      startNode([{ variable: 'secret', required: false }]),
      { id: 'code', type: 'code', code_language: 'python3', code, outputs: { out: { type: 'string', children: null } }, variables: [{ variable: 'secret', value_selector: ['start', 'secret'] }] },
      endNode({ out: ['code', 'out'] }),
    ],
    [
      ['start', 'code'],
      ['code', 'end'],
    ],
  );
  return (await s.importApp(dsl)).apiKey;
}

type RunData = { status: string; outputs: { out?: string } | null; error: string | null };

async function blocking(key: string, secret = ''): Promise<RunData> {
  const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs: { secret }, response_mode: 'blocking', user: 'u' }) });
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: RunData }).data;
}

/** A streaming run: `started` resolves once its code node started, `finished` with the run's end. */
function streaming(key: string): { started: Promise<void>; finished: Promise<RunData> } {
  let started!: () => void;
  const startedP = new Promise<void>((resolve) => (started = resolve));
  const finished = (async () => {
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(key), body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
    expect(r.status).toBe(200);
    for await (const f of readSse(r)) {
      if (f.kind !== 'data') continue;
      if (f.data.event === 'node_started' && (f.data.data as { node_id: string }).node_id === 'code') started();
      if (f.data.event === 'workflow_finished') return f.data.data as RunData;
    }
    throw new Error('the stream ended without workflow_finished');
  })();
  return { started: startedP, finished };
}

const LOOP = 'def main(secret: str) -> dict:\n    while True:\n        pass\n';
const TRIVIAL = 'def main(secret: str) -> dict:\n    return {"out": "b:" + secret}\n';

describe('python3 code of one app cannot observe another app', () => {
  it('a callback scheduled on the event loop never runs between runs: no hook on builtins.exec sees the next app', async () => {
    // App A schedules a timer that wraps builtins.exec (and main) to record every later run, and
    // re-installs itself after each reset; a later run of A reads what it recorded.
    const plant = await pythonApp(`
import asyncio, builtins
def main(secret: str) -> dict:
    loop = asyncio.get_event_loop()
    orig = builtins.exec
    log = []
    def spy(code, scope=None, *args):
        res = orig(code, scope, *args)
        if isinstance(scope, dict) and callable(scope.get("main")):
            real = scope["main"]
            def main_spy(**kw):
                log.append(kw)
                return real(**kw)
            scope["main"] = main_spy
        return res
    spy.log = log
    def hook():
        builtins.exec = spy
        loop.call_later(0.01, hook)
    try:
        loop.call_later(0.01, hook)
    except Exception as e:
        return {"out": "refused: " + str(e)}
    return {"out": "planted"}
`);
    const read = await pythonApp(`
import builtins, json
def main(secret: str) -> dict:
    return {"out": json.dumps({"hooked": hasattr(builtins.exec, "log"), "log": getattr(builtins.exec, "log", [])})}
`);
    const other = await pythonApp(TRIVIAL);

    const planted = await blocking(plant);
    expect(planted.status).toBe('succeeded');
    // Room for a timer to fire between runs (none does).
    await new Promise((r) => setTimeout(r, 300));
    const b = await blocking(other, 'B-SECRET');
    expect(b).toMatchObject({ status: 'succeeded', outputs: { out: 'b:B-SECRET' } });
    await new Promise((r) => setTimeout(r, 300));
    const seen = await blocking(read);
    expect(seen.status).toBe('succeeded');
    expect(JSON.parse(seen.outputs!.out!)).toEqual({ hooked: false, log: [] });
    expect(JSON.stringify(seen)).not.toContain('B-SECRET');
    // The event loop refuses to schedule at all.
    expect(planted.outputs?.out).toMatch(/^refused: event loop callbacks .* are not available in the code sandbox$/);
  }, 90_000);

  it("one app's looping runs do not keep another app's run waiting until they all end", async () => {
    const looping = await pythonApp(LOOP);
    const trivial = await pythonApp(TRIVIAL);
    // A's three runs reach the worker's queue first (each code node started), then B's.
    const a = [streaming(looping), streaming(looping), streaming(looping)];
    await Promise.all(a.map((r) => r.started));
    const aDone: boolean[] = [false, false, false];
    a.forEach((r, i) => void r.finished.then(() => (aDone[i] = true), () => undefined));
    const b = await blocking(trivial, 'x');
    const aDoneWhenBFinished = aDone.filter(Boolean).length;
    expect(b).toMatchObject({ status: 'succeeded', outputs: { out: 'b:x' } });
    // B ran before A's second loop (one worker: B waited only for the loop running when it came).
    expect(aDoneWhenBFinished).toBeLessThanOrEqual(1);
    for (const r of await Promise.all(a.map((x) => x.finished))) {
      expect(r.status).toBe('failed');
      expect(r.error).toBe('Code execution timed out after 2s (CODE_EXECUTION_TIMEOUT).');
    }
  }, 120_000);

  it("a run past an app's CODE_MAX_QUEUED_PER_APP waiting runs fails at once naming the setting", async () => {
    const looping = await pythonApp(LOOP);
    // One run takes the worker, two wait (the limit), the fourth is refused.
    const runs = [streaming(looping), streaming(looping), streaming(looping), streaming(looping)];
    const ends = await Promise.all(runs.map((r) => r.finished));
    const refused = ends.filter((e) => e.error?.includes('CODE_MAX_QUEUED_PER_APP'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      status: 'failed',
      error: 'Code execution queue of this app is full: 2 python3 code runs already wait for a sandbox worker (CODE_MAX_QUEUED_PER_APP=2).',
    });
    expect(ends.filter((e) => e.error === 'Code execution timed out after 2s (CODE_EXECUTION_TIMEOUT).')).toHaveLength(3);
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
  }, 120_000);
});
