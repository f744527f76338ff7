import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import type { Role } from '../../src/accounts/account-store.js';
import { startServer, type StartOptions, type TestServer } from './server.js';
import { CHROMIUM_ARGS, requireBrowser } from './browser.js';

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

/** A console server with its members and a Chromium, for the browser tests (`consoleBrowser`). */
export interface ConsoleBrowser {
  readonly s: TestServer;
  readonly browser: Browser;
  /** The first page, signed in as `loginAs` (when given), in a desktop-sized English context. */
  readonly page: Page;
  readonly context: BrowserContext;
  /** A new context (its own cookies) and page, signed in as `email` when given; closed by `close()`. */
  newPage(opts?: { email?: string; context?: BrowserContextOptions }): Promise<Page>;
  /** Closes every context, the browser and the server. */
  close(): Promise<void>;
}

/** The context the console's browser tests use unless told otherwise: 1280×860, English. */
export const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 860 }, locale: 'en-US' };

/**
 * The browser tests' common start: the real server (`server` options), `setup` on it (apps,
 * data), the `members` made, Chromium launched, and a page signed in as `loginAs` through the
 * log-in form. Call it in `beforeAll` and `close()` in `afterAll`.
 */
export async function consoleBrowser(opts: { server?: StartOptions; setup?: (s: TestServer) => Promise<void>; members?: readonly MemberSpec[]; loginAs?: string; context?: BrowserContextOptions } = {}): Promise<ConsoleBrowser> {
  const executablePath = requireBrowser();
  const s = await startConsoleServer(opts.server);
  const contexts: BrowserContext[] = [];
  let browser: Browser | undefined;
  try {
    await opts.setup?.(s);
    for (const m of opts.members ?? []) await createMember(s, m);
    const { chromium } = await import('playwright-core');
    const b = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    browser = b;
    const newPage = async (o: { email?: string; context?: BrowserContextOptions } = {}) => {
      const context = await b.newContext(o.context ?? opts.context ?? DESKTOP);
      contexts.push(context);
      const page = await context.newPage();
      if (o.email) await loginPage(page, s.url, o.email, opts.members?.find((m) => m.email === o.email)?.password);
      return page;
    };
    const page = await newPage({ email: opts.loginAs });
    return {
      s,
      browser: b,
      page,
      context: page.context(),
      newPage,
      close: async () => {
        for (const c of contexts) await c.close().catch(() => undefined);
        await b.close();
        await s.close();
      },
    };
  } catch (err) {
    await browser?.close();
    await s.close();
    throw err;
  }
}
