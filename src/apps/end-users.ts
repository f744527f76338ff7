import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';

/** The literal end-user id Dify uses where `user` is optional and absent. */
export const DEFAULT_USER = 'DEFAULT-USER';

export interface EndUser {
  readonly id: string;
  readonly appId: string;
  /** The caller's `user` string. */
  readonly sessionId: string;
}

/** Maps a caller's `user` string to an end-user row per app, created on first sight. */
export class EndUserService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #cache = new Map<string, EndUser>();

  constructor(db: Kysely<Database>, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  async getOrCreate(appId: string, user: string): Promise<EndUser> {
    const key = `${appId}\u0000${user}`;
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const find = () =>
      this.#db.selectFrom('end_users').select(['id']).where('app_id', '=', appId).where('session_id', '=', user).executeTakeFirst();
    let row = await find();
    if (!row) {
      await this.#db
        .insertInto('end_users')
        .values({ id: newId(), app_id: appId, session_id: user, created_at: this.#clock.now() })
        .onConflict((oc) => oc.columns(['app_id', 'session_id']).doNothing())
        .execute();
      row = await find();
    }
    const endUser = { id: row!.id, appId, sessionId: user };
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(key, endUser);
    return endUser;
  }

  /** Finds an existing end user without creating one. */
  async find(appId: string, user: string): Promise<EndUser | undefined> {
    const row = await this.#db
      .selectFrom('end_users')
      .select(['id'])
      .where('app_id', '=', appId)
      .where('session_id', '=', user)
      .executeTakeFirst();
    return row ? { id: row.id, appId, sessionId: user } : undefined;
  }

  /** An end user of this app only (Dify answers any end user of the tenant; an app key reaches only its app). */
  async ofApp(appId: string, id: string): Promise<(EndUser & { readonly createdAt: number }) | undefined> {
    const row = await this.#db
      .selectFrom('end_users')
      .select(['id', 'app_id', 'session_id', 'created_at'])
      .where('id', '=', id)
      .where('app_id', '=', appId)
      .executeTakeFirst();
    return row ? { id: row.id, appId: row.app_id, sessionId: row.session_id, createdAt: Number(row.created_at) } : undefined;
  }

  /** The `user` string of an end user ('' when there is none), read in `trx` when given. */
  async sessionIdOf(id: string, trx: Kysely<Database> = this.#db): Promise<string> {
    const row = await trx.selectFrom('end_users').select('session_id').where('id', '=', id).executeTakeFirst();
    return row?.session_id ?? '';
  }

  /** Deletes an app's end users (`app delete --purge`, in its transaction, last: the other rows name them). */
  static async purgeApp(db: Kysely<Database>, appId: string): Promise<void> {
    await db.deleteFrom('end_users').where('app_id', '=', appId).execute();
  }
}
