import type { Kysely } from 'kysely';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import { invalidParam } from '../infra/errors.js';
import type { Database } from '../store/schema.js';
import { AccountStore, type Account } from './account-store.js';

export type { Account };

const EMAIL = /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/;

/**
 * Workspace members (`dovetail account create --name --email`): the identities admin feedback is
 * left as, and the `member` recipients of Human Input email deliveries ("whole workspace" = all).
 */
export class AccountService {
  readonly #store: AccountStore;
  readonly #clock: Clock;

  constructor(db: Kysely<Database>, clock: Clock) {
    this.#store = new AccountStore(db);
    this.#clock = clock;
  }

  /** Creates the account, or sets the email address of an existing one with that name. */
  async create(input: { name: string; email?: string }): Promise<Account> {
    const name = input.name.trim();
    if (name === '' || name.length > 255) throw invalidParam('name must be 1 to 255 characters');
    const email = input.email?.trim() || null;
    if (email !== null && (email.length > 254 || !EMAIL.test(email))) throw invalidParam(`email must be an email address, got "${email}"`);
    await this.#checkEmailFree(name, email);
    try {
      await this.#store.upsert({ id: newId(), name, email }, this.#clock.now());
    } catch (err) {
      // another account took the address meanwhile (the unique index on email): say so as above
      await this.#checkEmailFree(name, email);
      throw err;
    }
    const account = await this.#store.byName(name);
    if (!account) throw new Error(`account "${name}" vanished after it was written`);
    return account;
  }

  /** One address, one account (compared without case: it is one mailbox, and recipients are deduplicated so). */
  async #checkEmailFree(name: string, email: string | null): Promise<void> {
    if (email === null) return;
    const owner = await this.#store.emailOwner(email, name);
    if (owner !== undefined) throw invalidParam(`email "${email}" is already used by the account "${owner}"`);
  }
}
