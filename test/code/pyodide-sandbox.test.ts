import { createServer, type Server } from 'node:http';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import JSZip from 'jszip';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPythonModules } from '../../src/code/python-modules.js';
import { PYODIDE_BUILTIN_MODULES } from '../../src/code/sandbox/pyodide-modules.js';
import { PyodideSandbox, snapshotFile } from '../../src/code/sandbox/pyodide-sandbox.js';
import { contractCodeConfig } from './code-executor.contract.js';

/** A pure-Python wheel: a zip with the package and its .dist-info. */
async function tinyWheel(dir: string): Promise<void> {
  const zip = new JSZip();
  zip.file('dovetail_tiny/__init__.py', 'def hello(name):\n    return "hello " + name\n');
  zip.file('dovetail_tiny-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\nName: dovetail-tiny\nVersion: 1.0\n');
  zip.file('dovetail_tiny-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n');
  zip.file('dovetail_tiny-1.0.dist-info/RECORD', '');
  writeFileSync(path.join(dir, 'dovetail_tiny-1.0-py3-none-any.whl'), await zip.generateAsync({ type: 'nodebuffer' }));
}

const never = () => new AbortController().signal;
const SECRET = `dovetail-secret-${process.pid}`;

describe('Python in the Pyodide sandbox', () => {
  let sb: PyodideSandbox;
  let dir: string;
  let secretFile: string;
  let server: Server;
  let port: number;
  let connections = 0;
  const run = (code: string, inputs: Record<string, unknown> = {}) => sb.run({ language: 'python3', code, inputs }, never());
  const failure = (code: string, inputs: Record<string, unknown> = {}) => run(code, inputs).then(() => 'no error', (e: Error) => e.message);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-pyodide-'));
    secretFile = path.join(dir, 'dovetail.sqlite');
    writeFileSync(secretFile, SECRET);
    const wheels = path.join(dir, 'wheels');
    (await import('node:fs')).mkdirSync(wheels);
    await tinyWheel(wheels);
    process.env.DOVETAIL_TEST_SECRET = SECRET;
    server = createServer((_req, res) => res.end(SECRET));
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    sb = new PyodideSandbox(contractCodeConfig({ CODE_SANDBOX_PYTHON_WORKERS: '1', CODE_PYTHON_PACKAGES_DIR: wheels, CODE_MAX_MEMORY_MB: '64' }));
    await sb.ready();
  }, 180_000);

  afterAll(async () => {
    delete process.env.DOVETAIL_TEST_SECRET;
    await sb?.close();
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs main(**inputs) and imports the standard library and the preinstalled wheel', async () => {
    expect(await run('import json, re, datetime\nimport dovetail_tiny\ndef main(name: str) -> dict:\n    return {"r": dovetail_tiny.hello(name), "j": json.dumps([1])}\n', { name: 'x' })).toEqual({ r: 'hello x', j: '[1]' });
  });

  it('app check names the modules the sandbox cannot import (and not the wheel nor the stdlib)', async () => {
    expect(await missingPythonModules(sb, ['json', 'dovetail_tiny', 'numpy', 'js', 'pyodide', 'ctypes'])).toEqual(['numpy', 'js', 'pyodide', 'ctypes']);
  });

  it('the module index app check reads without an interpreter matches what the interpreter finds', async () => {
    const probe = 'import sys, importlib.util\ndef main(names: list) -> dict:\n    ok = []\n    for n in names:\n        try:\n            ok.append(n in sys.builtin_module_names or importlib.util.find_spec(n) is not None)\n        except Exception:\n            ok.append(False)\n    return {"builtins": sorted(sys.builtin_module_names), "ok": ok}\n';
    const names = ['json', 'zoneinfo', 'sqlite3', 'decimal', 'asyncio', 'tomllib', 'math', 'itertools', 'dovetail_tiny', 'numpy', 'requests', 'yaml'];
    const r = (await run(probe, { names })) as { builtins: string[]; ok: boolean[] };
    expect(r.builtins).toEqual([...PYODIDE_BUILTIN_MODULES]);
    const missing = await sb.missingModules(names);
    expect(names.filter((_, i) => !r.ok[i])).toEqual(missing);
    expect(missing).toEqual(['numpy', 'requests', 'yaml']);
  });

  it('cannot read the host filesystem: /etc/passwd, the database file, the data dir', async () => {
    expect(await failure('def main():\n    return {"r": open("/etc/passwd").read()}\n')).toMatch(/FileNotFoundError/);
    expect(await failure('def main(p: str):\n    return {"r": open(p).read()}\n', { p: secretFile })).toMatch(/FileNotFoundError/);
    expect(await failure('import os\ndef main(p: str):\n    return {"r": os.listdir(p)}\n', { p: dir })).toMatch(/FileNotFoundError/);
    const listing = (await run('import os\ndef main():\n    return {"r": sorted(os.listdir("/"))}\n')) as { r: string[] };
    expect(listing.r).not.toContain('etc');
    expect(listing.r).not.toContain('usr');
  });

  it('sees none of the server environment variables', async () => {
    const r = (await run('import os\ndef main():\n    return {"env": dict(os.environ)}\n')) as { env: Record<string, string> };
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect(Object.keys(r.env)).not.toContain('DOVETAIL_TEST_SECRET');
    expect(await failure('def main():\n    return {"r": open("/proc/self/environ").read()}\n')).toMatch(/Error/);
  });

  it('has no network: socket, urllib, http.client and pyodide.http all fail', async () => {
    expect(await failure(`import socket\ndef main():\n    s = socket.create_connection(("127.0.0.1", ${port}), timeout=2)\n    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")\n    return {"r": s.recv(100).decode()}\n`)).toMatch(/Error/);
    expect(await failure(`import urllib.request\ndef main():\n    return {"r": urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=2).read().decode()}\n`)).toMatch(/Error/);
    expect(await failure(`import http.client\ndef main():\n    c = http.client.HTTPConnection("127.0.0.1", ${port}, timeout=2)\n    c.request("GET", "/")\n    return {"r": c.getresponse().read().decode()}\n`)).toMatch(/Error/);
    expect(await failure('from pyodide.http import pyfetch\ndef main():\n    return {}\n')).toMatch(/ModuleNotFoundError: No module named 'pyodide/);
    expect(connections).toBe(0);
  });

  it('cannot start processes or threads', async () => {
    expect(await failure('import subprocess\ndef main():\n    return {"r": subprocess.run(["id"], capture_output=True).stdout.decode()}\n')).toMatch(/Error/);
    expect(await failure('import os\ndef main():\n    return {"r": os.fork()}\n')).toMatch(/Error/);
    expect(await failure('import threading\ndef main():\n    t = threading.Thread(target=print)\n    t.start()\n    return {}\n')).toMatch(/RuntimeError|Error/);
  });

  it('cannot reach the JavaScript realm: js, pyodide.ffi, pyodide_js, _pyodide_core, ctypes, gc, even past the import blocker', async () => {
    for (const m of ['js', 'pyodide.ffi', 'pyodide_js', '_pyodide_core', 'ctypes', 'gc']) {
      expect(await failure(`import ${m}\ndef main():\n    return {}\n`)).toMatch(/ModuleNotFoundError/);
    }
    const past = 'import sys\nsys.meta_path.pop(0)\nfor n in ("js", "pyodide_js", "gc", "_pyodide_core", "_ctypes"):\n    try:\n        __import__(n)\n        raise Exception("imported " + n)\n    except ImportError:\n        pass\ndef main():\n    return {"r": [m for m in sys.modules if "pyodide" in m or m in ("js", "gc")]}\n';
    expect(await run(past)).toEqual({ r: [] });
  });

  it('shares no state between runs: globals, modules, builtins, files, environment', async () => {
    const poison = [
      'import json, sys, os, builtins, types',
      'json.dumps = lambda *a, **k: "poisoned"',
      'json.JSONEncoder.default = lambda self, o: "poisoned"',
      'builtins.len = lambda x: -1',
      'sys.modules["leak"] = types.ModuleType("leak")',
      'os.environ["LEAK"] = "1"',
      'open("/tmp/leak.txt", "w").write("x")',
      'open("/home/pyodide/leak.txt", "w").write("x")',
      'LEAKED = 1',
      'def main():\n    return {"r": 1}\n',
    ].join('\n');
    expect(await run(poison)).toEqual({ r: 1 });
    const check = [
      'import json, sys, os',
      'def main():',
      '    return {"dumps": json.dumps([1]), "len": len([1, 2]), "leak": "leak" in sys.modules, "env": "LEAK" in os.environ,',
      '            "tmp": os.path.exists("/tmp/leak.txt"), "home": os.path.exists("/home/pyodide/leak.txt"), "global": "LEAKED" in globals(),',
      '            "default": json.JSONEncoder.default.__name__}',
      '',
    ].join('\n');
    expect(await run(check)).toEqual({ dumps: '[1]', len: 2, leak: false, env: false, tmp: false, home: false, global: false, default: 'default' });
  });

  it('shares no state between runs: function code and defaults, attributes of functions and instances, lists, nested dicts, classes of modules', async () => {
    // Each kind of change the reset must see (the interpreter watchers for dicts, classes and
    // functions; a comparison for the rest), each in a run of its own, then a run that finds none.
    const poisons = [
      'json.loads.__code__ = (lambda *a, **k: "poisoned").__code__',
      'json.dumps.__kwdefaults__ = dict(json.dumps.__kwdefaults__, separators=("|", ":"))',
      'string.capwords.__defaults__ = ("x",)',
      'json.dumps.leak = 1',
      'random._inst.leak = 1',
      'sys.path.append("/leak")',
      'json.decoder.BACKSLASH["leak"] = 1',
      'functools.leak = [1]',
      'json.JSONDecoder.leak = 1',
      // A finalizer that changes state while the reset collects the run's objects.
      'class Fin:\n    def __del__(self):\n        json.fin = 1\nfin = Fin()\nfin.cycle = fin',
    ];
    const check = [
      'import json, json.decoder, random, string, sys, functools',
      'def main():',
      '    return {"loads": json.loads("[1]"), "dumps": json.dumps([1, 2]), "capwords": string.capwords("a b"), "fattr": hasattr(json.dumps, "leak"),',
      '            "inst": hasattr(random._inst, "leak"), "path": "/leak" in sys.path, "nested": "leak" in json.decoder.BACKSLASH, "mod": hasattr(functools, "leak"),',
      '            "cls": hasattr(json.JSONDecoder, "leak"), "fin": hasattr(json, "fin")}',
      '',
    ].join('\n');
    const clean = { loads: [1], dumps: '[1, 2]', capwords: 'A B', fattr: false, inst: false, path: false, nested: false, mod: false, cls: false, fin: false };
    for (const poison of poisons) {
      expect(await run(`import json, json.decoder, random, string, sys, functools\n${poison}\ndef main():\n    return {"r": 1}\n`)).toEqual({ r: 1 });
      expect({ poison, ...((await run(check)) as object) }).toEqual({ poison, ...clean });
    }
    // A module whose class a run replaced cannot be put back: the worker is replaced.
    expect(await run('import json, types\njson.__class__ = type("M", (types.ModuleType,), {"__getattr__": lambda self, n: "poisoned"})\ndef main():\n    return {"r": type(json).__name__}\n')).toEqual({ r: 'M' });
    expect(await run('import json, types\ndef main():\n    return {"r": type(json) is types.ModuleType}\n')).toEqual({ r: true });
    expect(await run(check)).toEqual(clean);
    // A kept instance given a whole new __dict__ cannot be put back either: the worker is replaced.
    expect(await run('import random\nrandom._inst.__dict__ = {"leak": 1}\ndef main():\n    return {"r": random._inst.leak}\n')).toEqual({ r: 1 });
    expect(await run(check)).toEqual(clean);
  }, 120_000);

  it('ends a runaway loop, deep recursion and a huge output with Dify-style errors and keeps serving', async () => {
    expect(await failure('def main():\n    while True:\n        pass\n')).toBe('Code execution timed out after 3s (CODE_EXECUTION_TIMEOUT).');
    expect(await failure('def f(n):\n    return f(n + 1)\ndef main():\n    return {"r": f(0)}\n')).toMatch(/^Code execution failed: [\s\S]*RecursionError/);
    expect(await failure('def main():\n    return {"r": "x" * 100000}\n')).toBe('Code output exceeds 4096 bytes (CODE_MAX_OUTPUT_BYTES).');
    expect(await run('def main(x: int):\n    return {"r": x + 1}\n', { x: 1 })).toEqual({ r: 2 });
  }, 180_000);

  // These two replace the worker (a new interpreter boots, slowly on a loaded machine).
  it('terminates the worker of a loop that swallows the interrupt, and the next run gets a fresh one', async () => {
    expect(await failure('def main():\n    try:\n        while True:\n            pass\n    except BaseException:\n        while True:\n            pass\n')).toBe('Code execution timed out after 3s (CODE_EXECUTION_TIMEOUT).');
    expect(await run('def main(x: int):\n    return {"r": x + 1}\n', { x: 1 })).toEqual({ r: 2 });
  }, 180_000);

  it('ends a memory bomb at CODE_MAX_MEMORY_MB (the worker is replaced)', async () => {
    expect(await failure('def main():\n    a = []\n    while True:\n        a.append("x" * 1000000)\n')).toBe('Code execution ran out of memory: more than 64 MB (CODE_MAX_MEMORY_MB).');
  }, 180_000);
});

