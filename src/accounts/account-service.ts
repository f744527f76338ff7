import type { Kysely } from 'kysely';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import { forbidden, invalidParam, notFound } from '../infra/errors.js';
import type { Database } from '../store/schema.js';
import { AccountStore, isRole, ROLES, type Account, type ConsoleAccount, type Role } from './account-store.js';
import { hashPassword } from './password.js';

export type { Account, ConsoleAccount, Role };
export { ROLES, isRole };

const EMAIL = /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/;

/** Password lengths (`CONSOLE_PASSWORD_MIN_LENGTH`, `CONSOLE_PASSWORD_MAX_LENGTH`). */
export interface PasswordRules {
  readonly minLength: number;
  readonly maxLength: number;
}

export const DEFAULT_PASSWORD_RULES: PasswordRules = { minLength: 8, maxLength: 1024 };

/** What `account create` takes beyond the name. */
export interface MemberInput {
  name: string;
  email?: string;
  /** Unset: a new account is a viewer, an existing one keeps its role. */
  role?: string;
  /** Unset: no password (a new account cannot log in to the console yet), an existing one keeps its own. */
  password?: string;
  /** The workspace a new account joins (an existing one stays in its own). */
  workspaceId: string;
}

/**
 * Workspace members (`dovetail account create --name --email --role --password-stdin`): the
 * identities admin feedback is left as, the `member` recipients of Human Input email deliveries
 * ("whole workspace" = all), and the people who log in to the console.
 */
export class AccountService {
  readonly #store: AccountStore;
  readonly #clock: Clock;
  readonly #rules: PasswordRules;

  constructor(db: Kysely<Database>, clock: Clock, rules: PasswordRules = DEFAULT_PASSWORD_RULES) {
    this.#store = new AccountStore(db);
    this.#clock = clock;
    this.#rules = rules;
  }

  /** Creates the account, or sets the email address of an existing one with that name. */
  async create(input: { name: string; email?: string }): Promise<Account> {
    const { name, email } = this.#checkNameEmail(input);
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

  /** Creates a console member, or sets the email, role and password given of an existing one with that name. */
  async createMember(input: MemberInput): Promise<ConsoleAccount> {
    const { name, email } = this.#checkNameEmail(input);
    if (input.role !== undefined && !isRole(input.role)) throw invalidParam(`role must be one of ${ROLES.join(', ')}, got "${input.role}"`);
    const passwordHash = input.password === undefined ? undefined : await hashPassword(this.#checkPassword(input.password));
    await this.#checkEmailFree(name, email);
    const existing = await this.#store.memberByName(name);
    const role = input.role ?? (existing ? undefined : 'viewer');
    try {
      await this.#store.upsertMember({ id: newId(), name, email, role: role as Role | undefined, passwordHash, workspaceId: input.workspaceId }, this.#clock.now());
    } catch (err) {
      await this.#checkEmailFree(name, email);
      throw err;
    }
    const account = await this.#store.memberByName(name);
    if (!account) throw new Error(`account "${name}" vanished after it was written`);
    return account;
  }

  /** Sets the console password of the account named `name` (`account set-password`). */
  async setPassword(name: string, password: string, defaultWorkspaceId: string): Promise<ConsoleAccount> {
    const hash = await hashPassword(this.#checkPassword(password));
    if (!(await this.#store.setPassword(name.trim(), hash, defaultWorkspaceId))) throw notFound(`account "${name.trim()}" not found`);
    return (await this.#store.memberByName(name.trim()))!;
  }

  /** The members of a workspace, by name. */
  members(workspaceId: string): Promise<ConsoleAccount[]> {
    return this.#store.membersOf(workspaceId);
  }

  /**
   * Changes a member's role, as Dify's workspace members page: an admin or the owner changes the
   * roles of others in the same workspace (never their own); only the owner gives or takes the
   * admin and owner roles. A member of another workspace is not found.
   */
  async changeRole(actor: Pick<ConsoleAccount, 'id' | 'role' | 'workspaceId'>, memberId: string, role: string): Promise<ConsoleAccount> {
    if (actor.role !== 'owner' && actor.role !== 'admin') throw forbidden(`This needs the admin role or higher; your role is ${actor.role}.`);
    if (!isRole(role)) throw invalidParam(`role must be one of: ${ROLES.map((r) => `"${r}"`).join(', ')}`);
    const member = await this.#store.memberById(memberId);
    if (!member || member.workspaceId !== actor.workspaceId) throw notFound('Member not found.');
    if (member.id === actor.id) throw forbidden('You cannot change your own role.');
    const high = (r: Role) => r === 'admin' || r === 'owner';
    if (actor.role !== 'owner' && (high(member.role) || high(role))) throw forbidden('Only the owner gives or takes the admin and owner roles.');
    await this.#store.setRole(member.id, role);
    return { ...member, role };
  }

  #checkNameEmail(input: { name: string; email?: string }): { name: string; email: string | null } {
    const name = input.name.trim();
    if (name === '' || name.length > 255) throw invalidParam('name must be 1 to 255 characters');
    const email = input.email?.trim() || null;
    if (email !== null && (email.length > 254 || !EMAIL.test(email))) throw invalidParam(`email must be an email address, got "${email}"`);
    return { name, email };
  }

  #checkPassword(password: string): string {
    const { minLength, maxLength } = this.#rules;
    if (password.length < minLength) throw invalidParam(`password must be at least ${minLength} characters (CONSOLE_PASSWORD_MIN_LENGTH)`);
    if (password.length > maxLength) throw invalidParam(`password must be at most ${maxLength} characters (CONSOLE_PASSWORD_MAX_LENGTH)`);
    return password;
  }

  /** One address, one account (compared without case: it is one mailbox, and recipients are deduplicated so). */
  async #checkEmailFree(name: string, email: string | null): Promise<void> {
    if (email === null) return;
    const owner = await this.#store.emailOwner(email, name);
    if (owner !== undefined) throw invalidParam(`email "${email}" is already used by the account "${owner}"`);
  }
}
