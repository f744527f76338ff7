import { readFileSync } from 'node:fs';
import { benchServer, fmt, load } from './lib.js';

/**
 * The console's per-request cost: `GET /console/api/apps` behind the session cookie (token hashed,
 * session and account read, workspace-scoped list) next to `GET /v1/parameters` behind an app key
 * on the same server (the Service API's own authenticated read), `GET /console/api/session` (the
 * session check alone); and one log-in (scrypt, N=2^14).
 */
export async function run(): Promise<void> {
  const s = await benchServer({ CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS: '100000', CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS_PER_ADDRESS: '100000' });
  const app = await s.runtime.apps.importDsl(readFileSync(new URL('../examples/completion-writer.yml', import.meta.url), 'utf8'));
  const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
  await s.runtime.accounts.createMember({ name: 'bench', email: 'bench@example.test', role: 'viewer', password: 'bench password', workspaceId: app.workspaceId });

  const logins: number[] = [];
  let cookie = '';
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now();
    const r = await fetch(`${s.url}/console/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.test', password: 'bench password' }) });
    logins.push(performance.now() - t0);
    cookie = r.headers.get('set-cookie')!.split(';')[0]!;
  }
  logins.sort((a, b) => a - b);

  const keyHeaders = { authorization: `Bearer ${apiKey}` };
  const consoleHeaders = { cookie };
  await load(`${s.url}/v1/parameters`, keyHeaders, 1);
  await load(`${s.url}/console/api/apps`, consoleHeaders, 1);
  const base = await load(`${s.url}/v1/parameters`, keyHeaders, 5);
  const ours = await load(`${s.url}/console/api/apps`, consoleHeaders, 5);
  const session = await load(`${s.url}/console/api/session`, consoleHeaders, 5);
  process.stdout.write(
    [
      `GET /console/api/apps (session cookie)   ${fmt(ours.rps, 0)} req/s  p99 ${ours.p99} ms`,
      `GET /console/api/session (cookie only)   ${fmt(session.rps, 0)} req/s  p99 ${session.p99} ms`,
      `GET /v1/parameters (app key, baseline)    ${fmt(base.rps, 0)} req/s  p99 ${base.p99} ms`,
      `ratio: ${fmt((100 * ours.rps) / base.rps, 1)}% of the Service API read`,
      `POST /console/api/login (scrypt)         median ${fmt(logins[5]!, 1)} ms over 10`,
    ].join('\n') + '\n',
  );
  await s.close();
}
