import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Runtime } from '../runtime.js';
import { notReady, unauthorized } from '../infra/errors.js';

/** The runtime members the probes and the metrics endpoint use (server.ts hands them nothing else). */
export type ProbeDeps = Pick<Runtime, 'config' | 'metrics' | 'store' | 'workers'>;

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

/**
 * Whether `Authorization` carries `token` as a bearer token (the scheme case-insensitive, RFC
 * 6750). The tokens are compared as SHA-256 digests with `timingSafeEqual`: equal lengths whatever
 * was sent, and a time that tells nothing about how much of the token matched.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return timingSafeEqual(sha256(m?.[1] ?? ''), sha256(token)) && m !== null;
}

/** `GET /metrics`, `/health` and `/ready`: served by every role, the worker included. */
export function registerProbes(app: FastifyInstance, runtime: ProbeDeps): void {
  app.get('/metrics', { schema: { description: 'Prometheus metrics (text exposition format); `Authorization: Bearer METRICS_TOKEN` when that is set.' } }, async (request, reply) => {
    const token = runtime.config.metricsToken;
    if (token && !bearerMatches(request.headers.authorization, token)) throw unauthorized('A valid METRICS_TOKEN bearer token is required.');
    return reply.type(runtime.metrics.registry.contentType).send(await runtime.metrics.registry.metrics());
  });
  app.get('/health', { schema: { description: 'Liveness: the process answers.', response: { 200: Type.Object({ status: Type.Literal('ok') }) } } }, async () => ({ status: 'ok' as const }));
  app.get(
    '/ready',
    {
      schema: {
        description:
          'Readiness: the database answers and every migration is applied; 503 `not_ready` otherwise. A process without a job worker (the `api` role) also reports the workers it sees (`workers`) and, when none, a `warning` — or 503 with READY_REQUIRES_WORKER=true.',
        response: { 200: Type.Object({ status: Type.Literal('ready'), workers: Type.Optional(Type.Integer()), warning: Type.Optional(Type.String()) }) },
      },
    },
    async () => {
      const reason = await runtime.store.notReady();
      if (reason) throw notReady(reason);
      if (runtime.config.queue.worker) return { status: 'ready' as const };
      const { seen } = await runtime.workers.status();
      if (seen > 0) return { status: 'ready' as const, workers: seen };
      const missing = `no worker process is running (none sent a heartbeat in the last ${runtime.workers.windowSeconds} s): runs and background jobs stay queued until a worker (\`dovetail worker\`) runs`;
      if (runtime.config.workers.readyRequiresWorker) throw notReady(`${missing} (READY_REQUIRES_WORKER=true)`);
      return { status: 'ready' as const, workers: 0, warning: `${missing}; READY_REQUIRES_WORKER=true makes this a 503` };
    },
  );
}
