import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';

/** A workspace member. */
export interface Account {
  readonly id: string;
  readonly name: string;
  readonly email: string | null;
}

/** The `accounts` table: workspace members by id, name and email address. */
export class AccountStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Creates the account or, when the name exists, sets its email (a null email changes nothing). */
  async upsert(a: Account, at: number): Promise<void> {
    await this.#db
      .insertInto('accounts')
      .values({ id: a.id, name: a.name, email: a.email, created_at: at })
      .onConflict((oc) => (a.email === null ? oc.column('name').doNothing() : oc.column('name').doUpdateSet({ email: a.email })))
      .execute();
  }

  byName(name: string): Promise<Account | undefined> {
    return this.#db.selectFrom('accounts').select(['id', 'name', 'email']).where('name', '=', name).executeTakeFirst();
  }

  /** The name of another account (not `exceptName`) using the address, compared without case. */
  async emailOwner(email: string, exceptName: string): Promise<string | undefined> {
    const r = await this.#db.selectFrom('accounts').select('name').where(sql<string>`lower(email)`, '=', email.toLowerCase()).where('name', '!=', exceptName).executeTakeFirst();
    return r?.name;
  }

  /** The id of the account with this name, created (with `id`, no email) on first use. */
  async idOf(name: string, id: string, at: number): Promise<string> {
    await this.upsert({ id, name, email: null }, at);
    return (await this.#db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id;
  }

  /** Accounts with an email address, oldest first. */
  async withEmail(limit: number): Promise<Account[]> {
    return this.#db.selectFrom('accounts').select(['id', 'name', 'email']).where('email', 'is not', null).orderBy('created_at').limit(limit).execute();
  }

  /** Accounts whose id or name is one of `refs`. */
  async byIdsOrNames(refs: readonly string[]): Promise<Account[]> {
    if (refs.length === 0) return [];
    return this.#db.selectFrom('accounts').select(['id', 'name', 'email']).where((eb) => eb.or([eb('id', 'in', [...refs]), eb('name', 'in', [...refs])])).execute();
  }
}
