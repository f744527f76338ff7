import { sql, type Kysely, type Transaction } from 'kysely';
import { CompiledOnce } from '../store/compiled-once.js';
import { GroupCommit } from '../store/group-commit.js';
import type { Database, MessageTable } from '../store/schema.js';
import { inBatches } from '../store/statement-batches.js';
import { ConversationStore, conversationRow, type NewConversation } from './conversation-store.js';
import type { RetrieverResource } from '../engine/retriever-resources.js';
import { newId } from '../infra/ids.js';

/** A stored citation: Dify's `RetrievalSourceMetadata` with the id `GET /messages` lists it by. */
export type StoredRetrieverResource = RetrieverResource & { readonly id: string };

/** Answers written per UPDATE by `saveLive` (three parameters each: SQLite binds at most 32,766). */
const SAVES_PER_STATEMENT = 200;

export const MESSAGE_STATUSES = ['running', 'normal', 'error', 'stopped'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** A stored message with its JSON columns parsed. */
export interface Message {
  readonly id: string;
  readonly appId: string;
  readonly conversationId: string | null;
  readonly endUserId: string;
  readonly taskId: string;
  readonly workflowRunId: string | null;
  readonly mode: string;
  readonly inputs: Record<string, unknown>;
  readonly query: string;
  readonly answer: string;
  readonly files: unknown[];
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** The `metadata.usage` object; `{}` while running. */
  readonly usage: Record<string, unknown>;
  readonly totalPrice: string;
  readonly currency: string;
  /** Seconds. */
  readonly latency: number;
  readonly status: MessageStatus;
  readonly error: string | null;
  readonly fromSource: string;
  /** The annotation that answered the message, if any. */
  readonly annotationId: string | null;
  /** The answer's citations (`metadata.retriever_resources`), in order; `[]` when none. */
  readonly retrieverResources: readonly StoredRetrieverResource[];
  /** Epoch ms. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface NewMessage {
  readonly id: string;
  readonly appId: string;
  readonly conversationId: string | null;
  readonly endUserId: string;
  readonly taskId: string;
  readonly workflowRunId?: string | null;
  readonly mode: string;
  readonly inputs: Record<string, unknown>;
  readonly query: string;
  readonly files: readonly unknown[];
  readonly createdAt: number;
  /** The annotation that answers the message (annotation reply). */
  readonly annotationId?: string | null;
}

export type { NewConversation } from './conversation-store.js';

/** The outcome written when a generation ends. */
export interface MessageResult {
  readonly answer: string;
  readonly status: MessageStatus;
  readonly error: string | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly usage: Record<string, unknown>;
  readonly totalPrice: string;
  readonly currency: string;
  readonly latency: number;
  readonly updatedAt: number;
  /** The answer's citations (stored with an id each); none when absent. */
  readonly retrieverResources?: readonly RetrieverResource[];
}

function toMessage(r: MessageTable): Message {
  return {
    id: r.id,
    appId: r.app_id,
    conversationId: r.conversation_id,
    endUserId: r.end_user_id,
    taskId: r.task_id,
    workflowRunId: r.workflow_run_id,
    mode: r.mode,
    inputs: JSON.parse(r.inputs) as Record<string, unknown>,
    query: r.query,
    answer: r.answer,
    files: JSON.parse(r.files) as unknown[],
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    usage: JSON.parse(r.usage) as Record<string, unknown>,
    totalPrice: r.total_price,
    currency: r.currency,
    latency: Number(r.latency),
    status: r.status as MessageStatus,
    error: r.error,
    fromSource: r.from_source,
    annotationId: r.annotation_id ?? null,
    retrieverResources: JSON.parse(r.retriever_resources ?? '[]') as StoredRetrieverResource[],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * Messages of completion, chat and chatflow apps. A message is inserted `running` when generation
 * starts and finished with its answer, usage and status when it ends.
 */
export class MessageStore {
  readonly #db: Kysely<Database>;
  /** Inserts and finishes of concurrent generations share transactions (see `GroupCommit`). */
  readonly #group: GroupCommit<Database>;
  /** The SQL of the final update every generation makes, compiled once. */
  readonly #compiled = new CompiledOnce();

  readonly #conversations: ConversationStore;

  /** `conversations`: the store of the conversations new messages start (one is made when not given). */
  constructor(db: Kysely<Database>, conversations?: ConversationStore) {
    this.#db = db;
    this.#group = new GroupCommit(db);
    this.#conversations = conversations ?? new ConversationStore(db);
  }

  /**
   * Inserts a running message with its new conversation, when given, or with the `updated_at` of
   * the conversation it continues, in one transaction: `tx` when given, else the next group commit's.
   */
  async insert(m: NewMessage, conversation?: NewConversation, tx?: Transaction<Database>): Promise<void> {
    const row: MessageTable = {
      id: m.id,
      app_id: m.appId,
      conversation_id: m.conversationId,
      end_user_id: m.endUserId,
      task_id: m.taskId,
      workflow_run_id: m.workflowRunId ?? null,
      mode: m.mode,
      inputs: JSON.stringify(m.inputs),
      query: m.query,
      answer: '',
      files: JSON.stringify(m.files),
      prompt_tokens: 0,
      completion_tokens: 0,
      usage: '{}',
      total_price: '0',
      currency: 'USD',
      latency: 0,
      status: 'running',
      error: null,
      from_source: 'api',
      created_at: m.createdAt,
      updated_at: m.createdAt,
      annotation_id: m.annotationId ?? null,
      heartbeat_at: m.createdAt,
      retriever_resources: '[]',
    };
    const rows = conversation ? [{ table: 'conversations', row: conversationRow(conversation, m.createdAt) } as const, { table: 'messages', row } as const] : [{ table: 'messages', row } as const];
    // A new message makes the conversation it continues the most recently updated (as Dify).
    const continued = conversation ? null : m.conversationId;
    const touch = continued ? (t: Transaction<Database>) => this.#conversations.touch(continued, m.createdAt, t) : undefined;
    // in the group commit, the rows join the burst's multi-row INSERTs
    if (tx) await this.#group.insertIn(tx, rows, touch);
    else await this.#group.insert(rows, touch);
  }

  /** Writes the final answer, usage and status (in the next group commit). */
  async finish(id: string, r: MessageResult): Promise<void> {
    const set = {
      answer: r.answer,
      status: r.status,
      error: r.error,
      prompt_tokens: r.promptTokens,
      completion_tokens: r.completionTokens,
      usage: JSON.stringify(r.usage),
      total_price: r.totalPrice,
      currency: r.currency,
      latency: r.latency,
      updated_at: r.updatedAt,
      retriever_resources: JSON.stringify((r.retrieverResources ?? []).map((x) => ({ id: newId(), ...x }))),
    };
    await this.#group.run(async (tx) => {
      await this.#compiled.run(tx, 'finish message', () => tx.updateTable('messages').set(set).where('id', '=', id), [...Object.values(set), id]);
    });
  }

  async find(id: string): Promise<Message | undefined> {
    const row = await this.#db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toMessage(row) : undefined;
  }

  /** A message of this app from this end user, or `undefined`. */
  async findOwned(id: string, appId: string, endUserId: string): Promise<Message | undefined> {
    const row = await this.#db
      .selectFrom('messages')
      .selectAll()
      .where('id', '=', id)
      .where('app_id', '=', appId)
      .where('end_user_id', '=', endUserId)
      .where('from_source', '=', 'api')
      .executeTakeFirst();
    return row ? toMessage(row) : undefined;
  }

  /**
   * Whether a message of this app was sent with the upload `fileId` in its top-level `files`
   * (Dify's `message_files` rows). `fileId` must be a UUID: it is matched inside the stored JSON.
   */
  async referencesUpload(appId: string, fileId: string): Promise<boolean> {
    if (!/^[0-9a-f-]{36}$/i.test(fileId)) return false;
    const row = await this.#db
      .selectFrom('messages')
      .select('id')
      .where('app_id', '=', appId)
      .where('files', 'like', `%"upload_file_id":"${fileId}"%`)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Messages of a conversation, newest first (`created_at` desc, then `id` desc), strictly older
   * than `before` when given. Fetch `limit + 1` to learn whether more exist.
   */
  async listByConversation(conversationId: string, opts: { limit: number; before?: Pick<Message, 'createdAt' | 'id'> }): Promise<Message[]> {
    let q = this.#db.selectFrom('messages').selectAll().where('conversation_id', '=', conversationId);
    const b = opts.before;
    if (b) q = q.where((eb) => eb.or([eb('created_at', '<', b.createdAt), eb.and([eb('created_at', '=', b.createdAt), eb('id', '<', b.id)])]));
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
    return rows.map(toMessage);
  }

  /** How many messages the conversation has. */
  async countInConversation(conversationId: string): Promise<number> {
    const n = await this.#db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).where('conversation_id', '=', conversationId).executeTakeFirstOrThrow();
    return Number(n.n);
  }

  /** The query of the conversation's first message, or undefined. */
  async firstQuery(conversationId: string): Promise<string | undefined> {
    const row = await this.#db.selectFrom('messages').select('query').where('conversation_id', '=', conversationId).orderBy('created_at').orderBy('id').executeTakeFirst();
    return row?.query;
  }

  /** The message `id` when it belongs to the conversation. */
  async findInConversation(id: string, conversationId: string): Promise<Message | undefined> {
    const row = await this.#db.selectFrom('messages').selectAll().where('id', '=', id).where('conversation_id', '=', conversationId).executeTakeFirst();
    return row ? toMessage(row) : undefined;
  }

  /** The last `window` finished (`normal`) exchanges of a conversation, oldest first. */
  async recentExchanges(conversationId: string, window: number): Promise<{ query: string; answer: string }[]> {
    const rows = await this.#db
      .selectFrom('messages')
      .select(['query', 'answer'])
      .where('conversation_id', '=', conversationId)
      .where('status', '=', 'normal')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(window)
      .execute();
    return rows.reverse();
  }

  /** Ends a message that will get no answer (its run stopped or failed). */
  async end(id: string, status: 'stopped' | 'error', error: string, at: number): Promise<void> {
    await this.#db.updateTable('messages').set({ status, error, updated_at: at }).where('id', '=', id).execute();
  }

  /** The ids of the conversation's messages (in `tx`). */
  async idsInConversation(conversationId: string, tx: Transaction<Database>): Promise<string[]> {
    return (await tx.selectFrom('messages').select('id').where('conversation_id', '=', conversationId).execute()).map((r) => r.id);
  }

  /** Deletes the conversation's messages (in `tx`, after what refers to them). */
  async deleteByConversation(conversationId: string, tx: Transaction<Database>): Promise<void> {
    await tx.deleteFrom('messages').where('conversation_id', '=', conversationId).execute();
  }

  /**
   * Saves generations in progress (`MessageLeases`): each of `grown` gets its answer so far, every
   * message a heartbeat `at`; `running` rows only. One transaction, one UPDATE per slice of answers.
   */
  async saveLive(grown: readonly { id: string; answer: string }[], unchanged: readonly string[], at: number): Promise<void> {
    await this.#db.transaction().execute(async (tx) => {
      for (const slice of inBatches(grown, SAVES_PER_STATEMENT)) {
        const answer = sql<string>`case id ${sql.join(slice.map((g) => sql`when ${g.id} then ${g.answer}`), sql` `)} end`;
        await tx.updateTable('messages').set({ answer, heartbeat_at: at }).where('id', 'in', slice.map((g) => g.id)).where('status', '=', 'running').execute();
      }
      for (const ids of inBatches(unchanged)) await tx.updateTable('messages').set({ heartbeat_at: at }).where('id', 'in', ids).where('status', '=', 'running').execute();
    });
  }

  /** Up to `limit` running messages of `modes` without a heartbeat since `cutoff` (and not of a run). */
  async silentSince(cutoff: number, modes: readonly string[], limit: number): Promise<{ id: string; appId: string; heartbeatAt: number }[]> {
    const rows = await this.#db
      .selectFrom('messages')
      .select(['id', 'app_id', 'heartbeat_at'])
      .where('status', '=', 'running')
      .where('heartbeat_at', '<', cutoff)
      .where('workflow_run_id', 'is', null)
      .where('mode', 'in', [...modes])
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, appId: r.app_id, heartbeatAt: Number(r.heartbeat_at) }));
  }

  /** Ends a message whose process died as `error`, if it is still running and silent since `cutoff`; whether it did. */
  async endSilent(id: string, cutoff: number, error: string, at: number): Promise<boolean> {
    const res = await this.#db
      .updateTable('messages')
      .set({ status: 'error', error, updated_at: at })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where('heartbeat_at', '<', cutoff)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** The newest messages that belong to no run (completion and chat apps), of an app and status when given. */
  async newestWithoutRun(f: { appId?: string; status?: string; limit: number }): Promise<Message[]> {
    let q = this.#db.selectFrom('messages').selectAll().where('workflow_run_id', 'is', null).orderBy('created_at', 'desc').limit(f.limit);
    if (f.appId) q = q.where('app_id', '=', f.appId);
    if (f.status) q = q.where('status', '=', f.status);
    return (await q.execute()).map(toMessage);
  }

  /** Deletes an app's messages (`app delete --purge`, in its transaction; feedback and saved answers go first). */
  async purgeApp(appId: string): Promise<void> {
    await this.#db.deleteFrom('messages').where('app_id', '=', appId).execute();
  }
}
