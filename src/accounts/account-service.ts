import type { Kysely } from 'kysely';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import { invalidParam } from '../infra/errors.js';
import type { Database } from '../store/schema.js';

export interface Account {
  readonly id: string;
  readonly name: string;
  readonly email: string | null;
}

const EMAIL = /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/;

/**
 * Workspace members (`dovetail account create --name --email`): the identities admin feedback is
 * left as, and the `member` recipients of Human Input email deliveries ("whole workspace" = all).
 */
export class AccountService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;

  constructor(db: Kysely<Database>, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  /** Creates the account, or sets the email address of an existing one with that name. */
  async create(input: { name: string; email?: string }): Promise<Account> {
    const name = input.name.trim();
    if (name === '' || name.length > 255) throw invalidParam('name must be 1 to 255 characters');
    const email = input.email?.trim() || null;
    if (email !== null && (email.length > 254 || !EMAIL.test(email))) throw invalidParam(`email must be an email address, got "${email}"`);
    await this.#db
      .insertInto('accounts')
      .values({ id: newId(), name, email, created_at: this.#clock.now() })
      .onConflict((oc) => (email === null ? oc.column('name').doNothing() : oc.column('name').doUpdateSet({ email })))
      .execute();
    return this.#db.selectFrom('accounts').select(['id', 'name', 'email']).where('name', '=', name).executeTakeFirstOrThrow();
  }
}
