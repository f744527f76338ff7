import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startServer, type TestServer } from '../helpers/server.js';
import { completionApp } from '../helpers/apps.js';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { ConsoleClient, createMember, DEFAULT_PASSWORD, loginHttp, memberClient, postLogin } from '../helpers/console.js';

/**
 * The console's JSON API (`/console/api`, issue #44) over real HTTP on the test's database (SQLite,
 * or PostgreSQL with TEST_DATABASE_URL): log-in and its cookie, the same refusal for a wrong
 * password and an unknown email, CSRF, session expiry by the server's clock, the log-in limits per
 * account and per address, roles, and workspaces kept apart.
 */
const exec = promisify(execFile);

let s: TestServer;
let clock: ManualClock;
let appId: string;

beforeAll(async () => {
  clock = new ManualClock();
  s = await startServer({
    clock,
    env: {
      CONSOLE_SESSION_HOURS: '0.5',
      TRUST_PROXY: 'true',
    },
  });
  appId = (await s.importApp(completionApp())).appId;
  await createMember(s, { name: 'Olive', email: 'olive@example.test', role: 'owner' });
  await createMember(s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
  await createMember(s, { name: 'Otto', email: 'otto@example.test', role: 'owner', workspace: 'Other team' });
}, 120_000);
afterAll(async () => {
  await s?.close();
});

/** Log-in attempts are counted per address: each test that logs in comes from an address of its own (TRUST_PROXY=true). */
let addressNo = 0;
const fromNewAddress = () => ({ 'x-forwarded-for': `203.0.113.${++addressNo}` });

async function login(email: string, password = DEFAULT_PASSWORD): Promise<ConsoleClient> {
  const r = await postLogin(s.url, email, password, fromNewAddress());
  const body = (await r.json()) as { csrf_token: string };
  expect(r.status).toBe(200);
  return new ConsoleClient(s.url, r.headers.get('set-cookie')!.split(';')[0]!, body.csrf_token);
}

describe('console log-in', { timeout: 60_000 }, () => {
  it('logs in with email and password: an HttpOnly, SameSite=Lax session cookie, and the session with its CSRF token', async () => {
    const r = await postLogin(s.url, 'OLIVE@example.test', DEFAULT_PASSWORD, fromNewAddress());
    expect(r.status).toBe(200);
    const body = (await r.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ result: 'success', account: { name: 'Olive', email: 'olive@example.test', role: 'owner' }, workspace: { name: 'Default workspace' } });
    const cookie = r.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^dovetail_console_session=[A-Za-z0-9_-]{43}; Max-Age=1800; Path=\/console; HttpOnly; SameSite=Lax$/);
    expect(r.headers.get('cache-control')).toBe('no-store');

    const c = new ConsoleClient(s.url, cookie.split(';')[0]!, body.csrf_token as string);
    const session = await c.get('/session');
    expect(session.status).toBe(200);
    expect(session.body).toEqual({ account: { id: expect.any(String), name: 'Olive', email: 'olive@example.test', role: 'owner' }, csrf_token: body.csrf_token, expires_at: expect.any(Number), workspace: { id: expect.any(String), name: 'Default workspace' } });
    // the token is kept hashed: the cookie's value is nowhere in the table
    const rows = await s.runtime.store.db.selectFrom('console_sessions').selectAll().execute();
    expect(rows.some((row) => row.token_hash === c.cookie.split('=')[1])).toBe(false);
    expect(rows.every((row) => /^[0-9a-f]{64}$/.test(row.token_hash))).toBe(true);
  });

  it('marks the cookie Secure when the request came over HTTPS (through a trusted proxy)', async () => {
    const r = await postLogin(s.url, 'olive@example.test', DEFAULT_PASSWORD, { ...fromNewAddress(), 'x-forwarded-proto': 'https' });
    expect(r.status).toBe(200);
    expect(r.headers.get('set-cookie')).toMatch(/; HttpOnly; SameSite=Lax; Secure$/);
  });

  it('answers a wrong password and an unknown email alike, and a body without a field names it', async () => {
    const wrong = await postLogin(s.url, 'olive@example.test', 'not the password', fromNewAddress());
    const unknown = await postLogin(s.url, 'nobody@example.test', DEFAULT_PASSWORD, fromNewAddress());
    expect(wrong.status).toBe(400);
    expect(unknown.status).toBe(400);
    const [a, b] = [await wrong.json(), await unknown.json()];
    expect(a).toEqual({ code: 'email_or_password_mismatch', message: 'The email or password is mismatched.', status: 400 });
    expect(b).toEqual(a);
    expect(wrong.headers.get('set-cookie')).toBeNull();

    const noPassword = await fetch(`${s.url}/console/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', ...fromNewAddress() }, body: JSON.stringify({ email: 'olive@example.test' }) });
    expect(noPassword.status).toBe(400);
    expect(((await noPassword.json()) as { message: string }).message).toMatch(/password/);
    // a form post (what another site could make a browser send) is not JSON: refused before anything
    const form = await fetch(`${s.url}/console/api/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...fromNewAddress() }, body: 'email=olive%40example.test&password=x' });
    expect(form.status).toBe(415);
  });

  it('an account without a password cannot log in', async () => {
    await s.runtime.accounts.create({ name: 'Feedback only', email: 'fb@example.test' });
    const r = await postLogin(s.url, 'fb@example.test', '', fromNewAddress());
    expect(r.status).toBe(400);
    const r2 = await postLogin(s.url, 'fb@example.test', 'anything at all', fromNewAddress());
    expect(((await r2.json()) as { code: string }).code).toBe('email_or_password_mismatch');
  });
});

