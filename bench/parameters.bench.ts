import Fastify from 'fastify';
import { readFileSync } from 'node:fs';
import { benchServer, fmt, load } from './lib.js';

/** Authenticated GET /v1/parameters vs a bare Fastify route returning the same JSON. */
export async function run(): Promise<void> {
  const s = await benchServer();
  const app = await s.runtime.apps.importDsl(readFileSync(new URL('../examples/completion-writer.yml', import.meta.url), 'utf8'));
  const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
  const headers = { authorization: `Bearer ${apiKey}` };
  const body = await (await fetch(`${s.url}/v1/parameters`, { headers })).text();

  const bare = Fastify();
  bare.get('/v1/parameters', async (_req, reply) => reply.type('application/json').send(body));
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const addr = bare.server.address();
  const bareUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/v1/parameters`;

  await load(bareUrl, {}, 1);
  await load(`${s.url}/v1/parameters`, headers, 1);
  const base = await load(bareUrl, {}, 5);
  const ours = await load(`${s.url}/v1/parameters`, headers, 5);
  process.stdout.write(
    [
      `GET /v1/parameters (authenticated)  ${fmt(ours.rps, 0)} req/s  p99 ${ours.p99} ms`,
      `bare Fastify route (same JSON)      ${fmt(base.rps, 0)} req/s  p99 ${base.p99} ms`,
      `ratio: ${fmt((100 * ours.rps) / base.rps, 1)}% of the bare route (target ≥ 50%)`,
    ].join('\n') + '\n',
  );
  await bare.close();
  await s.close();
}
