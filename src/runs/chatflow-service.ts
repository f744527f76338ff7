import type { AgentThoughtStore } from '../messages/agent-thoughts.js';
import type { Kysely } from 'kysely';
import type { Database, ConversationTable, MessageTable } from '../store/schema.js';
import type { App } from '../apps/app-service.js';
import type { Clock } from '../infra/clock.js';
import { newId, isUuid } from '../infra/ids.js';
import { invalidParam } from '../infra/errors.js';
import { conversationNotExists, firstMessageNotExists, lastConversationNotExists } from './errors.js';
import type { RunService, StartedRun } from './run-service.js';
import type { MessageStore, NewConversation } from '../messages/message-store.js';
import { conversationName } from '../messages/conversation-name.js';
import type { AnnotationReplier, AnnotationReplyInfo } from '../messages/completion-service.js';
import type { UsageBody } from '../llm/usage.js';
import { annotationReplyInfo, storeAnnotationAnswer } from '../messages/annotation-answer.js';

export interface ChatflowMessage {
  readonly run: StartedRun;
  readonly messageId: string;
  readonly conversationId: string;
  readonly createdAt: number;
}

/** A chatflow message answered by an annotation: the graph does not run (as Dify). */
export interface AnnotationAnswer {
  readonly taskId: string;
  readonly messageId: string;
  readonly conversationId: string;
  readonly createdAt: number;
  readonly answer: string;
  readonly usage: UsageBody;
  readonly annotationReply: AnnotationReplyInfo;
}

export interface Page<T> {
  readonly limit: number;
  readonly has_more: boolean;
  readonly data: T[];
}

export const CONVERSATION_SORTS = ['created_at', '-created_at', 'updated_at', '-updated_at'] as const;
export type ConversationSort = (typeof CONVERSATION_SORTS)[number];

/**
 * Chatflow (advanced-chat) messages over the shared conversations / messages tables: starting a
 * message runs the graph; listing reads the tables.
 */
export class ChatflowService {
  readonly #db: Kysely<Database>;
  readonly #clock: Clock;
  readonly #runs: RunService;
  readonly #messages: MessageStore;

  readonly #annotations: AnnotationReplier | undefined;
  /** Agent-chat messages' agent thoughts (`agent_thoughts` of `GET /messages`). */
  readonly #thoughts: AgentThoughtStore | undefined;

  constructor(db: Kysely<Database>, clock: Clock, runs: RunService, messages: MessageStore, annotations?: AnnotationReplier, thoughts?: AgentThoughtStore) {
    this.#annotations = annotations;
    this.#thoughts = thoughts;
    this.#db = db;
    this.#messages = messages;
    this.#clock = clock;
    this.#runs = runs;
  }

  /** The caller's conversation, or 404 "Conversation Not Exists.". */
  async conversation(appId: string, endUserId: string, id: string): Promise<ConversationTable> {
    if (!isUuid(id)) throw invalidParam(`conversation_id must be a valid UUID, got "${id}"`);
    const row = await this.#db
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', id)
      .where('app_id', '=', appId)
      .where('end_user_id', '=', endUserId)
      .where('status', '=', 'normal')
      .executeTakeFirst();
    if (!row) throw conversationNotExists();
    return row;
  }