describe('console sessions and CSRF', { timeout: 60_000 }, () => {
  it('refuses the API without a session (401), and a state-changing request without the matching X-CSRF-Token (403)', async () => {
    const none = await fetch(`${s.url}/console/api/session`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { code: string }).code).toBe('unauthorized');
    const forged = await fetch(`${s.url}/console/api/session`, { headers: { cookie: 'dovetail_console_session=forged' } });
    expect(forged.status).toBe(401);

    const c = await login('olive@example.test');
    const without = await c.post('/logout', {}, { csrf: false });
    expect(without.status).toBe(403);
    expect(without.body).toEqual({ code: 'csrf_token_invalid', message: expect.stringContaining('X-CSRF-Token'), status: 403 });
    const wrong = await c.request('POST', '/logout', {}, { csrf: false, headers: { 'x-csrf-token': c.csrfToken.replace(/^./, (ch) => (ch === 'A' ? 'B' : 'A')) } });
    expect(wrong.status).toBe(403);
    // the session survived both refusals
    expect((await c.get('/session')).status).toBe(200);

    const out = await c.post('/logout');
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^dovetail_console_session=; Max-Age=0; Path=\/console/);
    expect((await c.get('/session')).status).toBe(401);
  });

  it('a session ends CONSOLE_SESSION_HOURS after the log-in (the server clock moved, no waiting)', async () => {
    const c = await login('olive@example.test');
    clock.advance(29 * 60_000);
    expect((await c.get('/session')).status).toBe(200);
    clock.advance(2 * 60_000);
    const expired = await c.get<{ code: string }>('/session');
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('unauthorized');
    // and it is gone from the table
    expect((await c.get('/session')).status).toBe(401);
  });
});

describe('console CORS', { timeout: 60_000 }, () => {
  it('the console API is same-origin only: a cross-origin preflight or request gets no allow header; the Service API keeps origin *', async () => {
    const preflight = (url: string) =>
      fetch(url, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'content-type,x-csrf-token' } });
    for (const path of ['/console/api/apps', `/console/api/apps/${appId}`, '/console/api/login', '/console/api']) {
      const r = await preflight(`${s.url}${path}`);
      expect(r.headers.get('access-control-allow-origin'), path).toBeNull();
      expect(r.headers.get('access-control-allow-methods'), path).toBeNull();
      expect(r.headers.get('access-control-allow-credentials'), path).toBeNull();
      expect(r.status, path).toBeGreaterThanOrEqual(400); // not granted: a 404 or 405, never a 2xx preflight
    }
    const client = await login('olive@example.test');
    const get = await client.request('GET', '/apps', undefined, { headers: { origin: 'https://elsewhere.example' } });
    expect(get.status).toBe(200);
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
    // the Service API, for contrast: any origin, as Dify's
    const api = await preflight(`${s.api}/parameters`);
    expect(api.headers.get('access-control-allow-origin')).toBe('*');
    expect(api.status).toBe(204);
  });
});

