import { Worker } from 'node:worker_threads';
import type { Logger } from '../../../infra/logger.js';
import { workerEntry, workerModule } from '../../../infra/worker-entry.js';
import { ParseError } from '../../errors.js';
import { ParseLimitExceeded, type ParseLimits } from './limits.js';
import type { ParseReply, ParseRequest } from './parse-messages.js';

/** Document parsing: the per-document caps (`ParseLimits`) and what a parse may take. */
export interface ParseConfig extends ParseLimits {
  /** `PARSE_TIMEOUT_MS`: wall-clock time of one parse (default 120,000); a parse past it is stopped. */
  readonly timeoutMs: number;
  /** `PARSE_MAX_HEAP_MB`: V8 heap of a parse worker (default 512); a parse that needs more is stopped. */
  readonly maxHeapMb: number;
  /** `PARSE_WORKERS`: documents parsed at once (default 2), each on its own worker thread. */
  readonly workers: number;
}

/** How a caller names the document in errors, and whether empty text is an answer. */
export interface ParseOptions {
  /** The file's name, for errors ("Parsing report.docx took longer than …"). */
  readonly name: string;
  /** `""` is a result, not an error (the document-extractor node). */
  readonly allowEmpty?: boolean;
  /** Stops the parse (its worker is ended). */
  readonly signal?: AbortSignal;
}

/** The worker's module: `parse-worker.js` in `dist/`, `parse-worker.ts` under tsx (see `workerEntry`). */
const WORKER = workerEntry(workerModule('parse-worker', import.meta.url));

/** An idle worker is ended after this long (its heap is given back). */
const IDLE_MS = 60_000;

interface Slot {
  readonly worker: Worker;
  /** Resolves once the worker has loaded its modules. */
  readonly ready: Promise<void>;
  /** Settles the parse in progress (the worker ended, or failed). */
  onEnd: ((err: Error) => void) | undefined;
  onReply: ((reply: Exclude<ParseReply, { ready: true }>) => void) | undefined;
  idle: NodeJS.Timeout | undefined;
  dead: boolean;
}

/**
 * Parses documents off the main thread: each parse runs on a worker thread of its own (at most
 * `workers` at once, later ones wait their turn) whose V8 heap is capped at `maxHeapMb` and whose
 * time is capped at `timeoutMs`. A parse past either limit ends its worker (the next parse starts a
 * new one) and fails with a `ParseError` naming the file and the setting; the process and every
 * other parse go on. The caps of `ParseLimits` apply inside the worker (`parseDocument`).
 */
export class DocumentParser {
  readonly #config: ParseConfig;
  readonly #limits: ParseLimits;
  readonly #logger: Logger | undefined;
  readonly #idle: Slot[] = [];
  readonly #all = new Set<Slot>();
  readonly #waiting: (() => void)[] = [];
  #busy = 0;
  #nextId = 1;
  #closed = false;

  constructor(config: ParseConfig, logger?: Logger) {
    this.#config = Object.freeze({ ...config });
    const { timeoutMs: _t, maxHeapMb: _h, workers: _w, ...limits } = this.#config;
    this.#limits = Object.freeze(limits);
    this.#logger = logger;
  }

  get config(): ParseConfig {
    return this.#config;
  }

