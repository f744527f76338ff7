import type { Kysely } from 'kysely';
import type { Database, AppTable } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import type { SecretBox } from '../infra/secret-box.js';
import { parseDsl, type AppMode, type DslDocument } from './dsl.js';
import { DslError } from './errors.js';
import { inputVariables, type InputVariable } from './input-form.js';
import { mapDatasets } from './import-check.js';

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
  };
}

export class AppService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #validators: GraphValidator[] = [];
  readonly #cache = new Map<string, App>();
  readonly #box: SecretBox;

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
   * Parses, validates and stores a DSL document; throws DslError when it cannot be imported.
   * `datasets` maps dataset ids of the export to ids of this server (`app import --dataset`).
   */
  async importDsl(yamlText: string, opts: { readonly datasets?: ReadonlyMap<string, string> } = {}): Promise<App> {
    const doc = mapDatasets(parseDsl(yamlText), opts.datasets ?? new Map());
    if (doc.workflow) for (const v of this.#validators) v(doc);
    if (doc.app.mode === 'workflow' || doc.app.mode === 'advanced-chat') {
      const nodes = doc.workflow!.graph.nodes;
      const start = nodes.filter((n) => n.data.type === 'start');
      if (start.length !== 1) throw new DslError(`workflow.graph must have exactly one start node, found ${start.length}`);
    }
    const now = this.#clock.now();
    const row: AppTable = {
      id: newId(),
      workspace_id: await this.workspaceId(),
      name: doc.app.name,
      mode: doc.app.mode,
      description: typeof doc.app.description === 'string' ? doc.app.description : '',
      icon: typeof doc.app.icon === 'string' ? doc.app.icon : '',
      dsl: JSON.stringify(await mapSecrets(doc, (v) => this.#box.seal(v))),
      enable_api: 1,
      status: 'normal',
      max_active_requests: null,
      created_at: now,
      updated_at: now,
    };
    await this.#db.insertInto('apps').values(row).execute();
    return toApp(row, doc);
  }

  async find(id: string): Promise<App | undefined> {
    const cached = this.#cache.get(id);
    if (cached) return cached;
    const row = await this.#db.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    const app = await this.#toApp(row);
    this.#cache.set(id, app);
    return app;
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
