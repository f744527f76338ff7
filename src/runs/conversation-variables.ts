import type { Kysely, Transaction } from 'kysely';
import type { App } from '../apps/app-service.js';
import type { Clock } from '../infra/clock.js';
import { badRequest, invalidParam, notFound } from '../infra/errors.js';
import type { ConversationVariableTable, Database } from '../store/schema.js';

/** A conversation variable as the chatflow's DSL declares it. */
export interface DeclaredVariable {
  readonly id: string;
  readonly name: string;
  readonly valueType: string;
  readonly value: unknown;
  readonly description: string;
}

/** The app's declared conversation variables (`workflow.conversation_variables`). */
export function declaredVariables(app: App): DeclaredVariable[] {
  const out: DeclaredVariable[] = [];
  for (const v of app.dsl.workflow?.conversation_variables ?? []) {
    if (typeof v.name !== 'string') continue;
    out.push({
      id: typeof v.id === 'string' && v.id ? v.id : v.name,
      name: v.name,
      valueType: typeof v.value_type === 'string' ? v.value_type : 'string',
      value: v.value ?? null,
      description: typeof v.description === 'string' ? v.description : '',
    });
  }
  return out;
}

/** Whether `value` fits a Dify variable type; the type Dify names in its mismatch message otherwise. */
function typeOf(value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return 'object';
  return typeof value; // string | number | boolean
}

function fits(valueType: string, value: unknown): boolean {
  const t = typeOf(value);
  switch (valueType) {
    case 'string':
    case 'secret':
      return t === 'string';
    case 'number':
      return t === 'number';
    case 'boolean':
      return t === 'boolean';
    case 'object':
    case 'file':
      return t === 'object';
    default: {
      const m = /^array\[(\w+)\]$/.exec(valueType);
      if (!m) return true;
      if (!Array.isArray(value)) return false;
      const inner = m[1]!;
      return inner === 'any' || value.every((x) => fits(inner === 'file' ? 'object' : inner, x));
    }
  }
}

function item(r: ConversationVariableTable): Record<string, unknown> {
  const value = JSON.parse(r.value) as unknown;
  return {
    id: r.id,
    name: r.name,
    value_type: r.value_type,
    // Dify sends the value as a string; complex values as their JSON text.
    value: typeof value === 'string' ? value : JSON.stringify(value),
    description: r.description,
    created_at: Math.floor(Number(r.created_at) / 1000),
    updated_at: Math.floor(Number(r.updated_at) / 1000),
  };
}

/**
 * Chatflow conversation variables kept per conversation: a run starts from the conversation's
 * current values (the DSL defaults the first time) and its final values are stored when it ends,
 * so assigner nodes carry state from turn to turn, as Dify does.
 */
export class ConversationVariables {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;

  constructor(db: Kysely<Database>, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  /** The values a run of this conversation starts from, by name; stores the defaults on first use. */
  /** Deletes a conversation's variables (in `tx`, with the conversation). */
  async deleteByConversation(conversationId: string, tx: Transaction<Database>): Promise<void> {
    await tx.deleteFrom('conversation_variables').where('conversation_id', '=', conversationId).execute();
  }

  async load(app: App, conversationId: string): Promise<Record<string, unknown>> {
    const declared = declaredVariables(app);
    if (declared.length === 0) return {};
    const rows = await this.#db.selectFrom('conversation_variables').selectAll().where('conversation_id', '=', conversationId).execute();
    const stored = new Map(rows.map((r) => [r.id, r]));
    const values: Record<string, unknown> = {};
    const missing: DeclaredVariable[] = [];
    for (const d of declared) {
      const row = stored.get(d.id);
      if (row) values[d.name] = JSON.parse(row.value) as unknown;
      else {
        values[d.name] = d.value;
        missing.push(d);
      }
    }
    if (missing.length) {
      const now = this.#clock.now();
      await this.#db
        .insertInto('conversation_variables')
        .values(missing.map((d) => ({ id: d.id, conversation_id: conversationId, app_id: app.id, name: d.name, value_type: d.valueType, value: JSON.stringify(d.value), description: d.description, created_at: now, updated_at: now })))
        .onConflict((oc) => oc.columns(['conversation_id', 'id']).doNothing())
        .execute();
    }
    return values;
  }

  /** Stores a run's final values (only those that changed get a new `updated_at`). */
  async save(app: App, conversationId: string, values: Readonly<Record<string, unknown>>): Promise<void> {
    const declared = declaredVariables(app);
    if (declared.length === 0) return;
    const rows = await this.#db.selectFrom('conversation_variables').selectAll().where('conversation_id', '=', conversationId).execute();
    const stored = new Map(rows.map((r) => [r.id, r]));
    const now = this.#clock.now();
    for (const d of declared) {
      if (!(d.name in values)) continue;
      const json = JSON.stringify(values[d.name] ?? null);
      if (stored.get(d.id)?.value === json) continue;
      await this.#db
        .insertInto('conversation_variables')
        .values({ id: d.id, conversation_id: conversationId, app_id: app.id, name: d.name, value_type: d.valueType, value: json, description: d.description, created_at: now, updated_at: now })
        .onConflict((oc) => oc.columns(['conversation_id', 'id']).doUpdateSet({ value: json, updated_at: now }))
        .execute();
    }
  }

  /** `GET /conversations/{id}/variables`: by creation, then id; `last_id` is the cursor. */
  async list(conversationId: string, opts: { lastId?: string; limit: number; name?: string }): Promise<Record<string, unknown>> {
    let q = this.#db.selectFrom('conversation_variables').selectAll().where('conversation_id', '=', conversationId);
    if (opts.name) q = q.where('name', '=', opts.name);
    if (opts.lastId) {
      const last = await this.#db.selectFrom('conversation_variables').select(['created_at', 'id']).where('conversation_id', '=', conversationId).where('id', '=', opts.lastId).executeTakeFirst();
      if (!last) throw invalidParam(`last_id ${opts.lastId} is not a variable of this conversation`);
      q = q.where((eb) => eb.or([eb('created_at', '>', last.created_at), eb.and([eb('created_at', '=', last.created_at), eb('id', '>', last.id)])]));
    }
    const rows = await q.orderBy('created_at').orderBy('id').limit(opts.limit + 1).execute();
    return { limit: opts.limit, has_more: rows.length > opts.limit, data: rows.slice(0, opts.limit).map(item) };
  }

  /** `PUT /conversations/{id}/variables/{variable_id}`: a new value of the declared type. */
  async update(conversationId: string, variableId: string, value: unknown): Promise<Record<string, unknown>> {
    const row = await this.#db.selectFrom('conversation_variables').selectAll().where('conversation_id', '=', conversationId).where('id', '=', variableId).executeTakeFirst();
    if (!row) throw notFound('Conversation Variable Not Exists.');
    if (!fits(row.value_type, value)) throw badRequest(`Type mismatch: variable '${row.name}' expects ${row.value_type}, but got ${typeOf(value)} type`);
    const now = this.#clock.now();
    const json = JSON.stringify(value);
    await this.#db.updateTable('conversation_variables').set({ value: json, updated_at: now }).where('conversation_id', '=', conversationId).where('id', '=', variableId).execute();
    return item({ ...row, value: json, updated_at: now });
  }

  /** Deletes an app's conversation variables (`app delete --purge`, in its transaction). */
  static async purgeApp(db: Kysely<Database>, appId: string): Promise<void> {
    await db.deleteFrom('conversation_variables').where('app_id', '=', appId).execute();
  }
}
