import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import { perTurn } from '../lib/per-turn.js';
import type { SecretBox } from '../infra/secret-box.js';
import { parseDsl, type AppMode, type DslDocument } from './dsl.js';
import { DslError } from './errors.js';
import { inputVariables, type InputVariable } from './input-form.js';
import { mapDatasets } from './dataset-map.js';
import { mapWorkflowTools } from './workflow-tool-map.js';
import type { AppRecord, AppStore } from './app-store.js';
import { newSite } from './site-service.js';

/** An app as services see it: as stored, with its secrets opened and its input form. */
export interface App extends AppRecord {
  readonly inputs: readonly InputVariable[];
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

/** `record` with `dsl` (its graph, secrets opened) and the input form read from it. */
function toApp(record: AppRecord, dsl: DslDocument): App {
  return { ...record, dsl, inputs: inputVariables(dsl) };
}

const VERSION_CACHE_MAX = 100;

/** Ids of an export replaced by ids of this server at import or update. */
export interface ImportMaps {
  /** Dataset id of the export → dataset of this server (`--dataset`). */
  readonly datasets?: ReadonlyMap<string, string>;
  /** Workflow tool provider id of the export → workflow app of this server (`--tool`). */
  readonly tools?: ReadonlyMap<string, string>;
}

/** An app's descriptive fields, from its DSL. */
function describe(doc: DslDocument): { name: string; mode: AppMode; description: string; icon: string } {
  return {
    name: doc.app.name,
    mode: doc.app.mode,
    description: typeof doc.app.description === 'string' ? doc.app.description : '',
    icon: typeof doc.app.icon === 'string' ? doc.app.icon : '',
  };
}

export class AppService {
  readonly #store: AppStore;
  readonly #clock: Clock;
  readonly #validators: GraphValidator[] = [];
  readonly #loadListeners: ((app: App) => void)[] = [];
  readonly #storedListeners: ((app: App) => Promise<void>)[] = [];
  /** Apps read, with the store's change stamp when they were read (see `find`). */
  readonly #cache = new Map<string, { app: App; stamp: number | undefined }>();
  readonly #changeStamp: (() => number) | undefined;
  readonly #box: SecretBox;
  /** Earlier versions runs still use, by `id@version` (up to VERSION_CACHE_MAX). */
  readonly #versions = new Map<string, App>();

  /**
   * Secret environment variables are stored sealed by `box` and opened when an app is read.
   * `changeStamp` (SQLite's, see `StoreCaps`) lets a cached app be used without reading its row
   * while no other process has committed anything.
   */
  constructor(store: AppStore, clock: Clock, box: SecretBox, opts: { changeStamp?: () => number } = {}) {
    this.#store = store;
    this.#clock = clock;
    this.#box = box;
    this.#changeStamp = opts.changeStamp;
  }

  async #toApp(record: AppRecord): Promise<App> {
    return this.#loaded(toApp(record, await mapSecrets(record.dsl, (v) => this.#box.open(v))));
  }

  #loaded(app: App): App {
    for (const listener of this.#loadListeners) listener(app);
    return app;
  }

  /** Adds a semantic check run on every imported workflow / chatflow graph. */
  addGraphValidator(v: GraphValidator): void {
    this.#validators.push(v);
  }

  /** Calls `listener` with every app this service reads from the store or imports (not with cache hits). */
  addLoadListener(listener: (app: App) => void): void {
    this.#loadListeners.push(listener);
  }

  /**
   * Awaits `listener` with every app this service has just stored (imported, or updated to a new
   * version) before `importDsl` / `update` return: the triggers' rows follow the graph this way.
   */
  addStoredListener(listener: (app: App) => Promise<void>): void {
    this.#storedListeners.push(listener);
  }

  async #stored(app: App): Promise<App> {
    for (const listener of this.#storedListeners) await listener(app);
    return app;
  }

  /** The single workspace of this instance, created on first use. */
  async workspaceId(): Promise<string> {
    const existing = await this.#store.firstWorkspaceId();
    if (existing) return existing;
    const id = newId();
    await this.#store.insertWorkspace(id, 'Default workspace', this.#clock.now());
    return id;
  }

  /** A workspace's id and name; undefined when there is none. */
  workspace(id: string): Promise<{ id: string; name: string } | undefined> {
    return this.#store.workspace({ id });
  }

