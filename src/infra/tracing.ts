import { SpanStatusCode, context, trace, type Span, type Tracer } from '@opentelemetry/api';

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/** One span: attributes, an error status, its end. */
export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
  fail(message: string): void;
  end(): void;
}

/**
 * Tracing port: spans per request, run, node and model call. Parents are passed explicitly (no
 * ambient context). `flush` exports what has ended; `close` flushes and stops.
 */
export interface Tracing {
  readonly enabled: boolean;
  /** `startTime`: when the span began (ms since the epoch), if before now. */
  start(name: string, attributes?: SpanAttributes, parent?: SpanHandle, startTime?: number): SpanHandle;
  flush(): Promise<void>;
  close(): Promise<void>;
}

const NOOP_SPAN: SpanHandle = { setAttributes: () => undefined, fail: () => undefined, end: () => undefined };

/** Tracing that records nothing (no `OTEL_EXPORTER_OTLP_ENDPOINT`). */
export const NO_TRACING: Tracing = {
  enabled: false,
  start: () => NOOP_SPAN,
  flush: async () => undefined,
  close: async () => undefined,
};

class OtelSpan implements SpanHandle {
  constructor(readonly span: Span) {}
  setAttributes(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }
  fail(message: string): void {
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
  end(): void {
    this.span.end();
  }
}

/**
 * OpenTelemetry tracing exported over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`, batched. The
 * provider is this runtime's own (not registered globally), so several runtimes do not mix. The SDK
 * is loaded here, only when tracing is configured.
 */
export async function otlpTracing(opts: { endpoint: string; serviceName: string }): Promise<Tracing> {
  const [{ BatchSpanProcessor, TracerProvider }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/+$/, '')}/v1/traces` }) })],
  });
  const tracer: Tracer = provider.getTracer('dovetail');
  return {
    enabled: true,
    start(name, attributes, parent, startTime) {
      const ctx = parent instanceof OtelSpan ? trace.setSpan(context.active(), parent.span) : context.active();
      return new OtelSpan(tracer.startSpan(name, { attributes: { ...attributes }, ...(startTime === undefined ? {} : { startTime }) }, ctx));
    },
    flush: () => provider.forceFlush(),
    close: () => provider.shutdown(),
  };
}