describe('the interpreter snapshot (CODE_PYTHON_SNAPSHOT_DIR)', () => {
  it('the first worker writes it; a later sandbox restores it as it is; a damaged one is replaced', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-pyodide-snapshot-'));
    const once = async () => {
      const sb = new PyodideSandbox(contractCodeConfig({ CODE_SANDBOX_PYTHON_WORKERS: '1', CODE_PYTHON_SNAPSHOT_DIR: dir }));
      try {
        return await sb.run({ language: 'python3', code: 'import json\ndef main(x: int):\n    return {"r": json.loads(json.dumps(x)) * 2}\n', inputs: { x: 21 } }, never());
      } finally {
        await sb.close();
      }
    };
    try {
      expect(await once()).toEqual({ r: 42 });
      const file = snapshotFile(dir);
      const written = statSync(file);
      expect(written.size).toBeGreaterThan(1_000_000);
      // restored, not written again
      expect(await once()).toEqual({ r: 42 });
      expect(statSync(file).mtimeMs).toBe(written.mtimeMs);
      // a file whose checksum does not match is not restored: the worker boots and writes a good one
      writeFileSync(file, 'not a snapshot');
      expect(await once()).toEqual({ r: 42 });
      expect(statSync(file).size).toBe(written.size);
      expect(readdirSync(dir)).toEqual([path.basename(file)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('CODE_PYTHON_SNAPSHOT_DIR=off turns it off; unset, it is the data dir\'s cache folder', () => {
    expect(contractCodeConfig({ CODE_PYTHON_SNAPSHOT_DIR: 'off' }).pythonSnapshotDir).toBeUndefined();
    expect(contractCodeConfig({ CODE_PYTHON_SNAPSHOT_DIR: '' }).pythonSnapshotDir).toMatch(/[/\\]cache$/);
  });
});
