import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';

export interface ConsoleSessionRow {
  readonly accountId: string;
  readonly csrfToken: string;
  readonly expiresAt: number;
}

/** The `console_sessions` table: console log-ins by the SHA-256 of their cookie token. */
export class ConsoleSessionStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async insert(tokenHash: string, accountId: string, csrfToken: string, createdAt: number, expiresAt: number): Promise<void> {
    await this.#db.insertInto('console_sessions').values({ token_hash: tokenHash, account_id: accountId, csrf_token: csrfToken, created_at: createdAt, expires_at: expiresAt }).execute();
  }

  async find(tokenHash: string): Promise<ConsoleSessionRow | undefined> {
    const r = await this.#db.selectFrom('console_sessions').select(['account_id', 'csrf_token', 'expires_at']).where('token_hash', '=', tokenHash).executeTakeFirst();
    return r && { accountId: r.account_id, csrfToken: r.csrf_token, expiresAt: Number(r.expires_at) };
  }

  async delete(tokenHash: string): Promise<void> {
    await this.#db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
  }

  /** Ends every session of an account (its password changed). */
  async deleteOfAccount(accountId: string): Promise<void> {
    await this.#db.deleteFrom('console_sessions').where('account_id', '=', accountId).execute();
  }

  /** Removes sessions expired before `now` (at most `limit`, oldest first); the number removed. */
  async deleteExpired(now: number, limit: number): Promise<number> {
    const old = await this.#db.selectFrom('console_sessions').select('token_hash').where('expires_at', '<=', now).orderBy('expires_at').limit(limit).execute();
    if (old.length === 0) return 0;
    await this.#db.deleteFrom('console_sessions').where('token_hash', 'in', old.map((r) => r.token_hash)).execute();
    return old.length;
  }
}
