import { hkdfSync, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Clock } from './clock.js';

/**
 * Keys every instance of a deployment shares. With `SECRET_KEY` each key is derived from it
 * (HKDF-SHA256, info = the key's name; the file-URL key is `SECRET_KEY` itself, as before); without
 * it, each is 32 random bytes made on first use and kept in `server_secrets`, the first insert
 * winning when instances start together.
 */
export class ServerKeys {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #secretKey: string | undefined;
  readonly #keys = new Map<string, Promise<Buffer>>();

  constructor(deps: { db: Kysely<Database>; clock: Clock; secretKey: string | undefined }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#secretKey = deps.secretKey;
  }

  /** The key called `name` (loaded once; a failed load is retried on the next call). */
  key(name: string): Promise<Buffer> {
    let p = this.#keys.get(name);
    if (!p) {
      p = this.#load(name);
      this.#keys.set(name, p);
      p.catch(() => this.#keys.delete(name));
    }
    return p;
  }

  async #load(name: string): Promise<Buffer> {
    if (this.#secretKey) {
      if (name === FILE_URL_KEY) return Buffer.from(this.#secretKey);
      return Buffer.from(hkdfSync('sha256', this.#secretKey, '', `dovetail:${name}`, 32));
    }
    const read = () => this.#db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
    let row = await read();
    if (!row) {
      await this.#db
        .insertInto('server_secrets')
        .values({ name, value: randomBytes(32).toString('base64'), created_at: this.#clock.now() })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      row = await read();
    }
    if (!row) throw new Error(`the server key ${name} could not be stored`);
    return Buffer.from(row.value, 'base64');
  }
}

/** The name of the key that signs file URLs. */
export const FILE_URL_KEY = 'file_url_key';
