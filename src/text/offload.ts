import { Worker } from 'node:worker_threads';
import type { Logger } from '../infra/logger.js';
import { OFFLOAD_OPS, type OffloadArgs, type OffloadOp, type OffloadReply, type OffloadRequest, type OffloadResult } from './offload-ops.js';
import { setMaxPieceChars } from './tokenizer.js';
import { workerEntry, workerModule } from '../infra/worker-entry.js';

/** `TOKENIZER_MAX_PIECE_CHARS` and `TOKENIZER_WORKER_MIN_CHARS`. */
export interface TextOffloadConfig {
  /** Longest pre-tokenizer piece counted whole; longer runs are counted in slices (default 128). */
  readonly maxPieceChars: number;
  /** Work on at least this many characters runs on the worker thread, not the event loop (default 20000). */
  readonly workerMinChars: number;
}

/** The worker's module: `offload-worker.js` in `dist/`, `offload-worker.ts` under tsx (see `workerEntry`). */
const WORKER = workerEntry(workerModule('offload-worker', import.meta.url));

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/**
 * Runs CPU-bound text work (token counting, chunking) so that no request stalls the event loop:
 * work on fewer than `workerMinChars` characters runs inline (it takes a few milliseconds at
 * most); anything larger goes to one worker thread, started on first use, which takes requests in
 * order. The worker does not keep the process alive; a worker that dies fails its pending requests
 * and the next request starts a new one.
 */
export class TextOffload {
  readonly #config: TextOffloadConfig;
  readonly #logger: Logger | undefined;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;

  constructor(config: TextOffloadConfig, logger?: Logger) {
    this.#config = Object.freeze({ ...config });
    this.#logger = logger;
    // Inline work (this thread) counts with the configured cap too.
    setMaxPieceChars(config.maxPieceChars);
  }

  get config(): TextOffloadConfig {
    return this.#config;
  }

  /** Token counts of `texts`, in order (cl100k_base; see `countTokens`). */
  async countTokens(texts: readonly string[]): Promise<number[]> {
    let chars = 0;
    for (const t of texts) chars += t.length;
    return this.run('countTokens', chars, texts);
  }

  /** Token count of one text. */
  async countTokensOf(text: string): Promise<number> {
    return (await this.countTokens([text]))[0]!;
  }

  /** Runs `op` inline when `chars` is small, else on the worker thread. */
  async run<K extends OffloadOp>(op: K, chars: number, ...args: OffloadArgs<K>): Promise<OffloadResult<K>> {
    const fn = OFFLOAD_OPS[op] as unknown as (...a: OffloadArgs<K>) => OffloadResult<K>;
    if (chars < this.#config.workerMinChars || this.#closed) return fn(...args);
    const worker = this.#start();
    const id = this.#nextId++;
    return new Promise<OffloadResult<K>>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, op, args, maxPieceChars: this.#config.maxPieceChars } satisfies OffloadRequest);
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER.filename, { eval: WORKER.eval });
    worker.unref();
    worker.on('message', (reply: OffloadReply) => {
      const p = this.#pending.get(reply.id);
      if (!p) return;
      this.#pending.delete(reply.id);
      if ('error' in reply) p.reject(new Error(reply.error));
      else p.resolve(reply.result);
    });
    const fail = (err: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
    worker.on('error', (err) => {
      this.#logger?.error({ err }, 'text worker failed');
      fail(err);
    });
    worker.on('exit', (code) => fail(new Error(`text worker exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  /** Stops the worker; later work runs inline. */
  async close(): Promise<void> {
    this.#closed = true;
    const w = this.#worker;
    this.#worker = undefined;
    if (w) await w.terminate();
  }
}
