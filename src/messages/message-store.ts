import type { Kysely, Transaction } from 'kysely';
import type { Database, MessageTable } from '../store/schema.js';

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

/** A conversation row created together with its first message. */
export interface NewConversation {
  readonly id: string;
  readonly appId: string;
  readonly endUserId: string;
  readonly name: string;
  readonly inputs: Record<string, unknown>;
}

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

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /**
   * Inserts a running message in one transaction with its new conversation, when given, or with
   * the `updated_at` of the conversation it continues.
   */
  /** Inserts the message (and its new conversation) in one transaction: `tx` when given, else its own. */
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
    };
    const write = async (tx: Transaction<Database>) => {
      if (!conversation) {
        await tx.insertInto('messages').values(row).execute();
        // A new message makes its conversation the most recently updated (as Dify).
        if (m.conversationId) await tx.updateTable('conversations').set({ updated_at: m.createdAt }).where('id', '=', m.conversationId).execute();
        return;
      }
      await tx
        .insertInto('conversations')
        .values({
          id: conversation.id,
          app_id: conversation.appId,
          end_user_id: conversation.endUserId,
          name: conversation.name,
          inputs: JSON.stringify(conversation.inputs),
          status: 'normal',
          created_at: m.createdAt,
          updated_at: m.createdAt,
        })
        .execute();
      await tx.insertInto('messages').values(row).execute();
    };
    if (tx) await write(tx);
    else await this.#db.transaction().execute(write);
  }

  /** Writes the final answer, usage and status. */
  async finish(id: string, r: MessageResult): Promise<void> {
    await this.#db
      .updateTable('messages')
      .set({
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
      })
      .where('id', '=', id)
      .execute();
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

  /** Ends a message with a status and error, its answer and usage left as they are (a run stopped or failed outside its loop). */
  async setStatus(id: string, status: MessageStatus, error: string | null, updatedAt: number): Promise<void> {
    await this.#db.updateTable('messages').set({ status, error, updated_at: updatedAt }).where('id', '=', id).execute();
  }

  /** Makes a conversation the most recently updated (a chatflow turn ended in it). */
  async touchConversation(conversationId: string, updatedAt: number): Promise<void> {
    await this.#db.updateTable('conversations').set({ updated_at: updatedAt }).where('id', '=', conversationId).execute();
  }
}
