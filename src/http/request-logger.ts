import type { FastifyBaseLogger } from 'fastify';

type Bindings = Record<string, unknown>;
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type LogMethod = (...args: unknown[]) => void;

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

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

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#log.child(bindings, options);
  }

  // one method per level, each passing its arguments on to the child's
  static {
    for (const level of LEVELS) {
      Object.defineProperty(LazyChildLogger.prototype, level, {
        value(this: LazyChildLogger, ...args: unknown[]) {
          (this.#log[level] as LogMethod)(...args);
        },
      });
    }
  }
}

/** Fastify's `childLoggerFactory`: the request's logger, made on first use. */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}
