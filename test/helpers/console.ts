import type { Page } from 'playwright-core';
import type { Role } from '../../src/accounts/account-store.js';
import { startServer, type StartOptions, type TestServer } from './server.js';

/**
 * The console's test helpers: a server, accounts with a role (through the real AccountService, as
 * `dovetail account create` makes them), a log-in over HTTP (the session cookie and its CSRF
 * token) and a log-in of a Playwright page through the log-in form.
 */

export interface MemberSpec {
  readonly name: string;
  readonly email: string;
  readonly role: Role;
  readonly password?: string;
  /** A workspace by name, created when none has it (default: the first workspace, where apps import). */
  readonly workspace?: string;
}

export const DEFAULT_PASSWORD = 'correct horse battery staple';

/** Starts the real server (src/http/server.ts) on a free port; the console's pages need `npm run build:web` first. */
export function startConsoleServer(opts: StartOptions = {}): Promise<TestServer> {
  return startServer(opts);
}

/** Creates a console member through the service `account create` uses; its id and workspace id. */
export async function createMember(s: TestServer, m: MemberSpec): Promise<{ id: string; workspaceId: string }> {
  const ws = m.workspace === undefined ? await s.runtime.apps.workspaceId() : (await s.runtime.apps.workspaceNamed(m.workspace, true))!.id;
  const a = await s.runtime.accounts.createMember({ name: m.name, email: m.email, role: m.role, password: m.password ?? DEFAULT_PASSWORD, workspaceId: ws });
  return { id: a.id, workspaceId: a.workspaceId };
}

export interface ConsoleResponse<T = unknown> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

/** A signed-in client of `/console/api`: the session cookie on every request, the CSRF token on state-changing ones. */
export class ConsoleClient {
  constructor(
    readonly baseUrl: string,
    readonly cookie: string,
    readonly csrfToken: string,
  ) {}

  async request<T = Record<string, unknown>>(method: string, path: string, body?: unknown, opts: { csrf?: boolean; headers?: Record<string, string> } = {}): Promise<ConsoleResponse<T>> {
    const headers: Record<string, string> = { cookie: this.cookie, ...opts.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && opts.csrf !== false) headers['x-csrf-token'] = this.csrfToken;
    const r = await fetch(`${this.baseUrl}/console/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: (text === '' ? null : JSON.parse(text)) as T, headers: r.headers };
  }

  get<T = Record<string, unknown>>(path: string) {
    return this.request<T>('GET', path);
  }
  post<T = Record<string, unknown>>(path: string, body?: unknown, opts?: { csrf?: boolean }) {
    return this.request<T>('POST', path, body ?? {}, opts);
  }
  patch<T = Record<string, unknown>>(path: string, body?: unknown, opts?: { csrf?: boolean }) {
    return this.request<T>('PATCH', path, body ?? {}, opts);
  }
  delete<T = Record<string, unknown>>(path: string, opts?: { csrf?: boolean }) {
    return this.request<T>('DELETE', path, undefined, opts);
  }
}

/** `POST /console/api/login` as the page sends it; the raw answer. */
export async function postLogin(baseUrl: string, email: string, password: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${baseUrl}/console/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ email, password }) });
}

/** Logs in over HTTP; a client with the session cookie and CSRF token. Throws when the log-in is refused. */
export async function loginHttp(baseUrl: string, email: string, password: string = DEFAULT_PASSWORD): Promise<ConsoleClient> {
  const r = await postLogin(baseUrl, email, password);
  const body = (await r.json()) as { csrf_token?: string; message?: string };
  if (r.status !== 200) throw new Error(`log-in of ${email} refused: ${r.status} ${body.message}`);
  const setCookie = r.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0]!;
  return new ConsoleClient(baseUrl, cookie, body.csrf_token!);
}

/** Creates a member and logs it in over HTTP. */
export async function memberClient(s: TestServer, m: MemberSpec): Promise<ConsoleClient> {
  await createMember(s, m);
  return loginHttp(s.url, m.email, m.password ?? DEFAULT_PASSWORD);
}

/** Logs a Playwright page in through `/console/login` as a person does; resolves on the console's first page after it. */
export async function loginPage(page: Page, baseUrl: string, email: string, password: string = DEFAULT_PASSWORD): Promise<void> {
  await page.goto(`${baseUrl}/console/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((u) => !u.pathname.startsWith('/console/login'));
  await page.locator('main[data-ready="true"]').waitFor();
}
