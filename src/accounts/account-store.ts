import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';

/** A workspace member. */
export interface Account {
  readonly id: string;
  readonly name: string;
  readonly email: string | null;
}

/** Dify's workspace roles, least first: a viewer reads, an editor changes apps and knowledge, an admin manages keys and accounts, the owner everything. */
export const ROLES = ['viewer', 'editor', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(v: string): v is Role {
  return (ROLES as readonly string[]).includes(v);
}

/** A member as the console sees it: role, workspace and (the hash of) the password. */
export interface ConsoleAccount extends Account {
  readonly role: Role;
  readonly workspaceId: string;
  readonly passwordHash: string | null;
}

const CONSOLE_COLUMNS = ['id', 'name', 'email', 'role', 'workspace_id', 'password_hash'] as const;

function consoleAccount(r: { id: string; name: string; email: string | null; role: string; workspace_id: string; password_hash: string | null }): ConsoleAccount {
  return { id: r.id, name: r.name, email: r.email, role: isRole(r.role) ? r.role : 'viewer', workspaceId: r.workspace_id, passwordHash: r.password_hash };
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

  /**
   * Creates the account with its console fields or, when the name exists, sets those given
   * (email, role, password hash; the workspace only when it has none: an account created by
   * feedback before the console).
   */
  async upsertMember(a: Account & { role: Role | undefined; passwordHash: string | undefined; workspaceId: string }, at: number): Promise<void> {
    await this.#db
      .insertInto('accounts')
      .values({ id: a.id, name: a.name, email: a.email, created_at: at, role: a.role ?? 'editor', workspace_id: a.workspaceId, ...(a.passwordHash === undefined ? {} : { password_hash: a.passwordHash }) })
      .onConflict((oc) =>
        oc.column('name').doUpdateSet((eb) => ({
          ...(a.email === null ? {} : { email: a.email }),
          ...(a.role === undefined ? {} : { role: a.role }),
          ...(a.passwordHash === undefined ? {} : { password_hash: a.passwordHash }),
          workspace_id: eb.fn<string>('coalesce', [eb.fn('nullif', [eb.ref('accounts.workspace_id'), eb.val('')]), eb.val(a.workspaceId)]),
        })),
      )
      .execute();
  }

  /** Sets the password hash (and, when it has none, the workspace) of the account named `name`; false when there is none. */
  async setPassword(name: string, passwordHash: string, defaultWorkspaceId: string): Promise<boolean> {
    const r = await this.#db
      .updateTable('accounts')
      .set((eb) => ({ password_hash: passwordHash, workspace_id: eb.fn<string>('coalesce', [eb.fn('nullif', [eb.ref('workspace_id'), eb.val('')]), eb.val(defaultWorkspaceId)]) }))
      .where('name', '=', name)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  byName(name: string): Promise<Account | undefined> {
    return this.#db.selectFrom('accounts').select(['id', 'name', 'email']).where('name', '=', name).executeTakeFirst();
  }

  async memberByName(name: string): Promise<ConsoleAccount | undefined> {
    const r = await this.#db.selectFrom('accounts').select(CONSOLE_COLUMNS).where('name', '=', name).executeTakeFirst();
    return r && consoleAccount(r);
  }

  async memberById(id: string): Promise<ConsoleAccount | undefined> {
    const r = await this.#db.selectFrom('accounts').select(CONSOLE_COLUMNS).where('id', '=', id).executeTakeFirst();
    return r && consoleAccount(r);
  }

  /** Sets a member's role. */
  async setRole(id: string, role: Role): Promise<void> {
    await this.#db.updateTable('accounts').set({ role }).where('id', '=', id).execute();
  }

  /** The members of a workspace, by name. */
  async membersOf(workspaceId: string): Promise<ConsoleAccount[]> {
    const rows = await this.#db.selectFrom('accounts').select(CONSOLE_COLUMNS).where('workspace_id', '=', workspaceId).orderBy('name').execute();
    return rows.map(consoleAccount);
  }

  /** The account with this email address, compared without case. */
  async memberByEmail(email: string): Promise<ConsoleAccount | undefined> {
    const r = await this.#db.selectFrom('accounts').select(CONSOLE_COLUMNS).where(sql<string>`lower(email)`, '=', email.toLowerCase()).executeTakeFirst();
    return r && consoleAccount(r);
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
