import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../infra/clock.js';
import { unauthorized } from '../infra/errors.js';

/** The claims of a web-app passport (Dify's `PassportService` payload, with an expiry). */
export interface PassportClaims {
  readonly appId: string;
  readonly appCode: string;
  readonly endUserId: string;
}

/** The server key the passports are signed with (src/infra/server-keys.ts). */
export const PASSPORT_KEY = 'web_passport_key';

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

/**
 * Web-app passports: HS256 JWTs as Dify's (`iss` the app id, `sub` "Web API Passport", `app_id`,
 * `app_code`, `end_user_id`), signed with a server key: derived from `SECRET_KEY` when it is set,
 * else 32 random bytes kept in the database, so every instance of a deployment accepts the others'
 * passports. Unlike Dify's they carry `exp` (`WEB_APP_PASSPORT_EXPIRE_HOURS`).
 */
export class PassportService {
  readonly #key: () => Promise<Buffer>;
  readonly #clock: Clock;
  readonly #ttlSeconds: number;

  constructor(deps: { key: () => Promise<Buffer>; clock: Clock; ttlSeconds: number }) {
    this.#key = deps.key;
    this.#clock = deps.clock;
    this.#ttlSeconds = deps.ttlSeconds;
  }

  async issue(c: PassportClaims): Promise<string> {
    const now = Math.floor(this.#clock.now() / 1000);
    const payload = { iss: c.appId, sub: 'Web API Passport', app_id: c.appId, app_code: c.appCode, end_user_id: c.endUserId, iat: now, exp: now + this.#ttlSeconds };
    const body = `${HEADER}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return `${body}.${createHmac('sha256', await this.#key()).update(body).digest('base64url')}`;
  }

  /** The claims of a passport this server signed; a 401 with Dify's messages otherwise. */
  async verify(token: string): Promise<PassportClaims> {
    const parts = token.split('.');
    if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) throw unauthorized('Invalid token.');
    const [head, body, sig] = parts as [string, string, string];
    let header: unknown;
    let payload: unknown;
    try {
      header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8'));
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw unauthorized('Invalid token.');
    }
    if (!isObject(header) || header.alg !== 'HS256' || !isObject(payload)) throw unauthorized('Invalid token.');
    const expected = createHmac('sha256', await this.#key()).update(`${head}.${body}`).digest();
    const given = Buffer.from(sig, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw unauthorized('Invalid token signature.');
    if (typeof payload.exp === 'number' && payload.exp <= Math.floor(this.#clock.now() / 1000)) throw unauthorized('Token has expired.');
    const { app_id, app_code, end_user_id } = payload;
    if (typeof app_id !== 'string' || typeof app_code !== 'string' || typeof end_user_id !== 'string') throw unauthorized('Failed to decode token.');
    return { appId: app_id, appCode: app_code, endUserId: end_user_id };
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
