import type { Kysely } from 'kysely';
import type { Database, AppTable } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import type { SecretBox } from '../infra/secret-box.js';
import { parseDsl, type AppMode, type DslDocument } from './dsl.js';
import { DslError } from './errors.js';
import { inputVariables, type InputVariable } from './input-form.js';
import { mapDatasets } from './import-check.js';
import { mapWorkflowTools } from './workflow-tool-map.js';

/** An app as services see it: its row plus the parsed DSL. */
export interface App {
  readonly id: string;
  readonly workspaceId: string;
  readonly name: string;
  readonly mode: AppMode;
  readonly description: string;
  readonly icon: string;
  readonly dsl: DslDocument;
  readonly inputs: readonly InputVariable[];
  readonly enableApi: boolean;
  readonly status: string;
  readonly maxActiveRequests: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Graph version: 1 at import, one more per `update`. */
  readonly version: number;
}

/**
 * Checks a workflow graph's node semantics at import (the engine registers this); throws DslError
 * naming the node id and type it cannot run.
 */
export type GraphValidator = (doc: DslDocument) => void;

/** Applies `fn` to the value of every `value_type: secret` environment variable of a DSL document (a copy). */
async function mapSecrets(doc: DslDocument, fn: (value: string) => Promise<string>): Promise<DslDocument> {
  const env = doc.workflow?.environment_variables;
  if (!env || !env.some((v) => v.value_type === 'secret')) return doc;
  const mapped = await Promise.all(env.map(async (v) => (v.value_type === 'secret' && typeof v.value === 'string' ? { ...v, value: await fn(v.value) } : v)));
  return { ...doc, workflow: { ...doc.workflow!, environment_variables: mapped } };
}

function toApp(row: AppTable, dsl: DslDocument): App {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    mode: row.mode as AppMode,
    description: row.description,
    icon: row.icon,
    dsl,
    inputs: inputVariables(dsl),
    enableApi: row.enable_api === 1,
    status: row.status,
    maxActiveRequests: row.max_active_requests,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version,
  };
}

const VERSION_CACHE_MAX = 100;

/** Ids of an export replaced by ids of this server at import or update. */
export interface ImportMaps {
  /** Dataset id of the export → dataset of this server (`--dataset`). */
  readonly datasets?: ReadonlyMap<string, string>;
  /** Workflow tool provider id of the export → workflow app of this server (`--tool`). */
  readonly tools?: ReadonlyMap<string, string>;
}

/** The app row's descriptive columns, from its DSL. */
function describe(doc: DslDocument): Pick<AppTable, 'name' | 'mode' | 'description' | 'icon'> {
  return {
    name: doc.app.name,
    mode: doc.app.mode,
    description: typeof doc.app.description === 'string' ? doc.app.description : '',
    icon: typeof doc.app.icon === 'string' ? doc.app.icon : '',
  };
}

