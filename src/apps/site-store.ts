import type { Kysely } from 'kysely';
import type { Database, SiteTable } from '../store/schema.js';
import { parseSiteSettings, type SiteSettings } from './site-settings.js';

/** An app's web app as stored. */
export interface Site {
  readonly appId: string;
  readonly code: string;
  readonly enabled: boolean;
  readonly settings: SiteSettings;
  readonly createdAt: number;
  readonly updatedAt: number;
}

function toSite(row: SiteTable): Site {
  return { appId: row.app_id, code: row.code, enabled: Number(row.enabled) === 1, settings: parseSiteSettings(row.settings), createdAt: Number(row.created_at), updatedAt: Number(row.updated_at) };
}

/** What a change to a site sets (absent: unchanged). */
export interface SiteChange {
  readonly code?: string;
  readonly enabled?: boolean;
  readonly settings?: SiteSettings;
  readonly updatedAt: number;
}

/** The `sites` table: reads and writes only (SiteService decides). Takes a transaction where a write must commit with the app's. */
export class SiteStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Stores a site; false when the app already has one or the code is taken. */
  async insert(site: Site): Promise<boolean> {
    const res = await this.#db
      .insertInto('sites')
      .values({ app_id: site.appId, code: site.code, enabled: site.enabled ? 1 : 0, settings: JSON.stringify(site.settings), created_at: site.createdAt, updated_at: site.updatedAt })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async ofApp(appId: string): Promise<Site | undefined> {
    const row = await this.#db.selectFrom('sites').selectAll().where('app_id', '=', appId).executeTakeFirst();
    return row ? toSite(row) : undefined;
  }

  async byCode(code: string): Promise<Site | undefined> {
    const row = await this.#db.selectFrom('sites').selectAll().where('code', '=', code).executeTakeFirst();
    return row ? toSite(row) : undefined;
  }

  /** Applies `change`; false when the app has no site. Throws on a code another site has (the unique index). */
  async update(appId: string, change: SiteChange): Promise<boolean> {
    const set: Partial<SiteTable> = { updated_at: change.updatedAt };
    if (change.code !== undefined) set.code = change.code;
    if (change.enabled !== undefined) set.enabled = change.enabled ? 1 : 0;
    if (change.settings !== undefined) set.settings = JSON.stringify(change.settings);
    const res = await this.#db.updateTable('sites').set(set).where('app_id', '=', appId).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Deletes the app's site (in the transaction that deletes the app). */
  async deleteOf(appId: string): Promise<void> {
    await this.#db.deleteFrom('sites').where('app_id', '=', appId).execute();
  }
}
