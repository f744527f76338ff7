import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { GenerateChunk, GenerateRequest, ModelProvider, ModelProviders } from '../llm/model-provider.js';
import { NO_TRACING, type Tracing } from './tracing.js';

/** Counts read from the database at scrape time (the truth across instances). */
export interface MetricsSource {
  /** Workflow / chatflow runs by status. */
  runsByStatus(): Promise<Record<string, number>>;
  /** Background jobs by status (`queued` is the queue depth, `failed` the jobs that failed for good). */
  jobsByStatus(): Promise<Record<string, number>>;
  /** Code sandbox worker threads started, by language. */
  codeSandboxWorkers(): Record<string, number>;
}

/** Provider names (per provider) whose instrumented wrapper is kept. */
const MAX_WRAPPED_NAMES = 256;

/**
 * The process's Prometheus metrics (`prom-client`, a registry of its own per runtime): HTTP
 * requests and latency by route and status, open SSE streams, runs by status and paused runs,
 * queue depth and failed jobs, model call latency and tokens by provider, indexed segments.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({ name: 'dovetail_http_requests_total', help: 'HTTP requests by method, route and status.', labelNames: ['method', 'route', 'status'], registers: [this.registry] });
  readonly httpDuration = new Histogram({
    name: 'dovetail_http_request_duration_seconds',
    help: 'HTTP request latency (to the end of the response; streams included) by method and route.',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly httpRequestsHeld = new Counter({
    name: 'dovetail_http_requests_held_total',
    help: 'Requests that waited for a later slice of event-loop time before they started (HTTP_ADMISSION_SLICE_MS).',
    registers: [this.registry],
  });
  readonly activeStreams = new Gauge({ name: 'dovetail_sse_active_streams', help: 'Server-sent event streams open now.', registers: [this.registry] });
  /** The open streams' unsent bytes, each read when scraped (src/http/sse.ts adds and removes them). */
  readonly sseBuffers = new Set<{ bytes(): number }>();
  readonly sseSlowClientsDropped = new Counter({
    name: 'dovetail_sse_slow_clients_dropped_total',
    help: 'Generation streams ended because their client left more than SSE_MAX_BUFFERED_BYTES unread.',
    registers: [this.registry],
  });
  readonly modelDuration = new Histogram({
    name: 'dovetail_model_call_duration_seconds',
    help: 'Model call latency (to the last chunk) by provider.',
    labelNames: ['provider'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly modelTokens = new Counter({ name: 'dovetail_model_tokens_total', help: 'Tokens the providers reported, by provider and kind (prompt | completion).', labelNames: ['provider', 'kind'], registers: [this.registry] });
  readonly modelErrors = new Counter({ name: 'dovetail_model_call_errors_total', help: 'Model calls that failed, by provider.', labelNames: ['provider'], registers: [this.registry] });
  /**
   * Seconds from an execution's last sign of life (a run's last write, a message's last heartbeat)
   * to the moment another execution took the run over or the sweep ended the message: what
   * `RUN_LEASE_SECONDS` and `MESSAGE_LEASE_SECONDS` bound (see docs/deployment.md, "Takeover").
   */
  readonly takeoverDelay = new Histogram({
    name: 'dovetail_takeover_delay_seconds',
    help: "Seconds from a dead execution's last sign of life to its takeover, by what (run | message).",
    labelNames: ['what'],
    buckets: [0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 120],
    registers: [this.registry],
  });
  readonly indexedSegments = new Counter({ name: 'dovetail_indexed_segments_total', help: 'Knowledge segments (or child chunks) indexed and committed.', registers: [this.registry] });

  constructor(source: MetricsSource) {
    collectDefaultMetrics({ register: this.registry, prefix: 'dovetail_' });
    // Each gauge reads the database when scraped (registration order is exposition order).
    const byStatus = (name: string, help: string, read: () => Promise<Record<string, number>>) =>
      new Gauge({
        name,
        help,
        labelNames: ['status'],
        registers: [this.registry],
        async collect() {
          const by = await read();
          this.reset();
          for (const [status, n] of Object.entries(by)) this.set({ status }, n);
        },
      });
    const one = (name: string, help: string, read: () => Promise<number>) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        async collect() {
          this.set(await read());
        },
      });
    byStatus('dovetail_runs', 'Workflow and chatflow runs by status (from the database).', () => source.runsByStatus());
    one('dovetail_runs_paused', 'Runs paused at a Human Input form (from the database).', async () => (await source.runsByStatus()).paused ?? 0);
    byStatus('dovetail_jobs', 'Background jobs by status (from the job queue).', () => source.jobsByStatus());
    one('dovetail_queue_depth', 'Background jobs waiting to run (from the job queue).', async () => (await source.jobsByStatus()).queued ?? 0);
    new Gauge({
      name: 'dovetail_code_sandbox_workers',
      help: 'Code sandbox worker threads started, by language (python3 starts once an app with python3 code is read).',
      labelNames: ['language'],
      registers: [this.registry],
      collect() {
        for (const [language, n] of Object.entries(source.codeSandboxWorkers())) this.set({ language }, n);
      },
    });
    const buffers = this.sseBuffers;
    new Gauge({
      name: 'dovetail_sse_buffered_bytes',
      help: 'Bytes written to server-sent event streams and not yet taken by their clients, all streams.',
      registers: [this.registry],
      collect() {
        let sum = 0;
        for (const b of buffers) sum += b.bytes();
        this.set(sum);
      },
    });
    new Gauge({
      name: 'dovetail_sse_buffered_bytes_max',
      help: 'The largest number of unsent bytes of one server-sent event stream (bounded by SSE_MAX_BUFFERED_BYTES plus one frame).',
      registers: [this.registry],
      collect() {
        let max = 0;
        for (const b of buffers) max = Math.max(max, b.bytes());
        this.set(max);
      },
    });
    one('dovetail_job_failures', 'Background jobs that failed for good (from the job queue).', async () => (await source.jobsByStatus()).failed ?? 0);
  }

  /** The providers with every `stream` call timed, its tokens counted, and (tracing on) a `model.call` span. */
  instrumentProviders(providers: ModelProviders, tracing: Tracing = NO_TRACING): ModelProviders {
    // One wrapper per provider and name (the name is the metrics' label), made on first use.
    const made = new WeakMap<ModelProvider, Map<string, ModelProvider>>();
    return {
      get: (name: string) => {
        const p = providers.get(name);
        let byName = made.get(p);
        if (!byName) made.set(p, (byName = new Map()));
        let wrapped = byName.get(name);
        if (!wrapped) {
          if (byName.size >= MAX_WRAPPED_NAMES) byName.clear(); // names come from imported apps
          byName.set(name, (wrapped = this.#instrument(name, p, tracing)));
        }
        return wrapped;
      },
    };
  }

  #instrument(name: string, p: ModelProvider, tracing: Tracing): ModelProvider {
    // A wrapping iterator, not an async generator: a generator layer costs a resumption and its
    // promises per chunk on every streamed token; this costs one `then`.
    const stream = (req: GenerateRequest): AsyncIterable<GenerateChunk> => ({
      [Symbol.asyncIterator]: () => this.#timedChunks(name, p.stream(req)[Symbol.asyncIterator](), req, tracing),
    });
    return new Proxy(p, {
      get(target, prop) {
        if (prop === 'stream') return stream;
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  /**
   * `chunks` of one model call, timed from the first read to the last (or to the consumer's
   * `return`), with the usage chunks' tokens counted and (tracing on) a `model.call` span; a
   * failure is counted once.
   */
  #timedChunks(name: string, chunks: AsyncIterator<GenerateChunk>, req: GenerateRequest, tracing: Tracing): AsyncIterator<GenerateChunk> {
    let end: (() => void) | undefined;
    let span: ReturnType<Tracing['start']> | undefined;
    let over = false;
    const finish = (err?: unknown) => {
      if (over) return;
      over = true;
      if (err !== undefined) {
        this.modelErrors.inc({ provider: name });
        span?.fail(err instanceof Error ? err.message : String(err));
      }
      end?.();
      span?.end();
    };
    const seen = (r: IteratorResult<GenerateChunk>): IteratorResult<GenerateChunk> => {
      if (r.done) finish();
      else if (r.value.type === 'usage') {
        const u = r.value.usage;
        if (u.promptTokens) this.modelTokens.inc({ provider: name, kind: 'prompt' }, u.promptTokens);
        if (u.completionTokens) this.modelTokens.inc({ provider: name, kind: 'completion' }, u.completionTokens);
        span?.setAttributes({ 'gen_ai.usage.input_tokens': u.promptTokens ?? 0, 'gen_ai.usage.output_tokens': u.completionTokens ?? 0 });
      }
      return r;
    };
    const failed = (err: unknown): never => {
      finish(err);
      throw err;
    };
    return {
      next: () => {
        if (!end && !over) {
          end = this.modelDuration.startTimer({ provider: name });
          span = tracing.start('model.call', { 'gen_ai.system': name, 'gen_ai.request.model': req.model });
        }
        return chunks.next().then(seen, failed);
      },
      return: (value?: unknown) => {
        finish();
        return chunks.return ? chunks.return(value) : Promise.resolve({ done: true, value: value as GenerateChunk });
      },
    };
  }
}
