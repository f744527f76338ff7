import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { createLogger } from '../../src/infra/logger.js';
import { lazyChildLogger } from '../../src/http/request-logger.js';

describe("a request's lazy logger", () => {
  it('makes the pino child on first use, which writes with the bindings; until then no child exists', () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), done()) });
    const parent = createLogger('info', sink) as unknown as FastifyBaseLogger;
    let children = 0;
    const counting = new Proxy(parent, { get: (t, k) => (k === 'child' ? (...a: Parameters<FastifyBaseLogger['child']>) => (children++, t.child(...a)) : Reflect.get(t, k)) });
    const log = lazyChildLogger(counting, { reqId: 'r1' }, {});
    expect(children).toBe(0);
    expect(log.level).toBe('info');
    expect(children).toBe(1);
    log.info({ a: 1 }, 'hello');
    log.debug('not written at info');
    log.child({ sub: true }).warn('nested');
    expect(children).toBe(1);
    expect(lines.map(({ reqId, a, sub, msg }) => ({ reqId, a, sub, msg }))).toEqual([
      { reqId: 'r1', a: 1, sub: undefined, msg: 'hello' },
      { reqId: 'r1', a: undefined, sub: true, msg: 'nested' },
    ]);
  });
});