  /** Creates or continues a conversation and starts the chatflow run for one query. */
  async send(input: {
    app: App;
    endUserId: string;
    user: string;
    query: string;
    inputs: Record<string, unknown>;
    conversationId: string | undefined;
    files: readonly unknown[];
  }): Promise<ChatflowMessage> {
    const now = this.#clock.now();
    let conversationId: string;
    let inputs = input.inputs;
    let dialogueCount = 1;
    let newConversation: NewConversation | undefined;
    if (input.conversationId && input.conversationId.trim() !== '') {
      const conv = await this.conversation(input.app.id, input.endUserId, input.conversationId.trim());
      conversationId = conv.id;
      inputs = JSON.parse(conv.inputs) as Record<string, unknown>;
      const n = await this.#db
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('conversation_id', '=', conv.id)
        .executeTakeFirstOrThrow();
      dialogueCount = Number(n.n) + 1;
    } else {
      conversationId = newId();
      const name = conversationName(input.query);
      // Created together with its first message, in one transaction, just before the run starts.
      newConversation = { id: conversationId, appId: input.app.id, endUserId: input.endUserId, name, inputs };
    }
    const messageId = newId();
    const run = await this.#runs.start({
      app: input.app,
      endUserId: input.endUserId,
      user: input.user,
      inputs,
      files: input.files,
      query: input.query,
      conversationId,
      messageId,
      dialogueCount,
      beforeStart: ({ runId, taskId }, tx) =>
        this.#messages.insert({
          id: messageId,
          appId: input.app.id,
          conversationId,
          endUserId: input.endUserId,
          taskId,
          workflowRunId: runId,
          mode: 'advanced-chat',
          inputs,
          query: input.query,
          files: input.files,
          createdAt: now,
        }, newConversation, tx),
    });
    return { run, messageId, conversationId, createdAt: now };
  }

  /**
   * Annotation reply (Dify's advanced-chat runner checks it before the graph): when the app has
   * reply enabled and an annotation matches `query`, stores the message with the annotation's
   * answer and id, records the hit, and returns the answer; otherwise `undefined` (run the graph).
   */
  async answerFromAnnotation(input: { app: App; endUserId: string; query: string; inputs: Record<string, unknown>; conversationId: string | undefined; files: readonly unknown[] }): Promise<AnnotationAnswer | undefined> {
    if (!this.#annotations || !input.query) return undefined;
    let conversationId: string;
    let inputs = input.inputs;
    let newConversation: NewConversation | undefined;
    if (input.conversationId && input.conversationId.trim() !== '') {
      const conv = await this.conversation(input.app.id, input.endUserId, input.conversationId.trim());
      conversationId = conv.id;
      inputs = JSON.parse(conv.inputs) as Record<string, unknown>;
    } else {
      conversationId = newId();
      newConversation = { id: conversationId, appId: input.app.id, endUserId: input.endUserId, name: conversationName(input.query), inputs };
    }
    const hit = await this.#annotations.match(input.app.id, input.query);
    if (!hit) return undefined;
    const now = this.#clock.now();
    const messageId = newId();
    const taskId = newId();
    const usage = await storeAnnotationAnswer(
      { messages: this.#messages, annotations: this.#annotations, now: () => this.#clock.now() },
      { id: messageId, appId: input.app.id, conversationId, endUserId: input.endUserId, taskId, mode: 'advanced-chat', inputs, query: input.query, files: input.files, createdAt: now },
      newConversation,
      hit,
    );
    return { taskId, messageId, conversationId, createdAt: now, answer: hit.content, usage, annotationReply: annotationReplyInfo(hit) };
  }

  async message(id: string): Promise<MessageTable | undefined> {
    return this.#db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** A page of a conversation's messages, oldest first, before `firstId` (Dify's pagination). */
  async messages(appId: string, endUserId: string, conversationId: string, firstId: string | undefined, limit: number): Promise<Page<Record<string, unknown>>> {
    const conv = await this.conversation(appId, endUserId, conversationId);
    let q = this.#db.selectFrom('messages').selectAll().where('conversation_id', '=', conv.id);
    if (firstId) {
      const first = await this.#db.selectFrom('messages').select(['created_at', 'id']).where('id', '=', firstId).where('conversation_id', '=', conv.id).executeTakeFirst();
      if (!first) throw firstMessageNotExists();
      q = q.where((eb) => eb.or([eb('created_at', '<', first.created_at), eb.and([eb('created_at', '=', first.created_at), eb('id', '<', first.id)])]));
    }
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute();
    const has_more = rows.length > limit;
    const page = rows.slice(0, limit).reverse();
    const agentIds = page.filter((m) => m.mode === 'agent-chat').map((m) => m.id);
    const thoughts = this.#thoughts && agentIds.length > 0 ? await this.#thoughts.listFor(agentIds) : new Map<string, Record<string, unknown>[]>();
    const data = page.map((m) => ({
      id: m.id,
      conversation_id: m.conversation_id,
      parent_message_id: null,
      inputs: JSON.parse(m.inputs) as unknown,
      query: m.query,
      answer: m.answer,
      message_files: [],
      feedback: null,
      retriever_resources: [],
      agent_thoughts: thoughts.get(m.id) ?? [],
      created_at: Math.floor(Number(m.created_at) / 1000),
      status: m.status,
      error: m.error,
      extra_contents: [],
    }));
    return { limit, has_more, data };
  }

  /** A page of the caller's conversations after `lastId` in `sort` order. */
  async conversations(appId: string, endUserId: string, lastId: string | undefined, limit: number, sort: ConversationSort): Promise<Page<Record<string, unknown>>> {
    const field = sort.replace('-', '') as 'created_at' | 'updated_at';
    const desc = sort.startsWith('-');
    let q = this.#db.selectFrom('conversations').selectAll().where('app_id', '=', appId).where('end_user_id', '=', endUserId).where('status', '=', 'normal');
    if (lastId) {
      const last = await this.#db.selectFrom('conversations').selectAll().where('id', '=', lastId).where('app_id', '=', appId).where('end_user_id', '=', endUserId).executeTakeFirst();
      if (!last) throw lastConversationNotExists();
      const v = last[field];
      q = q.where((eb) =>
        eb.or([eb(field, desc ? '<' : '>', v), eb.and([eb(field, '=', v), eb('id', desc ? '<' : '>', last.id)])]),
      );
    }
    const rows = await q.orderBy(field, desc ? 'desc' : 'asc').orderBy('id', desc ? 'desc' : 'asc').limit(limit + 1).execute();
    return {
      limit,
      has_more: rows.length > limit,
      data: rows.slice(0, limit).map(conversationItem),
    };
  }

  /**
   * Renames the caller's conversation: to `name`, or with `autoGenerate` to the first line of its
   * first query (the rule new conversations are named by). Answers the list item.
   */
  async rename(appId: string, endUserId: string, id: string, opts: { name: string | undefined; autoGenerate: boolean }): Promise<Record<string, unknown>> {
    const conv = await this.conversation(appId, endUserId, id);
    let name = opts.name?.trim() ?? '';
    if (opts.autoGenerate) {
      const first = await this.#db.selectFrom('messages').select('query').where('conversation_id', '=', conv.id).orderBy('created_at').orderBy('id').executeTakeFirst();
      if (!first) throw invalidParam('auto_generate needs a conversation with at least one message');
      name = conversationName(first.query);
    } else if (name === '') {
      throw invalidParam('name is required when auto_generate is false');
    }
    const updatedAt = this.#clock.now();
    await this.#db.updateTable('conversations').set({ name, updated_at: updatedAt }).where('id', '=', conv.id).execute();
    return conversationItem({ ...conv, name, updated_at: updatedAt });
  }

  /** Deletes the caller's conversation with its messages and their feedback (as Dify). */
  async delete(appId: string, endUserId: string, id: string): Promise<void> {
    const conv = await this.conversation(appId, endUserId, id);
    await this.#db.transaction().execute(async (tx) => {
      await tx.deleteFrom('message_feedbacks').where('conversation_id', '=', conv.id).execute();
      await tx.deleteFrom('message_agent_thoughts').where('message_id', 'in', (eb) => eb.selectFrom('messages').select('id').where('conversation_id', '=', conv.id)).execute();
      await tx.deleteFrom('messages').where('conversation_id', '=', conv.id).execute();
      await tx.deleteFrom('conversation_variables').where('conversation_id', '=', conv.id).execute();
      await tx.deleteFrom('conversations').where('id', '=', conv.id).execute();
    });
  }
}

function conversationItem(c: ConversationTable): Record<string, unknown> {
  return {
    id: c.id,
    name: c.name,
    inputs: JSON.parse(c.inputs) as unknown,
    status: c.status,
    introduction: '',
    created_at: Math.floor(Number(c.created_at) / 1000),
    updated_at: Math.floor(Number(c.updated_at) / 1000),
  };
}