export class AppService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #validators: GraphValidator[] = [];
  readonly #cache = new Map<string, App>();
  readonly #box: SecretBox;
  /** Earlier versions runs still use, by `id@version` (up to VERSION_CACHE_MAX). */
  readonly #versions = new Map<string, App>();

  /** Secret environment variables are stored sealed by `box` and opened when an app is read. */
  constructor(db: Kysely<Database>, clock: Clock, box: SecretBox) {
    this.#db = db;
    this.#clock = clock;
    this.#box = box;
  }

  async #toApp(row: AppTable): Promise<App> {
    return toApp(row, await mapSecrets(JSON.parse(row.dsl) as DslDocument, (v) => this.#box.open(v)));
  }

  /** Adds a semantic check run on every imported workflow / chatflow graph. */
  addGraphValidator(v: GraphValidator): void {
    this.#validators.push(v);
  }

  /** The single workspace of this instance, created on first use. */
  async workspaceId(): Promise<string> {
    const row = await this.#db.selectFrom('workspaces').select('id').orderBy('created_at').limit(1).executeTakeFirst();
    if (row) return row.id;
    const id = newId();
    await this.#db.insertInto('workspaces').values({ id, name: 'Default workspace', created_at: this.#clock.now() }).execute();
    return id;
  }

  /**
   * Parses and validates a DSL document; throws DslError when it cannot be imported. `datasets`
   * maps dataset ids of the export to ids of this server (`app import --dataset`), `tools` workflow
   * tool provider ids to workflow apps of this server (`--tool`).
   */
  #parse(yamlText: string, opts: ImportMaps = {}): DslDocument {
    const doc = mapWorkflowTools(mapDatasets(parseDsl(yamlText), opts.datasets ?? new Map()), opts.tools ?? new Map());
    if (doc.workflow) for (const v of this.#validators) v(doc);
    if (doc.app.mode === 'workflow' || doc.app.mode === 'advanced-chat') {
      const nodes = doc.workflow!.graph.nodes;
      const start = nodes.filter((n) => n.data.type === 'start');
      if (start.length !== 1) throw new DslError(`workflow.graph must have exactly one start node, found ${start.length}`);
    }
    return doc;
  }

  /** Parses, validates and stores a DSL document; throws DslError when it cannot be imported. */
  async importDsl(yamlText: string, opts: ImportMaps = {}): Promise<App> {
    const doc = this.#parse(yamlText, opts);
    const now = this.#clock.now();
    const row: AppTable = {
      id: newId(),
      workspace_id: await this.workspaceId(),
      ...describe(doc),
      dsl: JSON.stringify(await mapSecrets(doc, (v) => this.#box.seal(v))),
      enable_api: 1,
      status: 'normal',
      max_active_requests: null,
      created_at: now,
      updated_at: now,
      version: 1,
    };
    await this.#db.transaction().execute(async (trx) => {
      await trx.insertInto('apps').values(row).execute();
      await trx.insertInto('app_versions').values({ app_id: row.id, version: 1, dsl: row.dsl, created_at: now }).execute();
    });
    return toApp(row, doc);
  }

  /**
   * Stores a new version of an app's graph from DSL, keeping its id and keys (the mode cannot
   * change: clients call the mode's endpoints). Runs keep the version they started with.
   * Returns undefined when there is no such app; throws DslError for a document it cannot import.
   */
  async update(id: string, yamlText: string, opts: ImportMaps = {}): Promise<App | undefined> {
    const doc = this.#parse(yamlText, opts);
    const sealed = JSON.stringify(await mapSecrets(doc, (v) => this.#box.seal(v)));
    const now = this.#clock.now();
    const updated = await this.#db.transaction().execute(async (trx) => {
      const cur = await trx.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirst();
      if (!cur) return undefined;
      if (doc.app.mode !== cur.mode) throw new DslError(`app.mode must stay "${cur.mode}" (the app's mode) in an update, got "${doc.app.mode}"; import it as a new app instead`);
      const next: AppTable = { ...cur, ...describe(doc), dsl: sealed, updated_at: now, version: cur.version + 1 };
      const res = await trx
        .updateTable('apps')
        .set({ name: next.name, description: next.description, icon: next.icon, dsl: next.dsl, updated_at: now, version: next.version })
        .where('id', '=', id)
        .where('version', '=', cur.version)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) throw new DslError(`app ${id} was updated by someone else at the same time; try again`);
      await trx.insertInto('app_versions').values({ app_id: id, version: next.version, dsl: next.dsl, created_at: now }).execute();
      return next;
    });
    if (!updated) return undefined;
    this.#cache.delete(id);
    return toApp(updated, doc);
  }

  /**
   * Deletes an app, its versions and its keys (in one transaction); its runs, messages and other
   * data stay unless `purgeData` lists the tables to clear (see app-data.ts). False when there is no such app.
   */
  async delete(id: string, purgeData?: (trx: Kysely<Database>, appId: string) => Promise<void>): Promise<boolean> {
    const deleted = await this.#db.transaction().execute(async (trx) => {
      const res = await trx.deleteFrom('apps').where('id', '=', id).executeTakeFirst();
      if (Number(res.numDeletedRows) !== 1) return false;
      await trx.deleteFrom('app_versions').where('app_id', '=', id).execute();
      await trx.deleteFrom('api_keys').where('app_id', '=', id).execute();
      if (purgeData) await purgeData(trx, id);
      return true;
    });
    this.#cache.delete(id);
    return deleted;
  }

  /**
   * The app, from a cache checked against the row's version (one small read), so an update made
   * by another process (the CLI, another instance) is seen at once.
   */
  async find(id: string): Promise<App | undefined> {
    const cached = this.#cache.get(id);
    if (cached) {
      const cur = await this.#db.selectFrom('apps').select('version').where('id', '=', id).executeTakeFirst();
      if (cur?.version === cached.version) return cached;
      this.#cache.delete(id);
      if (!cur) return undefined;
    }
    const row = await this.#db.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    const app = await this.#toApp(row);
    this.#cache.set(id, app);
    return app;
  }

  /** The app as it was at `version` (its graph then; the rest as now); undefined when either is gone. */
  async findVersion(id: string, version: number): Promise<App | undefined> {
    const app = await this.find(id);
    if (!app || app.version === version) return app;
    const key = `${id}@${version}`;
    const cached = this.#versions.get(key);
    if (cached) return cached;
    const v = await this.#db.selectFrom('app_versions').select('dsl').where('app_id', '=', id).where('version', '=', version).executeTakeFirst();
    if (!v) return undefined;
    const dsl = await mapSecrets(JSON.parse(v.dsl) as DslDocument, (x) => this.#box.open(x));
    const old: App = { ...app, dsl, inputs: inputVariables(dsl), version };
    this.#versions.set(key, old);
    if (this.#versions.size > VERSION_CACHE_MAX) this.#versions.delete(this.#versions.keys().next().value!);
    return old;
  }

  /** The DSL document of an app as stored (the current version). */
  async dslOf(id: string): Promise<DslDocument | undefined> {
    return (await this.find(id))?.dsl;
  }

  async list(): Promise<App[]> {
    const rows = await this.#db.selectFrom('apps').selectAll().orderBy('created_at').execute();
    return Promise.all(rows.map((r) => this.#toApp(r)));
  }

  async count(): Promise<number> {
    const r = await this.#db.selectFrom('apps').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }
}
