/**
 * The console's client of `/console/api`: JSON in and out, the session cookie sent by the browser,
 * the session's CSRF token on every state-changing request, a 401 sends the person to the log-in
 * page (coming back afterwards), and an error answer is thrown as `ConsoleApiError`.
 */
export class ConsoleApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

let csrfToken: string | null = null;

/** Set from the session (`GET /console/api/session`) or the log-in's answer. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

const BASE = '/console/api';

/** The log-in page's URL, with the page to come back to. */
export function loginUrl(): string {
  const here = location.pathname + location.search;
  return here.startsWith('/console/login') ? '/console/login' : `/console/login?next=${encodeURIComponent(here)}`;
}

async function errorOf(r: Response): Promise<ConsoleApiError> {
  let code = 'unknown';
  let message = `${r.status} ${r.statusText}`;
  try {
    const body = (await r.json()) as { code?: unknown; message?: unknown };
    if (typeof body.code === 'string') code = body.code;
    if (typeof body.message === 'string') message = body.message;
  } catch {
    // not JSON: the status line says it
  }
  return new ConsoleApiError(code, message, r.status);
}

interface SendOptions {
  /** Do not go to the log-in page on 401 (the session probe and the log-in itself). */
  noRedirect?: boolean;
}

async function send<T>(method: string, path: string, body?: BodyInit | null, contentType?: string, opts: SendOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (contentType) headers['content-type'] = contentType;
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const r = await fetch(BASE + path, { method, headers, body: body ?? undefined, credentials: 'same-origin' });
  if (r.status === 401 && !opts.noRedirect) {
    location.assign(loginUrl());
    // the page is leaving; nothing after this should run
    return new Promise<T>(() => undefined);
  }
  if (!r.ok) throw await errorOf(r);
  const type = r.headers.get('content-type') ?? '';
  if (type.includes('application/json')) return (await r.json()) as T;
  return (await r.text()) as unknown as T;
}

const json = (b: unknown) => (b === undefined ? '{}' : JSON.stringify(b));

export const consoleApi = {
  get: <T>(path: string, opts?: SendOptions) => send<T>('GET', path, null, undefined, opts),
  post: <T>(path: string, body?: unknown, opts?: SendOptions) => send<T>('POST', path, json(body), 'application/json', opts),
  patch: <T>(path: string, body?: unknown) => send<T>('PATCH', path, json(body), 'application/json'),
  put: <T>(path: string, body?: unknown) => send<T>('PUT', path, json(body), 'application/json'),
  delete: <T>(path: string, body?: unknown) => send<T>('DELETE', path, body === undefined ? null : JSON.stringify(body), body === undefined ? undefined : 'application/json'),
  /** A multipart upload (the browser sets the boundary). */
  upload: <T>(path: string, form: FormData) => send<T>('POST', path, form),
};

/** A list answer of the console API. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  limit: number;
  page: number;
  total: number;
}

export type Role = 'viewer' | 'editor' | 'admin' | 'owner';
const RANK: Record<Role, number> = { viewer: 0, editor: 1, admin: 2, owner: 3 };
export function roleAtLeast(role: Role, min: Role): boolean {
  return RANK[role] >= RANK[min];
}

export interface Session {
  account: { id: string; name: string; email: string | null; role: Role };
  csrf_token: string;
  expires_at: number;
  workspace: { id: string; name: string };
}
