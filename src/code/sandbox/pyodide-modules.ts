import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { BLOCKED_PYTHON_MODULES } from './pyodide-harness.js';

/**
 * `sys.builtin_module_names` of the pinned Pyodide (314.0.7, Python 3.14): modules compiled into
 * the interpreter, so not files of its standard library zip. test/code/pyodide-sandbox.test.ts
 * checks this list against the real interpreter, so a Pyodide upgrade that changes it fails there.
 */
export const PYODIDE_BUILTIN_MODULES: readonly string[] = [
  '_abc', '_ast', '_asyncio', '_bisect', '_blake2', '_bz2', '_codecs', '_codecs_cn', '_codecs_hk', '_codecs_iso2022',
  '_codecs_jp', '_codecs_kr', '_codecs_tw', '_collections', '_contextvars', '_csv', '_ctypes', '_datetime', '_decimal',
  '_elementtree', '_functools', '_heapq', '_hmac', '_imp', '_io', '_json', '_locale', '_lsprof', '_lzma', '_md5',
  '_multibytecodec', '_opcode', '_operator', '_pickle', '_posixsubprocess', '_pyodide_core', '_queue', '_random',
  '_remote_debugging', '_sha1', '_sha2', '_sha3', '_signal', '_socket', '_sqlite3', '_sre', '_stat', '_statistics',
  '_string', '_struct', '_suggestions', '_symtable', '_sysconfig', '_testbuffer', '_testcapi', '_testclinic',
  '_testclinic_limited', '_testinternalcapi', '_testlimitedcapi', '_thread', '_tokenize', '_tracemalloc', '_types',
  '_typing', '_warnings', '_weakref', '_xxtestfuzz', '_zoneinfo', '_zstd', 'array', 'atexit', 'binascii', 'builtins',
  'cmath', 'errno', 'faulthandler', 'fcntl', 'gc', 'itertools', 'marshal', 'math', 'mmap', 'posix', 'pyexpat',
  'select', 'sys', 'termios', 'time', 'unicodedata', 'xxsubtype', 'zlib',
];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The top-level module names a zip holds: its top-level `.py` files and folders (not `*.dist-info`). */
async function topLevelNames(zipBytes: Buffer): Promise<string[]> {
  // jszip (with pako) is loaded here, when a python3 app is first checked, not at start
  const { default: JSZip } = await import('jszip');
  const zip = await JSZip.loadAsync(zipBytes);
  const names = new Set<string>();
  for (const entry of Object.keys(zip.files)) {
    const slash = entry.indexOf('/');
    const name = slash >= 0 ? entry.slice(0, slash) : entry.endsWith('.py') ? entry.slice(0, -3) : '';
    if (IDENTIFIER.test(name)) names.add(name);
  }
  return [...names];
}

/**
 * What `import NAME` can find in the Python sandbox, without starting an interpreter (seconds of
 * CPU): the builtin modules, the standard library zip that ships with the `pyodide` package, and
 * the wheels of CODE_PYTHON_PACKAGES_DIR, less the modules the sandbox blocks. `app import` and
 * `app check` ask this; code nodes still get Python's own ModuleNotFoundError at run time.
 */
export class PyodideModules {
  readonly #wheels: readonly string[];
  #names: Promise<ReadonlySet<string>> | undefined;

  constructor(wheels: readonly string[]) {
    this.#wheels = wheels;
  }

  async missing(names: readonly string[]): Promise<string[]> {
    const available = await (this.#names ??= this.#load());
    return names.filter((n) => !available.has(n));
  }

  async #load(): Promise<ReadonlySet<string>> {
    const stdlib = createRequire(import.meta.url).resolve('pyodide/python_stdlib.zip');
    const zips = await Promise.all([stdlib, ...this.#wheels].map(async (file) => topLevelNames(await readFile(file))));
    const blocked = new Set<string>(BLOCKED_PYTHON_MODULES);
    return new Set([...PYODIDE_BUILTIN_MODULES, ...zips.flat()].filter((n) => !blocked.has(n)));
  }
}
