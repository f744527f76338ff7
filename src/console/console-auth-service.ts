import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { AccountStore, type ConsoleAccount, type Role } from '../accounts/account-store.js';
import { decoyHash, verifyPassword } from '../accounts/password.js';
import type { Clock } from '../infra/clock.js';
import type { RateLimiter } from '../infra/rate-limit.js';
import type { Database } from '../store/schema.js';
import type { AppService } from '../apps/app-service.js';
import { ConsoleSessionStore } from './console-session-store.js';
import type { ConsoleSettings } from './console-settings.js';
import { consoleLoginRateLimited, emailOrPasswordMismatch } from './errors.js';

/** The signed-in person, as every console route sees it. */
export interface ConsoleMember {
  readonly id: string;
  readonly name: string;
  readonly email: string | null;
  readonly role: Role;
  readonly workspaceId: string;
}

export interface ConsoleSession {
  readonly account: ConsoleMember;
  readonly csrfToken: string;
  readonly expiresAt: number;
}

/** At most this many expired sessions are removed by one log-in (the table stays bounded without a sweeper). */
const SWEEP_PER_LOGIN = 100;

function sha256(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function member(a: ConsoleAccount): ConsoleMember {
  return { id: a.id, name: a.name, email: a.email, role: a.role, workspaceId: a.workspaceId };
}

/**
 * Console log-in: email and password against the account's scrypt hash, sessions kept in the
 * database (the cookie carries a random token; the table its SHA-256), each with its CSRF token,
 * lasting `CONSOLE_SESSION_HOURS` from the log-in. Attempts are limited per account (email) and
 * per client address, counted before the password is checked, so a guesser learns nothing more
 * once limited; an unknown email and a wrong password answer alike and take alike long.
 */
export class ConsoleAuthService {
  readonly #accounts: AccountStore;
  readonly #sessions: ConsoleSessionStore;
  readonly #apps: Pick<AppService, 'workspace'>;
  readonly #clock: Clock;
  readonly #limiter: RateLimiter;
  readonly #settings: ConsoleSettings;

  constructor(deps: { db: Kysely<Database>; apps: Pick<AppService, 'workspace'>; clock: Clock; rateLimiter: RateLimiter; settings: ConsoleSettings }) {
    this.#accounts = new AccountStore(deps.db);
    this.#sessions = new ConsoleSessionStore(deps.db);
    this.#apps = deps.apps;
    this.#clock = deps.clock;
    this.#limiter = deps.rateLimiter;
    this.#settings = deps.settings;
  }

  /** Checks the email and password; a new session and its cookie token, or `email_or_password_mismatch`. */
  async login(input: { email: string; password: string; address: string }): Promise<ConsoleSession & { token: string }> {
    const { loginMaxAttemptsPerAccount: perAccount, loginMaxAttemptsPerAddress: perAddress, loginWindowSeconds: window } = this.#settings;
    const email = input.email.trim().toLowerCase();
    if (!(await this.#limiter.hit(`console-login-address:${input.address}`, perAddress, window * 1000))) throw consoleLoginRateLimited('address', perAddress, window);
    if (!(await this.#limiter.hit(`console-login-account:${sha256(email)}`, perAccount, window * 1000))) throw consoleLoginRateLimited('account', perAccount, window);
    const account = email === '' || input.password.length > this.#settings.passwordMaxLength ? undefined : await this.#accounts.memberByEmail(email);
    const ok = await verifyPassword(input.password.slice(0, this.#settings.passwordMaxLength), account?.passwordHash ?? (await decoyHash()));
    if (!account?.passwordHash || !ok || account.workspaceId === '') throw emailOrPasswordMismatch();
    const now = this.#clock.now();
    await this.#sessions.deleteExpired(now, SWEEP_PER_LOGIN);
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(24).toString('base64url');
    const expiresAt = now + Math.round(this.#settings.sessionHours * 3_600_000);
    await this.#sessions.insert(sha256(token), account.id, csrfToken, now, expiresAt);
    return { token, account: member(account), csrfToken, expiresAt };
  }

  /** The session of a cookie token; undefined when unknown, expired, or its account is gone or lost its password. */
  async session(token: string): Promise<ConsoleSession | undefined> {
    if (token === '' || token.length > 200) return undefined;
    const hash = sha256(token);
    const s = await this.#sessions.find(hash);
    if (!s) return undefined;
    if (s.expiresAt <= this.#clock.now()) {
      await this.#sessions.delete(hash);
      return undefined;
    }
    const account = await this.#accounts.memberById(s.accountId);
    if (!account?.passwordHash || account.workspaceId === '') return undefined;
    return { account: member(account), csrfToken: s.csrfToken, expiresAt: s.expiresAt };
  }

  async logout(token: string): Promise<void> {
    await this.#sessions.delete(sha256(token));
  }

  /** Ends every console session of an account (after its password is set anew). */
  async endSessionsOf(accountId: string): Promise<void> {
    await this.#sessions.deleteOfAccount(accountId);
  }

  /** The workspace's id and name (for `GET /console/api/session`). */
  async workspace(id: string): Promise<{ id: string; name: string }> {
    return (await this.#apps.workspace(id)) ?? { id, name: '' };
  }
}

/** Whether the header's CSRF token is the session's (constant time). */
export function csrfMatches(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