describe('console log-in limits', { timeout: 120_000 }, () => {
  let limited: TestServer;
  let limitedClock: ManualClock;
  beforeAll(async () => {
    limitedClock = new ManualClock();
    limited = await startServer({
      clock: limitedClock,
      env: { CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS: '3', CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS_PER_ADDRESS: '8', CONSOLE_LOGIN_RATE_LIMIT_WINDOW_SECONDS: '600', TRUST_PROXY: 'true' },
    });
    await createMember(limited, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
  }, 120_000);
  afterAll(async () => {
    await limited?.close();
  });

  it('limits attempts per account (the right password too, once over) and per address, naming the setting', async () => {
    const here = fromNewAddress();
    for (let i = 0; i < 3; i++) expect((await postLogin(limited.url, 'vera@example.test', 'wrong password', here)).status).toBe(400);
    const refused = await postLogin(limited.url, 'vera@example.test', DEFAULT_PASSWORD, fromNewAddress());
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('600');
    const body = (await refused.json()) as { code: string; message: string };
    expect(body.code).toBe('console_login_rate_limit_exceeded');
    expect(body.message).toContain('at most 3 per 600 seconds (CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS');

    // the same address, other accounts: 8 attempts from it, then the address limit
    for (let i = 0; i < 5; i++) expect((await postLogin(limited.url, `someone${i}@example.test`, 'x', here)).status).toBe(400);
    const byAddress = await postLogin(limited.url, 'other@example.test', DEFAULT_PASSWORD, here);
    expect(byAddress.status).toBe(429);
    expect(((await byAddress.json()) as { message: string }).message).toContain('at most 8 per 600 seconds (CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS_PER_ADDRESS');

    // the window passes (the server's clock): Vera logs in again
    limitedClock.advance(601_000);
    const again = await postLogin(limited.url, 'vera@example.test', DEFAULT_PASSWORD, here);
    expect(again.status).toBe(200);
  });
});

describe('console roles and workspaces', { timeout: 60_000 }, () => {
  it('a viewer reads the apps but is refused what needs the admin role', async () => {
    const viewer = await login('vera@example.test');
    const apps = await viewer.get<{ data: { id: string }[]; total: number }>('/apps');
    expect(apps.status).toBe(200);
    expect(apps.body.data.map((a) => a.id)).toEqual([appId]);
    const members = await viewer.get('/members');
    expect(members.status).toBe(403);
    expect(members.body).toEqual({ code: 'forbidden', message: 'This needs the admin role or higher; your role is viewer.', status: 403 });

    const owner = await login('olive@example.test');
    const list = await owner.get<{ data: { name: string; role: string }[] }>('/members');
    expect(list.status).toBe(200);
    expect(list.body.data.map((m) => [m.name, m.role])).toEqual(expect.arrayContaining([['Olive', 'owner'], ['Vera', 'viewer']]));
    expect(list.body.data.map((m) => m.name)).not.toContain('Otto');
  });

  it("another workspace's member sees none of this workspace's apps (404, as if they did not exist)", async () => {
    const other = await login('otto@example.test');
    const session = await other.get<{ workspace: { name: string } }>('/session');
    expect(session.body.workspace.name).toBe('Other team');
    const apps = await other.get<{ data: unknown[]; total: number }>('/apps');
    expect(apps.body).toEqual({ data: [], has_more: false, limit: 30, page: 1, total: 0 });
    const one = await other.get<{ code: string }>(`/apps/${appId}`);
    expect(one.status).toBe(404);
    expect(one.body.code).toBe('not_found');
    const own = await (await login('olive@example.test')).get<{ id: string }>(`/apps/${appId}`);
    expect(own.status).toBe(200);
    expect(own.body.id).toBe(appId);
  });
});

describe('dovetail account create --password-stdin and set-password', { timeout: 120_000 }, () => {
  async function cli(input: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env: Record<string, string> = { ...(process.env as Record<string, string>), DOVETAIL_DATA_DIR: s.dataDir, LOG_LEVEL: 'silent', DATABASE_URL: '', REDIS_URL: '' };
    if (s.config.databaseUrl) Object.assign(env, { DATABASE_URL: s.config.databaseUrl, DATABASE_SCHEMA: s.config.databaseSchema ?? '' });
    delete env.DOVETAIL_CONFIG;
    const child = exec(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'dovetail.js'), ...args], { env, cwd: s.dataDir, timeout: 90_000 });
    child.child.stdin!.end(input);
    try {
      const r = await child;
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it('creates an admin with a password read from stdin, who logs in; set-password changes it and ends the old sessions', async () => {
    const made = await cli('first password\n', 'account', 'create', '--name', 'Ada', '--email', 'ada@example.test', '--role', 'admin', '--password-stdin', '--json');
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toEqual({ id: expect.any(String), name: 'Ada', email: 'ada@example.test', role: 'admin', workspace_id: await s.runtime.apps.workspaceId(), has_password: true });
    const c = await login('ada@example.test', 'first password');
    expect((await c.get('/members')).status).toBe(200);

    const short = await cli('short\n', 'account', 'set-password', 'Ada', '--password-stdin');
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('--password-stdin: password must be at least 8 characters (CONSOLE_PASSWORD_MIN_LENGTH)');
    const badRole = await cli('', 'account', 'create', '--name', 'Eve', '--role', 'superuser');
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain('--role must be one of viewer, editor, admin, owner, got "superuser"');

    const set = await cli('second password\n', 'account', 'set-password', 'Ada', '--password-stdin');
    expect(set.code).toBe(0);
    expect((await c.get('/session')).status).toBe(401);
    expect((await postLogin(s.url, 'ada@example.test', 'first password', fromNewAddress())).status).toBe(400);
    await login('ada@example.test', 'second password');
  });
});

// the helper's own log-in (no address header) works as the other console tests use it
describe('console test helpers', { timeout: 60_000 }, () => {
  it('memberClient creates a member and logs it in', async () => {
    const c = await memberClient(s, { name: 'Eddie', email: 'eddie@example.test', role: 'editor' });
    expect((await c.get<{ account: { role: string } }>('/session')).body.account.role).toBe('editor');
    expect(loginHttp).toBeTypeOf('function');
  });
});