  /** The text of a document (see `parseDocument`), parsed on a worker thread within the limits. */
  async parse(bytes: Buffer, extension: string, opts: ParseOptions): Promise<string> {
    if (this.#closed) throw new Error('the document parser is closed');
    opts.signal?.throwIfAborted();
    await this.#turn(opts.signal);
    let slot: Slot | undefined;
    try {
      slot = this.#idle.pop() ?? this.#spawn();
      if (slot.idle) clearTimeout(slot.idle);
      return await this.#run(slot, bytes, extension, opts);
    } finally {
      this.#busy--;
      if (slot && !slot.dead && !this.#closed) {
        slot.idle = setTimeout(() => this.#retire(slot!), IDLE_MS).unref();
        this.#idle.push(slot);
      }
      this.#waiting.shift()?.();
    }
  }

  /** Waits until fewer than `workers` parses run, then counts this one. */
  async #turn(signal: AbortSignal | undefined): Promise<void> {
    if (this.#busy >= this.#config.workers) {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener('abort', abort);
          resolve();
        };
        const abort = () => {
          const i = this.#waiting.indexOf(go);
          if (i >= 0) this.#waiting.splice(i, 1);
          reject(signal!.reason as Error);
        };
        signal?.addEventListener('abort', abort, { once: true });
        this.#waiting.push(go);
      });
    }
    this.#busy++;
  }

  async #run(slot: Slot, bytes: Buffer, extension: string, opts: ParseOptions): Promise<string> {
    await slot.ready;
    const { timeoutMs, maxHeapMb } = this.#config;
    const copy = new Uint8Array(bytes); // the worker gets its own copy, transferred
    const id = this.#nextId++;
    return new Promise<string>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', abort);
        slot.onEnd = undefined;
        slot.onReply = undefined;
      };
      const stop = (err: Error) => {
        done();
        this.#retire(slot);
        reject(err);
      };
      const abort = () => stop(opts.signal!.reason as Error);
      slot.onReply = (reply) => {
        if (reply.id !== id) return;
        done();
        if ('text' in reply) return resolve(reply.text);
        if (reply.kind === 'limit') return reject(new ParseLimitExceeded(`${opts.name}: ${reply.error}`));
        if (reply.kind === 'parse') return reject(new ParseError(reply.error));
        reject(new ParseError(`Parsing ${opts.name} failed: ${reply.error}`));
      };
      slot.onEnd = (err) => {
        done();
        const oom = (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
        reject(
          oom
            ? new ParseLimitExceeded(`Parsing ${opts.name} needed more memory than the limit (PARSE_MAX_HEAP_MB=${maxHeapMb}) and was stopped.`)
            : new ParseError(`Parsing ${opts.name} failed: the parse worker stopped (${err.message}).`),
        );
      };
      timer = setTimeout(() => stop(new ParseLimitExceeded(`Parsing ${opts.name} took longer than the limit (PARSE_TIMEOUT_MS=${timeoutMs}) and was stopped.`)), timeoutMs);
      opts.signal?.addEventListener('abort', abort, { once: true });
      slot.worker.postMessage({ id, bytes: copy, extension, allowEmpty: opts.allowEmpty ?? false, limits: this.#limits } satisfies ParseRequest, [copy.buffer]);
    });
  }

  #spawn(): Slot {
    const worker = new Worker(WORKER.filename, {
      eval: WORKER.eval,
      resourceLimits: { maxOldGenerationSizeMb: this.#config.maxHeapMb },
    });
    worker.unref();
    let loaded!: () => void;
    let failed!: (err: Error) => void;
    const slot: Slot = {
      worker,
      ready: new Promise<void>((resolve, reject) => {
        loaded = resolve;
        failed = reject;
      }),
      onEnd: undefined,
      onReply: undefined,
      idle: undefined,
      dead: false,
    };
    void slot.ready.catch(() => undefined); // a worker that dies idle: nobody awaits it
    this.#all.add(slot);
    const end = (err: Error) => {
      if (!this.#detach(slot)) return;
      failed(err);
      slot.onEnd?.(err);
    };
    worker.on('message', (reply: ParseReply) => {
      if ('ready' in reply) loaded();
      else slot.onReply?.(reply);
    });
    worker.on('error', (err) => {
      if ((err as { code?: string }).code !== 'ERR_WORKER_OUT_OF_MEMORY') this.#logger?.error({ err }, 'parse worker failed');
      end(err);
    });
    worker.on('exit', (code) => end(new Error(`parse worker exited (${code})`)));
    return slot;
  }

  /** Ends a worker (after a timeout, an abort, or idleness). */
  #retire(slot: Slot): void {
    if (this.#detach(slot)) void slot.worker.terminate();
  }

  /** Takes a worker out of the pool (once): false when it was out already. */
  #detach(slot: Slot): boolean {
    this.#all.delete(slot);
    if (slot.dead) return false;
    slot.dead = true;
    if (slot.idle) clearTimeout(slot.idle);
    const i = this.#idle.indexOf(slot);
    if (i >= 0) this.#idle.splice(i, 1);
    return true;
  }

  /** Ends every worker; later parses are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#idle.length = 0;
    await Promise.all([...this.#all].map(async (s) => {
      this.#retire(s);
      await s.worker.terminate();
    }));
  }
}
