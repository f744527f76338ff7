import type { FastifyBaseLogger } from 'fastify';

type Bindings = Record<string, unknown>;
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];

/**
 * A request's logger that becomes the pino child (`{ reqId }`) when first used. Fastify makes the
 * child for every request before routing; under a burst of arrivals that is work ahead of each
 * request's model request, and most requests never log through it (the access line is written
 * with the server's logger and the request's id, `server.ts`).
 */
class LazyChildLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    readonly parent: FastifyBaseLogger,
    readonly bindings: Bindings,
    readonly options: ChildOptions,
  ) {}

  get #log(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.#log.level;
  }

  set level(level: string) {
    this.#log.level = level;
  }

  fatal(...args: unknown[]): void {
    (this.#log.fatal as (...a: unknown[]) => void)(...args);
  }

  error(...args: unknown[]): void {
    (this.#log.error as (...a: unknown[]) => void)(...args);
  }

  warn(...args: unknown[]): void {
    (this.#log.warn as (...a: unknown[]) => void)(...args);
  }

  info(...args: unknown[]): void {
    (this.#log.info as (...a: unknown[]) => void)(...args);
  }

  debug(...args: unknown[]): void {
    (this.#log.debug as (...a: unknown[]) => void)(...args);
  }

  trace(...args: unknown[]): void {
    (this.#log.trace as (...a: unknown[]) => void)(...args);
  }

  silent(...args: unknown[]): void {
    (this.#log.silent as (...a: unknown[]) => void)(...args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#log.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the request's logger, made on first use. */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}