  /**
   * The workspace named `name` (`account create --workspace`), created when `create` and none has
   * that name. Apps still import into the first workspace (`workspaceId`); another one holds the
   * apps the console imports there.
   */
  async workspaceNamed(name: string, create: boolean): Promise<{ id: string; name: string } | undefined> {
    const existing = await this.#store.workspace({ name });
    if (existing || !create) return existing;
    const id = newId();
    await this.#store.insertWorkspace(id, name, this.#clock.now());
    return { id, name };
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
      // a workflow may start from trigger nodes instead (Dify 1.10: webhook, schedule, plugin)
      const triggers = doc.app.mode === 'workflow' ? nodes.filter((n) => typeof n.data.type === 'string' && n.data.type.startsWith('trigger-')) : [];
      if (start.length > 1 || (start.length === 0 && triggers.length === 0)) {
        throw new DslError(
          doc.app.mode === 'workflow'
            ? `workflow.graph must have one start node or trigger nodes, found ${start.length} start nodes`
            : `workflow.graph must have exactly one start node, found ${start.length}`,
        );
      }
    }
    return doc;
  }

  /** Parses, validates and stores a DSL document; throws DslError when it cannot be imported. */
  async importDsl(yamlText: string, opts: ImportMaps & { workspaceId?: string } = {}): Promise<App> {
    const doc = this.#parse(yamlText, opts);
    const now = this.#clock.now();
    const record: AppRecord = {
      id: newId(),
      // the console imports into the signed-in member's workspace; the CLI and the API into the first
      workspaceId: opts.workspaceId ?? (await this.workspaceId()),
      ...describe(doc),
      dsl: await mapSecrets(doc, (v) => this.#box.seal(v)),
      enableApi: true,
      status: 'normal',
      maxActiveRequests: null,
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    await this.#store.insert(record, newSite({ id: record.id, mode: record.mode, dsl: doc, createdAt: now }, now));
    return this.#stored(this.#loaded(toApp(record, doc)));
  }

  /**
   * Stores a new version of an app's graph from DSL, keeping its id and keys (the mode cannot
   * change: clients call the mode's endpoints). Runs keep the version they started with.
   * Returns undefined when there is no such app; throws DslError for a document it cannot import.
   */
  async update(id: string, yamlText: string, opts: ImportMaps = {}): Promise<App | undefined> {
    const doc = this.#parse(yamlText, opts);
    const sealed = await mapSecrets(doc, (v) => this.#box.seal(v));
    const cur = await this.#store.find(id);
    if (!cur) return undefined;
    if (doc.app.mode !== cur.mode) throw new DslError(`app.mode must stay "${cur.mode}" (the app's mode) in an update, got "${doc.app.mode}"; import it as a new app instead`);
    const next: AppRecord = { ...cur, ...describe(doc), dsl: sealed, updatedAt: this.#clock.now(), version: cur.version + 1 };
    this.#cache.delete(id);
    if (!(await this.#store.addVersion(id, cur.version, next))) {
      // Deleted meanwhile: no such app; otherwise another writer stored a version first.
      if ((await this.#store.versionOf(id)) === undefined) return undefined;
      throw new DslError(`app ${id} was updated by someone else at the same time; try again`);
    }
    return this.#stored(this.#loaded(toApp(next, doc)));
  }

  /**
   * Deletes an app, its versions, its keys and its site (in one transaction); its runs, messages and other
   * data stay unless `purgeData` lists the tables to clear (see console/app-purge.ts). False when there is no such app.
   */
  async delete(id: string, purgeData?: (trx: Kysely<Database>, appId: string) => Promise<void>): Promise<boolean> {
    const deleted = await this.#store.delete(id, purgeData);
    this.#cache.delete(id);
    return deleted;
  }

  /**
   * The app's version in the store, read once per event-loop turn: the requests of a burst that
   * arrive in one turn share one read (on PostgreSQL a round trip each, on the way to the model), as
   * SQLite's change stamp is read once per turn. The read starts in that turn, so an update
   * committed before the turn began is seen by each of them.
   */
  readonly #currentVersion = perTurn((id: string) => this.#store.versionOf(id));

  /**
   * The app, from a cache checked against the row's version (one small read), so an update made
   * by another process (the CLI, another instance) is seen at once. With a change stamp the read
   * is skipped while no other connection has committed since the app was cached.
   */
  async find(id: string): Promise<App | undefined> {
    const stamp = this.#changeStamp?.();
    const cached = this.#cache.get(id);
    if (cached) {
      if (stamp !== undefined && stamp === cached.stamp) return cached.app;
      const version = await this.#currentVersion(id);
      if (version === cached.app.version) {
        cached.stamp = stamp;
        return cached.app;
      }
      this.#cache.delete(id);
      if (version === undefined) return undefined;
    }
    const record = await this.#store.find(id);
    if (!record) return undefined;
    const app = await this.#toApp(record);
    this.#cache.set(id, { app, stamp });
    return app;
  }

  /** The app as it was at `version` (its graph then; the rest as now); undefined when either is gone. */
  async findVersion(id: string, version: number): Promise<App | undefined> {
    const app = await this.find(id);
    if (!app || app.version === version) return app;
    const key = `${id}@${version}`;
    const cached = this.#versions.get(key);
    if (cached) return cached;
    const stored = await this.#store.findVersionDsl(id, version);
    if (!stored) return undefined;
    const dsl = await mapSecrets(stored, (x) => this.#box.open(x));
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
    return Promise.all((await this.#store.list()).map((r) => this.#toApp(r)));
  }

  /** The apps of one workspace, oldest first. */
  async listIn(workspaceId: string): Promise<App[]> {
    return Promise.all((await this.#store.list(workspaceId)).map((r) => this.#toApp(r)));
  }

  /** The app when it belongs to `workspaceId`; undefined otherwise (another workspace's app is as if it did not exist). */
  async findIn(workspaceId: string, id: string): Promise<App | undefined> {
    const app = await this.find(id);
    return app?.workspaceId === workspaceId ? app : undefined;
  }

  async count(): Promise<number> {
    return this.#store.count();
  }
}
