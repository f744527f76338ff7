import type { TestServer } from './server.js';

/** A web-app client of one site (its code): passports, and requests with one passport. */
export interface WebClient {
  readonly code: string;
  readonly token: string;
  /** Headers Dify's web app sends: the site's code and the passport. */
  headers(json?: boolean): Record<string, string>;
  get(path: string): Promise<Response>;
  send(method: string, path: string, body?: unknown): Promise<Response>;
}

/** The site code of an app. */
export async function siteCode(s: TestServer, appId: string): Promise<string> {
  return (await s.runtime.sites.ofApp(appId))!.code;
}

/** `GET /api/passport` for a site (optionally as an embedding site's `user_id`), as Dify's web app asks. */
export async function passport(s: TestServer, code: string, userId?: string): Promise<string> {
  const r = await fetch(`${s.url}/api/passport${userId ? `?user_id=${encodeURIComponent(userId)}` : ''}`, { headers: { 'x-app-code': code } });
  if (r.status !== 200) throw new Error(`passport: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { access_token: string }).access_token;
}

/** A new end user of the site `code` (a fresh passport), or one with `token`. */
export async function webClient(s: TestServer, code: string, token?: string): Promise<WebClient> {
  const t = token ?? (await passport(s, code));
  const headers = (json = false) => ({ 'x-app-code': code, authorization: `Bearer ${t}`, ...(json ? { 'content-type': 'application/json' } : {}) });
  return {
    code,
    token: t,
    headers,
    get: (path) => fetch(`${s.url}/api${path}`, { headers: headers() }),
    send: (method, path, body) => fetch(`${s.url}/api${path}`, { method, headers: headers(body !== undefined), ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
  };
}
